-- 0029_audit_inbox.sql - audit events written through an unindexed inbox.
--
-- Writing an event into audit_events costs a row in nine indexes (the primary
-- key, the five search b-trees, the partial ones and the words of the event);
-- a small audited write lost 16-19 % of its throughput to that, and no single
-- index was the cost (docs/performance.md, Audit). The application now writes
-- an event into audit_inbox, a heap with no index, in the same transaction as
-- the change it records, as before. The sealer moves the inbox into
-- audit_events (aidc_audit_inbox_move(): one DELETE ... RETURNING feeding one
-- INSERT, one transaction) right before it looks for events to chain, so an
-- event keeps the id and ts it was written with and the chain's order and
-- frontier are unchanged. Two movers at once move each row once: the second
-- waits on the first's row locks and then finds those rows gone.
--
-- Readers see the inbox at once: searches, exports and the tamper check read
-- audit_inbox beside audit_events (one statement, one snapshot: a row is in
-- exactly one of them), and audit_log is both as one relation for people and
-- tests that read the log with SQL.

CREATE TABLE audit_inbox (LIKE audit_events INCLUDING DEFAULTS INCLUDING CONSTRAINTS);
-- rows live about a second: vacuum it often, or every write extends the heap
ALTER TABLE audit_inbox SET (autovacuum_vacuum_scale_factor = 0,
                             autovacuum_vacuum_threshold = 5000,
                             autovacuum_vacuum_insert_threshold = 5000);

ALTER TABLE audit_inbox ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_inbox_insert ON audit_inbox FOR INSERT WITH CHECK (true);
CREATE POLICY audit_inbox_read ON audit_inbox FOR SELECT
    USING (aidc_ctx_role('platform_admin') OR aidc_ctx_role('auditor') OR aidc_ctx_role('system'));

-- audit_events is INSERT-only; the inbox loses rows only to the move
CREATE TRIGGER audit_inbox_immutable BEFORE UPDATE ON audit_inbox
    FOR EACH ROW EXECUTE FUNCTION aidc_audit_immutable();
CREATE TRIGGER audit_inbox_no_truncate BEFORE TRUNCATE ON audit_inbox
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_audit_immutable();

-- Every event of the inbox into audit_events; how many. As the owner, who
-- alone may delete from the inbox.
CREATE FUNCTION aidc_audit_inbox_move() RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH m AS (DELETE FROM audit_inbox RETURNING *),
         i AS (INSERT INTO audit_events SELECT * FROM m RETURNING 1)
    SELECT count(*) FROM i
$$;
REVOKE ALL ON FUNCTION aidc_audit_inbox_move() FROM PUBLIC;

-- The whole log, moved or not, under the caller's row-level security.
CREATE VIEW audit_log WITH (security_invoker = true) AS
    SELECT * FROM audit_events UNION ALL SELECT * FROM audit_inbox;

ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0029;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0029(app);
    EXECUTE format('REVOKE ALL ON audit_inbox, audit_log FROM %s', app);
    EXECUTE format('GRANT SELECT ON audit_inbox, audit_log TO %s', app);
    EXECUTE format('GRANT INSERT (actor_user_id, actor_username, actor_token_id, actor_roles,'
                   ' tenant_id, tenant_slug, source_ip, user_agent, request_id, action,'
                   ' resource_type, resource_id, outcome, status, details, record_id)'
                   ' ON audit_inbox TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_audit_inbox_move() TO %s', app);
END $$;
