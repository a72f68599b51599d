-- 0012_sessions.sql - a user's own login sessions, listed and ended one by one
-- (docs/security.md, open finding of issue 11: "no way to end one stolen
-- session alone"; a password change ended them all).
--
-- A row per login, written when the session is minted. Whether a session is
-- valid is still decided as before (signature, expiry, revoked_sessions, the
-- user's session_epoch): the row only lets its owner see where and when each
-- live session began, and name the one to end. Sessions minted before this
-- migration are valid and unlisted until they expire. Rows go with their user
-- and, past expires_at, with the janitor.

CREATE TABLE sessions (
    jti        uuid PRIMARY KEY,
    user_id    uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    epoch      integer NOT NULL, -- users.session_epoch at login: a change ends it
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    source_ip  inet,
    user_agent text CHECK (length(user_agent) <= 512)
);
CREATE INDEX sessions_user_idx ON sessions (user_id, created_at, jti);
CREATE INDEX sessions_expiry_idx ON sessions (expires_at);

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0012;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0012(app);
    -- no UPDATE: a session's origin is written once (revoked first: default
    -- privileges of older installations may have granted more)
    EXECUTE format('REVOKE ALL ON sessions FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT, DELETE ON sessions TO %s', app);
END $$;
