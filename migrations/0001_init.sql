-- 0001_init.sql - identity, tenancy, idempotency and the audit write path.
--
-- Runs as the owner role. The application role gets its privileges from
-- aidc_grant_app() (called by `aidcd migrate` after every run); it owns no
-- table and has no BYPASSRLS, so the row-level security below applies to it.
--
-- Row-level-security context, set per transaction by the server
-- (set_config(..., true)):
--   aidc.user_id         acting user
--   aidc.roles           global roles, comma-separated (or 'system' for workers)
--   aidc.all             'admin' (platform_admin, system: read and change every
--                        tenant), 'read' (finance, auditor: read every tenant) or ''
--                        - derived from aidc.roles by the server, so policies test
--                        one setting instead of parsing a list per row
--   aidc.read_tenants    tenant ids the actor may read
--   aidc.admin_tenants   tenant ids the actor administers (tenant_admin)
--   aidc.member_tenants  tenant ids the actor may submit work to

-- ---- context helpers ---------------------------------------------------------

CREATE FUNCTION aidc_ctx_uuids(setting text) RETURNS uuid[]
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN coalesce(current_setting(setting, true), '') = '' THEN '{}'::uuid[]
                ELSE string_to_array(current_setting(setting, true), ',')::uuid[] END
$$;

CREATE FUNCTION aidc_ctx_user() RETURNS uuid
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT nullif(current_setting('aidc.user_id', true), '')::uuid
$$;

CREATE FUNCTION aidc_ctx_role(r text) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT r = ANY (string_to_array(coalesce(current_setting('aidc.roles', true), ''), ','))
$$;

-- platform_admin and background workers may change anything
CREATE FUNCTION aidc_ctx_platform_admin() RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT current_setting('aidc.all', true) = 'admin'
$$;

-- platform_admin, finance and auditor read every tenant
CREATE FUNCTION aidc_can_read(t uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT current_setting('aidc.all', true) IN ('admin', 'read')
        OR t = ANY (aidc_ctx_uuids('aidc.read_tenants'))
$$;

CREATE FUNCTION aidc_can_admin(t uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT aidc_ctx_platform_admin() OR t = ANY (aidc_ctx_uuids('aidc.admin_tenants'))
$$;

CREATE FUNCTION aidc_can_submit(t uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT aidc_ctx_platform_admin() OR t = ANY (aidc_ctx_uuids('aidc.member_tenants'))
$$;

-- ---- users and global roles (platform-wide, not tenant-owned) --------------

CREATE TABLE users (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    username             text NOT NULL UNIQUE CHECK (username ~ '^[a-z][a-z0-9._-]{0,62}$'),
    display_name         text NOT NULL DEFAULT '' CHECK (char_length(display_name) <= 200),
    email                text NOT NULL DEFAULT '' CHECK (char_length(email) <= 254),
    password_hash        text,
    disabled             boolean NOT NULL DEFAULT false,
    -- session generation: every JWT carries the value current at login, and
    -- a password change or disabling bumps it, voiding existing sessions at once
    session_epoch        integer NOT NULL DEFAULT 0,
    -- bumped (by triggers) whenever anything that decides what this user may
    -- do changes: the server caches actors and checks this on every request
    auth_version         bigint NOT NULL DEFAULT 0,
    created_at           timestamptz NOT NULL DEFAULT now(),
    updated_at           timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE user_roles (
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('platform_admin', 'finance', 'auditor')),
    granted_at timestamptz NOT NULL DEFAULT now(),
    granted_by uuid REFERENCES users (id) ON DELETE SET NULL,
    PRIMARY KEY (user_id, role)
);

-- ---- tenants, memberships, projects (tenant-owned: row-level security) ------

CREATE TABLE tenants (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    slug       text NOT NULL UNIQUE CHECK (slug ~ '^[a-z][a-z0-9-]{1,62}$'),
    name       text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    suspended  boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenants_read ON tenants FOR SELECT USING (aidc_can_read(id));
CREATE POLICY tenants_insert ON tenants FOR INSERT WITH CHECK (aidc_ctx_platform_admin());
CREATE POLICY tenants_update ON tenants FOR UPDATE USING (aidc_ctx_platform_admin());
CREATE POLICY tenants_delete ON tenants FOR DELETE USING (aidc_ctx_platform_admin());

CREATE TABLE memberships (
    tenant_id  uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role       text NOT NULL CHECK (role IN ('tenant_admin', 'member', 'viewer')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, user_id)
);
CREATE INDEX memberships_user_idx ON memberships (user_id);
ALTER TABLE memberships ENABLE ROW LEVEL SECURITY;
CREATE POLICY memberships_read ON memberships FOR SELECT
    USING (aidc_can_read(tenant_id) OR user_id = aidc_ctx_user());
CREATE POLICY memberships_insert ON memberships FOR INSERT WITH CHECK (aidc_can_admin(tenant_id));
CREATE POLICY memberships_update ON memberships FOR UPDATE USING (aidc_can_admin(tenant_id));
CREATE POLICY memberships_delete ON memberships FOR DELETE USING (aidc_can_admin(tenant_id));

CREATE TABLE projects (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id   uuid NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
    slug        text NOT NULL CHECK (slug ~ '^[a-z][a-z0-9-]{1,62}$'),
    name        text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    description text NOT NULL DEFAULT '' CHECK (char_length(description) <= 4000),
    created_by  uuid REFERENCES users (id) ON DELETE SET NULL,
    -- user names never change: kept here, reads need no join
    created_by_name text,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now(),
    -- deleted projects stay for the jobs, usage and invoices that name them
    deleted_at  timestamptz
);
CREATE UNIQUE INDEX projects_tenant_slug_key ON projects (tenant_id, slug) WHERE deleted_at IS NULL;
ALTER TABLE projects ENABLE ROW LEVEL SECURITY;
CREATE POLICY projects_read ON projects FOR SELECT USING (aidc_can_read(tenant_id));
CREATE POLICY projects_insert ON projects FOR INSERT WITH CHECK (aidc_can_admin(tenant_id));
CREATE POLICY projects_update ON projects FOR UPDATE USING (aidc_can_admin(tenant_id));
CREATE POLICY projects_delete ON projects FOR DELETE USING (aidc_can_admin(tenant_id));

-- Memberships of a user with their tenants, for authentication. SECURITY
-- DEFINER: it runs before any tenant context exists. It reveals nothing but
-- the memberships of the one user asked about.
CREATE FUNCTION aidc_user_memberships(uid uuid) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT coalesce(json_agg(json_build_object('tenant_id', t.id, 'tenant', t.slug,
                                               'role', m.role, 'suspended', t.suspended)
                             ORDER BY t.slug), '[]'::json)
      FROM memberships m JOIN tenants t ON t.id = m.tenant_id
     WHERE m.user_id = uid
$$;
REVOKE ALL ON FUNCTION aidc_user_memberships(uuid) FROM PUBLIC;

-- ---- credentials -----------------------------------------------------------

CREATE TABLE api_tokens (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    tenant_id    uuid REFERENCES tenants (id) ON DELETE CASCADE, -- optional: bound to one tenant
    -- the token that created this one: a child never outlives its parent and
    -- is revoked with it
    parent_id    uuid REFERENCES api_tokens (id) ON DELETE CASCADE,
    name         text NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    token_hash   text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
    scopes       text[] NOT NULL,
    expires_at   timestamptz NOT NULL,
    last_used_at timestamptz,
    created_at   timestamptz NOT NULL DEFAULT now(),
    revoked_at   timestamptz
);
CREATE INDEX api_tokens_user_idx ON api_tokens (user_id, created_at, id);

CREATE TABLE revoked_sessions (
    jti        uuid PRIMARY KEY,
    expires_at timestamptz NOT NULL -- the row can go once the token would have expired
);

-- Failed-login counters, in the database so every replica sees them.
CREATE TABLE login_failures (
    key          text PRIMARY KEY, -- 'user:<name>' or 'ip:<address>'
    window_start timestamptz NOT NULL,
    failures     integer NOT NULL
);

-- ---- idempotency ---------------------------------------------------------------

CREATE TABLE idempotency_keys (
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    key          text NOT NULL CHECK (char_length(key) BETWEEN 1 AND 255),
    request_hash text NOT NULL,
    status       integer NOT NULL,
    response     text NOT NULL,
    location     text,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    PRIMARY KEY (user_id, key)
);
ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY idempotency_own ON idempotency_keys
    USING (user_id = aidc_ctx_user() OR aidc_ctx_role('system'))
    WITH CHECK (user_id = aidc_ctx_user());

-- ---- audit (write path; hash chain, query and export come later) ------------

CREATE TABLE audit_events (
    id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ts             timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor_user_id  uuid,
    actor_username text,
    actor_token_id uuid,
    actor_roles    text[] NOT NULL DEFAULT '{}',
    tenant_id      uuid,
    tenant_slug    text,
    source_ip      inet,
    user_agent     text,
    request_id     text,
    action         text NOT NULL,
    resource_type  text,
    resource_id    text,
    outcome        text NOT NULL CHECK (outcome IN ('success', 'denied', 'error')),
    status         integer,
    details        jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_ts_idx ON audit_events (ts);
CREATE INDEX audit_events_tenant_idx ON audit_events (tenant_id, id);
ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_insert ON audit_events FOR INSERT WITH CHECK (true);
CREATE POLICY audit_read ON audit_events FOR SELECT
    USING (aidc_ctx_role('platform_admin') OR aidc_ctx_role('auditor') OR aidc_ctx_role('system'));

-- Append-only: no role but the owner (who runs retention) may change a row.
CREATE FUNCTION aidc_audit_immutable() RETURNS trigger
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    -- owner by OID, with a fixed search_path: a temporary object named like a
    -- catalog view cannot answer in its place
    IF current_user::regrole <> (SELECT relowner::regrole FROM pg_catalog.pg_class
                                  WHERE oid = TG_RELID) THEN
        RAISE EXCEPTION 'audit events are append-only' USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN CASE WHEN TG_OP = 'DELETE' THEN OLD ELSE NEW END;
END $$;
CREATE TRIGGER audit_events_immutable BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION aidc_audit_immutable();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_audit_immutable();

-- ---- auth_version: one number that changes when a user's rights change -------

CREATE FUNCTION aidc_bump_user() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'users' THEN
        NEW.auth_version := OLD.auth_version + 1;
        RETURN NEW;
    END IF;
    UPDATE users SET auth_version = auth_version + 1
     WHERE id IN (CASE WHEN TG_OP = 'DELETE' THEN OLD.user_id ELSE NEW.user_id END,
                  CASE WHEN TG_OP = 'UPDATE' THEN OLD.user_id END);
    RETURN NULL;
END $$;
CREATE TRIGGER users_auth_version BEFORE UPDATE OF disabled, session_epoch ON users
    FOR EACH ROW EXECUTE FUNCTION aidc_bump_user();
CREATE TRIGGER user_roles_auth_version AFTER INSERT OR UPDATE OR DELETE ON user_roles
    FOR EACH ROW EXECUTE FUNCTION aidc_bump_user();
CREATE TRIGGER memberships_auth_version AFTER INSERT OR UPDATE OR DELETE ON memberships
    FOR EACH ROW EXECUTE FUNCTION aidc_bump_user();

-- A tenant's suspension changes what each of its members may do.
CREATE FUNCTION aidc_bump_tenant_members() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NEW.suspended IS DISTINCT FROM OLD.suspended THEN
        UPDATE users SET auth_version = auth_version + 1
         WHERE id IN (SELECT user_id FROM memberships WHERE tenant_id = NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER tenants_auth_version AFTER UPDATE OF suspended ON tenants
    FOR EACH ROW EXECUTE FUNCTION aidc_bump_tenant_members();

-- One number for the whole platform that changes, in the changing transaction,
-- whenever anyone's rights or credentials may have changed. A request whose
-- remembered actor was loaded at the current value needs no further check
-- (one read of a one-row table); after a change, requests fall back to the
-- per-user checks once and remember the new value.
CREATE TABLE aidc_auth_epoch (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    v  bigint NOT NULL
);
INSERT INTO aidc_auth_epoch VALUES (true, 0);

CREATE FUNCTION aidc_bump_auth_epoch() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    UPDATE aidc_auth_epoch SET v = v + 1;
    RETURN NULL;
END $$;
CREATE TRIGGER users_auth_epoch AFTER UPDATE OF disabled, session_epoch ON users
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
CREATE TRIGGER user_roles_auth_epoch AFTER INSERT OR UPDATE OR DELETE ON user_roles
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
CREATE TRIGGER memberships_auth_epoch AFTER INSERT OR UPDATE OR DELETE ON memberships
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
CREATE TRIGGER tenants_auth_epoch AFTER UPDATE OF suspended ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
CREATE TRIGGER revoked_sessions_auth_epoch AFTER INSERT ON revoked_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
CREATE TRIGGER api_tokens_auth_epoch AFTER UPDATE OF revoked_at, expires_at OR DELETE ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();

-- ---- privileges of the application role ---------------------------------------

-- Called by `aidcd migrate` with the application role after every run; later
-- migrations replace it when they add tables.
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA public TO %s', app);
    EXECUTE format('REVOKE ALL ON aidc_schema_migrations FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_schema_migrations TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON users, user_roles, tenants, memberships,'
                   ' projects, api_tokens, revoked_sessions, login_failures, idempotency_keys TO %s', app);
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON audit_events FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON audit_events TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_user_memberships(uuid) TO %s', app);
    EXECUTE format('REVOKE ALL ON aidc_auth_epoch FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_auth_epoch TO %s', app);
END $$;
