-- 0007_images.sql - container registries and image metadata (docs/images.md).

-- Registries aidc reads image metadata from. The secret stays on the aidcd
-- host (credentials_ref); the row holds where it is, how repositories map to
-- tenants (options) and how the last sync went.
CREATE TABLE registries (
    id                uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    name              text NOT NULL UNIQUE CHECK (name ~ '^[a-z][a-z0-9-]{1,62}$'),
    url               text NOT NULL CHECK (url ~ '^https?://[^/?#@\s]+$'),
    -- host[:port] of url: how a job's image reference names this registry
    host              text NOT NULL,
    credentials_ref   text NOT NULL DEFAULT '',
    options           jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    -- a sync asked for (POST .../sync); the worker clears it when it starts
    sync_requested_at timestamptz,
    -- a running sync: its owner (a claim's token), start and heartbeat (a stale
    -- one is taken over; the old owner's writes then find no row and stop)
    sync_owner        uuid,
    sync_started_at   timestamptz,
    sync_heartbeat    timestamptz,
    sync_progress     jsonb,
    last_sync_at      timestamptz,
    last_sync_ok      boolean,
    last_sync         jsonb
);
-- one host may be registered twice (one Harbor, a robot account per team, each
-- with its own prefixes): a job's reference that matches both is ambiguous only
-- when they hold different images under it
CREATE INDEX registries_host ON registries (host);
-- everyone may know registries' names and hosts (a job names its image by
-- host); changing them is for platform admins and the sync worker
ALTER TABLE registries ENABLE ROW LEVEL SECURITY;
CREATE POLICY registries_read ON registries FOR SELECT USING (true);
CREATE POLICY registries_insert ON registries FOR INSERT WITH CHECK (aidc_ctx_platform_admin());
CREATE POLICY registries_update ON registries FOR UPDATE USING (aidc_ctx_platform_admin());

CREATE TABLE images (
    id                  uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- NULL: a public (platform) image every tenant may use
    tenant_id           uuid REFERENCES tenants (id),
    visibility          text NOT NULL CHECK (visibility IN ('public', 'tenant')),
    registry_id         uuid REFERENCES registries (id),
    repository          text NOT NULL CHECK (char_length(repository) <= 255 AND repository ~
                            '^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$'),
    tag                 text NOT NULL CHECK (tag ~ '^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$'),
    digest              text NOT NULL CHECK (digest ~ '^sha256:[0-9a-f]{64}$'),
    size_bytes          bigint NOT NULL CHECK (size_bytes >= 0),
    labels              jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(labels) = 'object'),
    immutable           boolean NOT NULL DEFAULT false,
    -- registered through the API, or found by a registry sync
    source              text NOT NULL CHECK (source IN ('api', 'sync')),
    media_type          text,
    created_by          uuid REFERENCES users (id),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    -- the last sync did not find the tag upstream any more (kept, flagged)
    upstream_deleted_at timestamptz,
    deleted_at          timestamptz,
    CHECK ((visibility = 'public') = (tenant_id IS NULL))
);
-- one live image per reference; for images of no registry, per tenant
CREATE UNIQUE INDEX images_ref_key ON images (registry_id, tenant_id, repository, tag)
    NULLS NOT DISTINCT WHERE deleted_at IS NULL;
-- the lists' order (repository:tag, id)
CREATE INDEX images_list ON images ((repository || ':' || tag), id) WHERE deleted_at IS NULL;
CREATE INDEX images_tenant ON images (tenant_id) WHERE deleted_at IS NULL;
CREATE INDEX images_registry ON images (registry_id, repository) WHERE deleted_at IS NULL;
CREATE INDEX images_labels ON images USING gin (labels jsonb_path_ops) WHERE deleted_at IS NULL;

ALTER TABLE images ENABLE ROW LEVEL SECURITY;
CREATE POLICY images_read ON images FOR SELECT
    USING (tenant_id IS NULL OR aidc_can_read(tenant_id));
-- registrations name their registrant; only the sync worker writes synced images
CREATE POLICY images_insert ON images FOR INSERT
    WITH CHECK (CASE WHEN tenant_id IS NULL THEN aidc_ctx_platform_admin()
                     ELSE aidc_can_submit(tenant_id) END
                AND CASE WHEN source = 'sync' THEN aidc_ctx_role('system')
                         ELSE created_by = aidc_ctx_user() END);
-- tenant admins change any image of theirs, members the ones they registered
CREATE POLICY images_update ON images FOR UPDATE
    USING (CASE WHEN tenant_id IS NULL THEN aidc_ctx_platform_admin()
                ELSE aidc_can_admin(tenant_id)
                     OR (aidc_can_submit(tenant_id) AND created_by = aidc_ctx_user()) END);

-- The second wall behind the API's 409: an immutable image keeps its
-- reference and digest, stays immutable and is never deleted.
CREATE FUNCTION aidc_images_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.immutable AND (NEW.repository <> OLD.repository OR NEW.tag <> OLD.tag
                          OR NEW.digest <> OLD.digest OR NOT NEW.immutable
                          OR (NEW.deleted_at IS NOT NULL AND OLD.deleted_at IS NULL)) THEN
        RAISE EXCEPTION 'image % is immutable', OLD.id USING ERRCODE = 'insufficient_privilege';
    END IF;
    NEW.updated_at := now();
    RETURN NEW;
END $$;
CREATE TRIGGER images_guard BEFORE UPDATE ON images
    FOR EACH ROW EXECUTE FUNCTION aidc_images_guard();

-- What a job ran: the image it named, resolved to one digest at submission.
-- image_ref is what the backend is given: the reference pinned to that digest.
ALTER TABLE jobs ADD COLUMN image_id uuid REFERENCES images (id),
                 ADD COLUMN image_digest text CHECK (image_digest ~ '^sha256:[0-9a-f]{64}$'),
                 ADD COLUMN image_ref text,
                 -- by tag, for runtimes that cannot pull by digest (enroot)
                 ADD COLUMN image_tagged text;

-- A sync that finds a tenant's images over its storage quota flags the tenant.
ALTER TABLE tenants ADD COLUMN storage_over_quota_at timestamptz;

-- ---- privileges --------------------------------------------------------------------

ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_0006;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_0006(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON registries, images TO %s', app);
    EXECUTE format('REVOKE DELETE, TRUNCATE ON registries, images FROM %s', app);
END $$;
