-- 0020_identity_providers.sql - campus identity: OpenID Connect and LDAP
-- providers people sign in with, instead of passwords aidc keeps
-- (docs/identity.md).
--
-- * identity_providers: what a platform admin configured - kind-specific
--   settings (no secret: references to them), the rules that map claims or
--   groups to tenant roles, and for OIDC the provider's discovery document
--   and keys as last fetched (shared by every replica of aidcd);
-- * user_identities: which aidc user a provider's subject is. A user is keyed
--   on the provider's stable subject ("sub", the LDAP entry's DN), never on a
--   name or an e-mail a provider lets people change;
-- * memberships.provider: a role a provider's rules granted, re-evaluated at
--   every sign-in through it (leaving the group ends the role); NULL = given
--   by an admin, which rules never touch;
-- * oidc_logins: a sign-in on its way through the provider - state (as its
--   SHA-256), nonce, PKCE verifier; single use, minutes long.

CREATE TABLE identity_providers (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z][a-z0-9-]{1,31}$'),
    kind            text NOT NULL CHECK (kind IN ('oidc', 'ldap')),
    display_name    text NOT NULL CHECK (char_length(display_name) BETWEEN 1 AND 100),
    enabled         boolean NOT NULL DEFAULT true,
    settings        jsonb NOT NULL CHECK (jsonb_typeof(settings) = 'object'),
    role_rules      jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(role_rules) = 'array'),
    discovery       jsonb,
    jwks            jsonb,
    discovered_at   timestamptz,
    jwks_fetched_at timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE user_identities (
    provider      text NOT NULL REFERENCES identity_providers (name) ON DELETE CASCADE
                  ON UPDATE CASCADE,
    subject       text NOT NULL CHECK (char_length(subject) BETWEEN 1 AND 1024),
    user_id       uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    last_login_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (provider, subject)
);
CREATE INDEX user_identities_user ON user_identities (user_id);

-- a deleted provider's roles stay, as an admin's: removing a login method
-- must not silently take people's access away
ALTER TABLE memberships ADD COLUMN provider text
    REFERENCES identity_providers (name) ON DELETE SET NULL ON UPDATE CASCADE;

CREATE TABLE oidc_logins (
    state_hash bytea PRIMARY KEY CHECK (length(state_hash) = 32),
    provider   text NOT NULL REFERENCES identity_providers (name) ON DELETE CASCADE,
    nonce      text NOT NULL CHECK (char_length(nonce) <= 128),
    verifier   text NOT NULL CHECK (char_length(verifier) BETWEEN 43 AND 128),
    return_to  text NOT NULL CHECK (char_length(return_to) <= 2048),
    -- who started it: anyone may, so each address has a ceiling of sign-ins on their way
    source_ip  text NOT NULL CHECK (char_length(source_ip) <= 64),
    expires_at timestamptz NOT NULL
);
CREATE INDEX oidc_logins_expiry ON oidc_logins (expires_at);
CREATE INDEX oidc_logins_address ON oidc_logins (source_ip, expires_at);

-- users made at their first sign-in through a provider; the provider that
-- made them (local passwords may be switched off for such users)
ALTER TABLE users ADD COLUMN created_by_provider text;

-- A sign-in through provider p by subject s: the user (made at the first
-- sign-in: a free user name from name_hint, never an existing user's), its
-- profile refreshed, and its roles from p's rules set to grants - a JSON array
-- of {"tenant": slug, "role": role}; tenants that do not exist (or were
-- deleted) are skipped. Roles an admin gave are left alone; a role p gave
-- that grants no longer names is removed. Runs before any request context
-- exists (the sign-in has no user yet), hence a narrow SECURITY DEFINER door.
CREATE FUNCTION aidc_external_login(p text, s text, name_hint text, mail text, full_name text,
                                    grants jsonb)
RETURNS TABLE (user_id uuid, username text, session_epoch integer, disabled boolean,
               created boolean)
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    uid uuid;
    uname text;
    made boolean := false;
    base text := left(name_hint, 56);
    n integer := 1;
BEGIN
    SELECT i.user_id INTO uid FROM user_identities i WHERE i.provider = p AND i.subject = s
       FOR UPDATE;
    IF uid IS NULL THEN
        uname := base;
        WHILE EXISTS (SELECT 1 FROM users u WHERE u.username = uname) LOOP
            n := n + 1;
            IF n > 99 THEN
                RAISE EXCEPTION 'no free user name for %', name_hint USING ERRCODE = '23505';
            END IF;
            uname := base || '-' || n;
        END LOOP;
        INSERT INTO users (username, display_name, email, created_by_provider)
             VALUES (uname, left(coalesce(full_name, ''), 200), left(coalesce(mail, ''), 254), p)
          RETURNING id INTO uid;
        INSERT INTO user_identities (provider, subject, user_id) VALUES (p, s, uid);
        made := true;
    ELSE
        UPDATE user_identities SET last_login_at = now()
         WHERE provider = p AND subject = s;
        UPDATE users u SET display_name = left(full_name, 200), updated_at = now()
         WHERE u.id = uid AND full_name IS NOT NULL AND full_name <> ''
           AND u.display_name IS DISTINCT FROM left(full_name, 200);
        UPDATE users u SET email = left(mail, 254), updated_at = now()
         WHERE u.id = uid AND mail IS NOT NULL AND mail <> ''
           AND u.email IS DISTINCT FROM left(mail, 254);
    END IF;

    DELETE FROM memberships m
     WHERE m.user_id = uid AND m.provider = p
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(grants) g
                         JOIN tenants t ON t.slug = g->>'tenant' AND t.deleted_at IS NULL
                        WHERE t.id = m.tenant_id AND g->>'role' = m.role);
    INSERT INTO memberships AS m (tenant_id, user_id, role, provider)
    SELECT t.id, uid, g->>'role', p
      FROM jsonb_array_elements(grants) g
      JOIN tenants t ON t.slug = g->>'tenant' AND t.deleted_at IS NULL
     WHERE g->>'role' IN ('tenant_admin', 'member', 'viewer')
    ON CONFLICT ON CONSTRAINT memberships_pkey DO UPDATE SET role = excluded.role, updated_at = now()
     WHERE m.provider = p AND m.role <> excluded.role;

    RETURN QUERY SELECT u.id, u.username, u.session_epoch, u.disabled, made
                   FROM users u WHERE u.id = uid;
END $$;

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0020;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0020(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON identity_providers TO %s', app);
    EXECUTE format('GRANT SELECT, DELETE ON user_identities TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, DELETE ON oidc_logins TO %s', app);
END $$;
