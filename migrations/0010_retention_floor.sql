-- 0010_retention_floor.sql - the application role can no longer shorten audit
-- retention (docs/security.md, open finding of issue 11).
--
-- aidc_audit_retention(days) runs as the owner, and the application role calls
-- it (the sealer, daily): a compromised application role could call it with 180
-- and drop months that the configured retention (400 days by default) keeps.
-- The owner now records the shortest retention it allows - `aidcd migrate`
-- writes AIDC_AUDIT_RETENTION_DAYS there at every run - and retention keeps at
-- least that, whatever its caller asks. Lowering it is the owner's decision:
-- a migrate with the new value.

CREATE TABLE aidc_audit_policy (
    one boolean PRIMARY KEY DEFAULT true CHECK (one),
    retention_floor_days int NOT NULL CHECK (retention_floor_days >= 180)
);
INSERT INTO aidc_audit_policy (retention_floor_days) VALUES (180);
REVOKE ALL ON aidc_audit_policy FROM PUBLIC;

-- The dropping itself, as 0004 wrote it, now runs with its caller's privileges:
-- only the owner (through the function below) can drop a partition with it.
ALTER FUNCTION aidc_audit_retention(int) RENAME TO aidc_audit_retention_drop;
ALTER FUNCTION aidc_audit_retention_drop(int) SECURITY INVOKER;
REVOKE ALL ON FUNCTION aidc_audit_retention_drop(int) FROM PUBLIC;

-- What the sealer calls: at least the owner's floor. Returns the number of
-- monthly partitions dropped (the audit.retention events name the days used).
CREATE FUNCTION aidc_audit_retention(days int) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    floor_days int;
BEGIN
    IF days < 180 THEN
        RAISE EXCEPTION 'audit retention below 180 days is not allowed' USING ERRCODE = 'check_violation';
    END IF;
    SELECT retention_floor_days INTO floor_days FROM aidc_audit_policy;
    RETURN aidc_audit_retention_drop(greatest(days, coalesce(floor_days, 180)));
END $$;
REVOKE ALL ON FUNCTION aidc_audit_retention(int) FROM PUBLIC;

-- aidc_grant_app is wrapped, as in 0009: the application role keeps EXECUTE on
-- the new aidc_audit_retention (a definer function, granted by 0004's loop),
-- loses the one it had on the renamed drop, and has no privilege on the floor
-- (not even one the owner's default privileges gave it).
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0010;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0010(app);
    EXECUTE format('REVOKE ALL ON FUNCTION aidc_audit_retention_drop(int) FROM %s', app);
    EXECUTE format('REVOKE ALL ON aidc_audit_policy FROM %s', app);
END $$;
