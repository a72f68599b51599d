-- 0009_hardening.sql - the privileges the documentation promises (issue 11,
-- "Hardening": a rogue database administrator's neighbours, a compromised
-- application role).
--
-- 1. The SECURITY DEFINER functions of 0004 kept PostgreSQL's default, EXECUTE
--    for PUBLIC, where every other migration revoked it: any role able to
--    connect could run them as the owner (seal, drop partitions by retention,
--    search the audit log after setting aidc.roles itself). They are the
--    application role's alone (aidc_grant_app grants it every definer
--    function); from now on aidc_grant_app also revokes PUBLIC from any
--    definer function a later migration forgets.
-- 2. The monthly partitions of audit_events and audit_chain are reached through
--    their parents only. A partition has privileges and row-level security of
--    its own, and its parent's do not apply to a statement that names it: a
--    partition created under default privileges (as deploy/pg-up.sh granted
--    them until now) let the application role insert an event with any ts
--    straight into it, below the chain's frontier, and read it without the
--    parent's policy. Statements on the parent are checked on the parent
--    alone, so nothing of aidcd's changes.
--
-- aidc_grant_app is wrapped (the one before keeps a name of its own), as in 0008.

-- ---- definer functions ------------------------------------------------------------

REVOKE ALL ON FUNCTION aidc_audit_partitions(timestamptz, int) FROM PUBLIC;
REVOKE ALL ON FUNCTION aidc_audit_seal(bigint, bigint[], timestamptz[], bytea[]) FROM PUBLIC;
REVOKE ALL ON FUNCTION aidc_audit_head() FROM PUBLIC;
REVOKE ALL ON FUNCTION aidc_audit_ingest(jsonb, uuid, text, uuid, text[], inet, text, text)
    FROM PUBLIC;
REVOKE ALL ON FUNCTION aidc_audit_search(text, text, text, text, text, inet, timestamptz,
                                         timestamptz, text, text, text, timestamptz, bigint,
                                         int, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION aidc_audit_retention(int) FROM PUBLIC;

-- ---- audit partitions --------------------------------------------------------------

-- Take every privilege on a partition of audit_events or audit_chain from every
-- role but its owner (PUBLIC included). Only what is there is revoked, so a
-- call that finds nothing changes no catalog row (and invalidates no plan).
-- Returns how many grants it took back.
CREATE FUNCTION aidc_audit_partitions_lock() RETURNS int
LANGUAGE plpgsql SET search_path = public, pg_temp AS $$
DECLARE
    g record;
    n int := 0;
BEGIN
    FOR g IN SELECT DISTINCT c.oid::regclass AS part, a.grantee
               FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid,
                    aclexplode(c.relacl) a
              WHERE i.inhparent IN ('audit_events'::regclass, 'audit_chain'::regclass)
                AND a.grantee <> c.relowner
    LOOP
        EXECUTE format('REVOKE ALL ON %s FROM %s', g.part,
                       CASE WHEN g.grantee = 0 THEN 'PUBLIC' ELSE g.grantee::regrole::text END);
        n := n + 1;
    END LOOP;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION aidc_audit_partitions_lock() FROM PUBLIC;

SELECT aidc_audit_partitions_lock();

-- As in 0004, and the partitions it makes (under whatever default privileges the
-- owner has) locked at once: the sealer calls it as the application role.
CREATE OR REPLACE FUNCTION aidc_audit_partitions(first timestamptz, months int) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET TimeZone = 'UTC' AS $$
DECLARE
    m timestamptz := date_trunc('month', first);
    last timestamptz := date_trunc('month', now()) + make_interval(months => months);
    t text;
    made int := 0;
BEGIN
    WHILE m <= last LOOP
        FOREACH t IN ARRAY ARRAY['audit_events', 'audit_chain'] LOOP
            IF to_regclass(t || '_' || to_char(m, 'YYYYMM')) IS NULL THEN
                EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%L) TO (%L)',
                               t || '_' || to_char(m, 'YYYYMM'), t, m, m + interval '1 month');
                made := made + 1;
            END IF;
        END LOOP;
        m := m + interval '1 month';
    END LOOP;
    IF to_regclass('audit_events_default') IS NULL THEN
        CREATE TABLE audit_events_default PARTITION OF audit_events DEFAULT;
        CREATE TABLE audit_chain_default PARTITION OF audit_chain DEFAULT;
    END IF;
    PERFORM aidc_audit_partitions_lock();
    RETURN made;
END $$;
REVOKE ALL ON FUNCTION aidc_audit_partitions(timestamptz, int) FROM PUBLIC;

-- ---- privileges --------------------------------------------------------------------

-- the grants before this migration stay as they are, under a name of this migration's
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0009;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    PERFORM aidc_grant_app_before_0009(app);
    -- the definer functions are the doors through row-level security: the
    -- application role's (granted above), nobody else's
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'aidc\_%'
                AND p.prosecdef AND p.prorettype <> 'trigger'::regtype
                AND has_function_privilege('public', p.oid, 'EXECUTE')
    LOOP
        EXECUTE format('REVOKE ALL ON FUNCTION %s FROM PUBLIC', f);
    END LOOP;
    -- whatever was granted on a partition since (by hand, by default privileges)
    PERFORM aidc_audit_partitions_lock();
END $$;
