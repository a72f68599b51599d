-- 0004_audit.sql - tamper-evident audit: monthly partitions, the hash chain,
-- signed checkpoints, retention, node command records, dual approval.
--
-- audit_events stays strictly INSERT-only: the chain lives beside it in
-- audit_chain (one row per sealed event: its chain position `seq` and
-- hash = SHA-256(prev_hash || canonical JSON of the event)), written by the
-- sealer through aidc_audit_seal(). The chain runs in (ts, id) order, and the
-- sealer only takes events written before every transaction still open
-- (and before its grace period): an event's ts is the clock at its INSERT,
-- which is never earlier than its transaction's start, so no event can
-- appear later below the sealed frontier. A rolled-back transaction leaves a
-- gap in event ids, never in chain positions. Writing costs no trigger and
-- no queue: the sealer reads new events straight from the primary key.

-- ---- audit_events, partitioned by month ----------------------------------------

ALTER TABLE audit_events RENAME TO audit_events_0001;
ALTER INDEX audit_events_pkey RENAME TO audit_events_0001_pkey;
ALTER INDEX audit_events_ts_idx RENAME TO audit_events_0001_ts_idx;
ALTER INDEX audit_events_tenant_idx RENAME TO audit_events_0001_tenant_idx;

CREATE SEQUENCE audit_event_ids AS bigint;

CREATE TABLE audit_events (
    id             bigint NOT NULL DEFAULT nextval('audit_event_ids'),
    -- the time the row was written (commands carry the node's time in details.ran_at)
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
    details        jsonb NOT NULL DEFAULT '{}',
    record_id      text,   -- a node agent's id of the record
    PRIMARY KEY (ts, id)
) PARTITION BY RANGE (ts);
ALTER SEQUENCE audit_event_ids OWNED BY audit_events.id;

-- Filters of GET /audit/events and /audit/commands; every one ends in (ts, id),
-- the order of the answer, so a search on one value reads exactly its newest
-- rows from one index (ending in ts alone, the planner would rather walk the
-- primary key and filter - over millions of rows when the value is rare).
CREATE INDEX audit_events_actor_idx ON audit_events (actor_username, ts, id);
CREATE INDEX audit_events_tenant_idx ON audit_events (tenant_slug, ts, id);
CREATE INDEX audit_events_action_idx ON audit_events (action, ts, id);
CREATE INDEX audit_events_ip_idx ON audit_events (source_ip, ts, id);
CREATE INDEX audit_events_resource_idx ON audit_events (resource_id, ts, id);
CREATE INDEX audit_events_node_idx ON audit_events (ts, id) WHERE action LIKE 'node.%';
CREATE INDEX audit_events_refused_idx ON audit_events (ts, id) WHERE outcome <> 'success';
-- node records: the node user, for "who ran what"
CREATE INDEX audit_events_node_user_idx ON audit_events ((details ->> 'user'), ts, id)
    WHERE action LIKE 'node.%';

-- `q`: words of the action, the resource and every key and value of details.
-- `q`: the words of the action, the resource and the string values of
-- details; of a node record, its command, host and user (cheaper: node
-- records come by the ten thousand).
CREATE FUNCTION aidc_audit_tsv(action text, rtype text, rid text, details jsonb)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN action LIKE 'node.%' THEN
                to_tsvector('simple'::regconfig, coalesce(details ->> 'command', '') || ' ' ||
                            coalesce(rid, '') || ' ' || coalesce(details ->> 'user', ''))
           ELSE to_tsvector('simple'::regconfig,
                            action || ' ' || replace(action, '.', ' ') || ' ' ||
                            coalesce(rtype, '') || ' ' || coalesce(rid, ''))
                || jsonb_to_tsvector('simple'::regconfig, details, '["string"]') END
$$;
CREATE INDEX audit_events_search_idx ON audit_events
    USING gin (aidc_audit_tsv(action, resource_type, resource_id, details));

ALTER TABLE audit_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_insert ON audit_events FOR INSERT WITH CHECK (true);
CREATE POLICY audit_read ON audit_events FOR SELECT
    USING (aidc_ctx_role('platform_admin') OR aidc_ctx_role('auditor') OR aidc_ctx_role('system'));

-- ---- the chain -------------------------------------------------------------------

CREATE TABLE audit_chain (
    event_ts timestamptz NOT NULL,
    event_id bigint NOT NULL,
    seq      bigint NOT NULL,
    -- the previous entry's hash, kept so that any single entry (a filtered
    -- export, a range) can be checked without reading its neighbours
    prev_hash bytea NOT NULL CHECK (octet_length(prev_hash) = 32),
    hash     bytea NOT NULL CHECK (octet_length(hash) = 32),
    PRIMARY KEY (event_ts, event_id)
) PARTITION BY RANGE (event_ts);
CREATE INDEX audit_chain_seq_idx ON audit_chain (seq);
ALTER TABLE audit_chain ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_chain_read ON audit_chain FOR SELECT
    USING (aidc_ctx_role('platform_admin') OR aidc_ctx_role('auditor') OR aidc_ctx_role('system'));

-- the head of the chain: one row, moved only by aidc_audit_seal(); every
-- event at or before (upto_ts, upto_id) is chained
CREATE TABLE audit_chain_head (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    seq     bigint NOT NULL,
    hash    bytea NOT NULL CHECK (octet_length(hash) = 32),
    upto_ts timestamptz NOT NULL,
    upto_id bigint NOT NULL
);
INSERT INTO audit_chain_head
VALUES (true, 0, '\x0000000000000000000000000000000000000000000000000000000000000000',
        '-infinity', 0);

-- node records already stored, by the agent's record id: a resend of a
-- spool file stores nothing twice (kept as long as the events)
CREATE TABLE audit_record_ids (
    host      text NOT NULL,
    record_id text NOT NULL,
    ts        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host, record_id)
);
CREATE INDEX audit_record_ids_ts_idx ON audit_record_ids (ts);

-- signed chain heads
CREATE TABLE audit_checkpoints (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    ts         timestamptz NOT NULL,
    seq        bigint NOT NULL,
    head_hash  bytea NOT NULL CHECK (octet_length(head_hash) = 32),
    alg        text NOT NULL CHECK (alg IN ('ed25519', 'hmac-sha256', 'none')),
    key_id     text NOT NULL,
    signature  bytea NOT NULL
);
CREATE INDEX audit_checkpoints_seq_idx ON audit_checkpoints (seq);
ALTER TABLE audit_checkpoints ENABLE ROW LEVEL SECURITY;
CREATE POLICY audit_checkpoints_insert ON audit_checkpoints FOR INSERT
    WITH CHECK (aidc_ctx_role('system'));
CREATE POLICY audit_checkpoints_read ON audit_checkpoints FOR SELECT
    USING (aidc_ctx_role('platform_admin') OR aidc_ctx_role('auditor') OR aidc_ctx_role('system'));

-- Append-only, for every role but the owner (who runs retention); the
-- function of 0001 compares with the owner of the partition written to.
CREATE TRIGGER audit_events_immutable BEFORE UPDATE OR DELETE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION aidc_audit_immutable();
CREATE TRIGGER audit_events_no_truncate BEFORE TRUNCATE ON audit_events
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_audit_immutable();
CREATE TRIGGER audit_chain_immutable BEFORE UPDATE OR DELETE ON audit_chain
    FOR EACH ROW EXECUTE FUNCTION aidc_audit_immutable();
CREATE TRIGGER audit_chain_no_truncate BEFORE TRUNCATE ON audit_chain
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_audit_immutable();
CREATE TRIGGER audit_checkpoints_immutable BEFORE UPDATE OR DELETE ON audit_checkpoints
    FOR EACH ROW EXECUTE FUNCTION aidc_audit_immutable();
CREATE TRIGGER audit_checkpoints_no_truncate BEFORE TRUNCATE ON audit_checkpoints
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_audit_immutable();

-- ---- partitions --------------------------------------------------------------------

-- Monthly partitions of audit_events and audit_chain from `first` to `months`
-- months after now; a default partition catches what falls outside (a clock
-- far off), so an insert never fails for want of a partition.
CREATE FUNCTION aidc_audit_partitions(first timestamptz, months int) RETURNS int
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
    RETURN made;
END $$;

SELECT aidc_audit_partitions(coalesce((SELECT min(ts) FROM audit_events_0001), now()), 3);

-- The events written so far move over, in id order, and wait to be sealed.
INSERT INTO audit_events (id, ts, actor_user_id, actor_username, actor_token_id, actor_roles,
                          tenant_id, tenant_slug, source_ip, user_agent, request_id, action,
                          resource_type, resource_id, outcome, status, details)
SELECT id, ts, actor_user_id, actor_username, actor_token_id, actor_roles, tenant_id,
       tenant_slug, source_ip, user_agent, request_id, action, resource_type, resource_id,
       outcome, status, details
  FROM audit_events_0001 ORDER BY id;
SELECT setval('audit_event_ids', coalesce((SELECT max(id) FROM audit_events_0001), 0) + 1, false);
DROP TABLE audit_events_0001;

-- ---- sealing ----------------------------------------------------------------------

-- Append sealed events to the chain. The caller read the head at
-- (old_seq) and hashed the events ids[i] (written at tss[i]) in order; if
-- another sealer moved the head meanwhile nothing is written and NULL is
-- returned. Otherwise the new head position.
CREATE FUNCTION aidc_audit_seal(old_seq bigint, ids bigint[], tss timestamptz[], hashes bytea[])
RETURNS bigint
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    n int := coalesce(array_length(ids, 1), 0);
    cur bigint;
BEGIN
    SELECT seq INTO cur FROM audit_chain_head FOR UPDATE;
    IF cur <> old_seq OR n = 0 OR array_length(tss, 1) <> n OR array_length(hashes, 1) <> n THEN
        RETURN NULL;
    END IF;
    -- the events must come after the frontier, in order: the chain's order is (ts, id)
    IF EXISTS (SELECT 1 FROM unnest(ids, tss) WITH ORDINALITY AS u(i, t, o)
                 JOIN audit_chain_head h ON (u.t, u.i) <= (h.upto_ts, h.upto_id))
       OR EXISTS (SELECT 1 FROM (SELECT (t, i) > lag((t, i)) OVER (ORDER BY o) AS up
                                   FROM unnest(ids, tss) WITH ORDINALITY AS u(i, t, o)) s
                   WHERE NOT s.up) THEN
        RAISE EXCEPTION 'audit events to seal must follow the chain in (ts, id) order';
    END IF;
    -- lag(), not hashes[o - 1]: subscripting a large array per row is quadratic
    INSERT INTO audit_chain (event_ts, event_id, seq, prev_hash, hash)
    SELECT t, i, old_seq + o,
           coalesce(lag(h) OVER (ORDER BY o), (SELECT hash FROM audit_chain_head)), h
      FROM unnest(ids, tss, hashes) WITH ORDINALITY AS u(i, t, h, o);
    UPDATE audit_chain_head SET seq = old_seq + n, hash = hashes[n], upto_ts = tss[n],
                                upto_id = ids[n];
    RETURN old_seq + n;
END $$;

CREATE FUNCTION aidc_audit_head(OUT seq bigint, OUT hash bytea, OUT upto_ts timestamptz,
                                 OUT upto_id bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT seq, hash, upto_ts, upto_id FROM audit_chain_head
$$;

-- Store node records (a JSON array of {ts, host, kind, record_id, job_id,
-- details}) for the calling actor; a record whose (host, record_id) was
-- stored before is skipped. Returns how many were new.
CREATE FUNCTION aidc_audit_ingest(records jsonb, actor_id uuid, actor_name text, token uuid,
                                  roles text[], ip inet, agent text, request text)
RETURNS bigint
LANGUAGE sql SECURITY DEFINER SET search_path = public, pg_temp AS $$
    WITH r AS (SELECT * FROM jsonb_to_recordset(records)
               AS r(ts timestamptz, host text, kind text, record_id text, job_id uuid,
                    details jsonb)),
    fresh AS (INSERT INTO audit_record_ids (host, record_id)
              SELECT DISTINCT host, record_id FROM r WHERE record_id IS NOT NULL
              ON CONFLICT DO NOTHING RETURNING host, record_id),
    ins AS (INSERT INTO audit_events (actor_user_id, actor_username, actor_token_id,
                actor_roles, tenant_id, tenant_slug, source_ip, user_agent, request_id, action,
                resource_type, resource_id, outcome, details, record_id)
            SELECT actor_id, actor_name, token, roles, j.tenant_id, t.slug, ip, agent, request,
                   'node.' || r.kind, 'host', r.host, 'success', r.details, r.record_id
              FROM r LEFT JOIN jobs j ON j.id = r.job_id LEFT JOIN tenants t ON t.id = j.tenant_id
             WHERE r.record_id IS NULL
                OR EXISTS (SELECT 1 FROM fresh f WHERE f.host = r.host AND f.record_id = r.record_id)
            RETURNING 1)
    SELECT count(*) FROM ins
$$;

-- ---- search -----------------------------------------------------------------------

-- One page of an audit search: the (ts, id) of the newest matching events.
-- A definer function, for two reasons. Row-level security would keep the
-- planner from using an index for any filter whose operator is not
-- leakproof (LIKE, <<= of a network, full-text @@): behind a policy those
-- run only as filters after it, over millions of rows. And each call plans
-- for its actual arguments (EXECUTE), ordered by the index of the most
-- selective equality filter given (see db/audit.c). The function checks
-- what the policy would: platform admins, auditors and the system only.
CREATE FUNCTION aidc_audit_search(p_actor text, p_tenant text, p_action text, p_prefix text,
                                  p_outcome text, p_ip inet, p_from timestamptz,
                                  p_to timestamptz, p_q text, p_rtype text, p_rid text,
                                  p_after_ts timestamptz, p_after_id bigint, p_limit int,
                                  p_lead text)
RETURNS TABLE (ts timestamptz, id bigint, ord bigint)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    ord_by text := CASE p_lead
        WHEN 'resource' THEN 'e.resource_id DESC, e.ts DESC, e.id DESC'
        WHEN 'actor' THEN 'e.actor_username DESC, e.ts DESC, e.id DESC'
        WHEN 'address' THEN 'e.source_ip DESC, e.ts DESC, e.id DESC'
        WHEN 'tenant' THEN 'e.tenant_slug DESC, e.ts DESC, e.id DESC'
        WHEN 'action' THEN 'e.action DESC, e.ts DESC, e.id DESC'
        -- words alone: an order no index gives, so the matches come from the
        -- full-text index and are sorted
        WHEN 'words' THEN 'e.ts + interval ''0'' DESC, e.id DESC'
        ELSE 'e.ts DESC, e.id DESC' END;
BEGIN
    IF NOT (aidc_ctx_role('platform_admin') OR aidc_ctx_role('auditor') OR aidc_ctx_role('system')) THEN
        RAISE EXCEPTION 'reading the audit log needs platform_admin or auditor'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN QUERY EXECUTE format(
        'SELECT e.ts, e.id, row_number() OVER () FROM (SELECT e.ts, e.id FROM audit_events e'
        ' WHERE ($1 IS NULL OR e.actor_username = $1) AND ($2 IS NULL OR e.tenant_slug = $2)'
        ' AND ($3 IS NULL OR e.action = $3) AND ($4 IS NULL OR e.action LIKE $4)'
        ' AND ($5 IS NULL OR e.outcome = $5)'
        ' AND ($6 IS NULL OR e.source_ip <<= $6) AND ($15 <> ''address'' OR e.source_ip = $6)'
        ' AND ($7 IS NULL OR e.ts >= $7) AND ($8 IS NULL OR e.ts < $8)'
        ' AND ($9 IS NULL OR aidc_audit_tsv(e.action, e.resource_type, e.resource_id, e.details)'
        '      @@ websearch_to_tsquery(''simple'', $9))'
        ' AND ($10 IS NULL OR e.resource_type = $10) AND ($11 IS NULL OR e.resource_id = $11)'
        ' AND ($12 IS NULL OR (e.ts, e.id) < ($12, $13))'
        ' ORDER BY %s LIMIT $14) e', ord_by)
    USING p_actor, p_tenant, p_action, p_prefix, p_outcome, p_ip, p_from, p_to, p_q, p_rtype,
          p_rid, p_after_ts, p_after_id, p_limit, p_lead;
END $$;

-- ---- retention ------------------------------------------------------------------

-- Drop the monthly partitions that ended more than `days` days ago. Only
-- whole, fully sealed months go. The drop is recorded as an audit event
-- (itself chained) naming, for every run of chain positions that left, its
-- first and last position and the last hash, so verification can continue
-- across the hole. Returns the number of partitions dropped.
CREATE FUNCTION aidc_audit_retention(days int) RETURNS int
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp SET TimeZone = 'UTC' AS $$
DECLARE
    p record;
    runs jsonb;
    cnt bigint;
    dropped int := 0;
BEGIN
    IF days < 180 THEN
        RAISE EXCEPTION 'audit retention below 180 days is not allowed' USING ERRCODE = 'check_violation';
    END IF;
    FOR p IN
        SELECT c.relname AS ev, replace(c.relname, 'audit_events_', 'audit_chain_') AS ch,
               make_timestamptz(substr(c.relname, 14, 4)::int, substr(c.relname, 18, 2)::int,
                                1, 0, 0, 0, 'UTC') AS lo
          FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
         WHERE i.inhparent = 'audit_events'::regclass AND c.relname ~ '^audit_events_[0-9]{6}$'
         ORDER BY c.relname
    LOOP
        EXIT WHEN p.lo + interval '1 month' > now() - make_interval(days => days);
        EXECUTE format('SELECT count(*) FROM %I e, audit_chain_head h '
                       'WHERE (e.ts, e.id) > (h.upto_ts, h.upto_id)', p.ev) INTO cnt;
        IF cnt > 0 THEN
            RAISE WARNING 'audit retention: % holds % unsealed events; kept', p.ev, cnt;
            EXIT;
        END IF;
        EXECUTE format('SELECT count(*) FROM %I', p.ev) INTO cnt;
        EXECUTE format($q$
            SELECT coalesce(jsonb_agg(jsonb_build_object('first_seq', f, 'last_seq', l,
                                      'last_hash', encode(h, 'hex')) ORDER BY f), '[]')
              FROM (SELECT min(seq) f, max(seq) l, (array_agg(hash ORDER BY seq DESC))[1] h
                      FROM (SELECT seq, hash, seq - row_number() OVER (ORDER BY seq) g FROM %I) s
                     GROUP BY g) r $q$, p.ch) INTO runs;
        INSERT INTO audit_events (actor_username, actor_roles, action, resource_type, resource_id,
                                  outcome, details)
        VALUES ('aidc', '{system}', 'audit.retention', 'audit_partition', p.ev, 'success',
                jsonb_build_object('partition', p.ev,
                                   'from', to_char(p.lo, 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                   'to', to_char(p.lo + interval '1 month', 'YYYY-MM-DD"T"HH24:MI:SS"Z"'),
                                   'count', cnt, 'retention_days', days, 'runs', runs));
        -- events before chain: the order in which readers lock them (no deadlock)
        EXECUTE format('DROP TABLE %I', p.ev);
        EXECUTE format('DROP TABLE %I', p.ch);
        DELETE FROM audit_record_ids WHERE ts < p.lo + interval '1 month';
        dropped := dropped + 1;
    END LOOP;
    RETURN dropped;
END $$;

-- ---- dual approval ------------------------------------------------------------------

CREATE TABLE approvals (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    state          text NOT NULL DEFAULT 'pending'
                   CHECK (state IN ('pending', 'approved', 'rejected', 'expired')),
    method         text NOT NULL,
    path           text NOT NULL,
    action         text NOT NULL,
    summary        text NOT NULL,
    body           jsonb,
    requested_by   uuid NOT NULL REFERENCES users (id),
    decided_by     uuid REFERENCES users (id),
    reason         text CHECK (char_length(reason) <= 1000),
    created_at     timestamptz NOT NULL DEFAULT now(),
    decided_at     timestamptz,
    expires_at     timestamptz NOT NULL,
    result         jsonb
);
CREATE INDEX approvals_state_idx ON approvals (state, created_at DESC, id DESC);
ALTER TABLE approvals ENABLE ROW LEVEL SECURITY;
CREATE POLICY approvals_admin ON approvals USING (aidc_ctx_platform_admin())
    WITH CHECK (aidc_ctx_platform_admin());

-- Deleted tenants keep their rows (and everything that names them) for the
-- audit retention period; they vanish from every list and lookup.
ALTER TABLE tenants ADD COLUMN deleted_at timestamptz;

-- ---- privileges --------------------------------------------------------------------

CREATE OR REPLACE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f regprocedure;
BEGIN
    EXECUTE format('GRANT USAGE ON SCHEMA public TO %s', app);
    EXECUTE format('REVOKE ALL ON aidc_schema_migrations FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_schema_migrations TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON users, user_roles, tenants, memberships,'
                   ' projects, api_tokens, revoked_sessions, login_failures, idempotency_keys,'
                   ' clusters, cluster_inventory, tenant_quotas, project_quotas, jobs, job_runs,'
                   ' outbox, queue_marks, approvals TO %s', app);
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON job_events FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON job_events TO %s', app);
    EXECUTE format('REVOKE UPDATE, DELETE, TRUNCATE ON audit_events, audit_checkpoints FROM %s', app);
    EXECUTE format('GRANT SELECT, INSERT ON audit_checkpoints TO %s', app);
    -- every column but id and ts: the application cannot backdate an event below the
    -- chain's frontier (where the sealer would never see it); ts is the clock at INSERT
    EXECUTE format('REVOKE INSERT ON audit_events FROM %s', app);
    EXECUTE format('GRANT SELECT ON audit_events TO %s', app);
    EXECUTE format('GRANT INSERT (actor_user_id, actor_username, actor_token_id, actor_roles,'
                   ' tenant_id, tenant_slug, source_ip, user_agent, request_id, action,'
                   ' resource_type, resource_id, outcome, status, details, record_id)'
                   ' ON audit_events TO %s', app);
    EXECUTE format('GRANT USAGE ON SEQUENCE audit_event_ids TO %s', app);
    -- the chain, its head and queue change only through aidc_audit_seal()
    EXECUTE format('REVOKE ALL ON audit_chain, audit_chain_head, audit_record_ids FROM %s', app);
    EXECUTE format('GRANT SELECT ON audit_chain TO %s', app);
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p
              WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'aidc\_%'
                AND p.prosecdef AND p.prorettype <> 'trigger'::regtype
    LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %s', f, app);
    END LOOP;
    EXECUTE format('REVOKE ALL ON aidc_auth_epoch FROM %s', app);
    EXECUTE format('GRANT SELECT ON aidc_auth_epoch TO %s', app);
END $$;
