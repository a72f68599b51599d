-- 0038_audit_id_words.sql - a resource id that is a UUID is one word of the audit
-- log's full-text index, not six.
--
-- The parser of the `simple` configuration reads a UUID as a hyphenated word and
-- its five parts: six lexemes per event, each new and random, so each a separate
-- insert into the GIN index at a random place of its entry tree. Moving a batch
-- of project.create events from the inbox (0029), the full-text index took three
-- quarters of the move, and the resource id's six lexemes more than half of that:
-- as one lexeme, the move costs a third less (docs/performance.md, Audit). Most
-- API events name a resource by its UUID.
--
-- A search still finds an event by its resource id given whole in `q`: the query
-- side (aidc_audit_query) adds, for every UUID it contains, that UUID as one
-- lexeme beside the parser's phrase of it (ts_rewrite), so the same `q` matches
-- the id of the resource (one lexeme) and the same UUID among the strings of
-- `details` (still its parser's six). A part of a resource id (`cb94`) no longer
-- finds it, nor does a UUID inside a quoted phrase ("created <uuid>"), which the
-- rewrite cannot reach; `resource_id=` is the exact filter for ids.
--
-- The index is built anew over every partition, beside the old one, which is then
-- dropped: about 22 s per million events on two CPUs (docs/operations.md,
-- Upgrade). Meanwhile searches answer from the old index and
-- API events gather in the inbox; the sealer's move and node-record ingest wait
-- for the migration's commit (the move retries each round, 0031). The lock that
-- DROP INDEX takes at the end waits at most 5 s for running searches, and new
-- ones wait behind it; then the migration fails (run it again).
SET LOCAL lock_timeout = '5s';

-- The id's one word keeps a position (after the type's), as the parser's words
-- do, so a phrase does not join the type to the first string of details. Written
-- out here rather than as a function of its own: the SQL function of an index
-- expression is parsed with the search_path of whoever builds the index, and a
-- restore (pg_restore, pg_upgrade) builds it with an empty one.
CREATE OR REPLACE FUNCTION aidc_audit_tsv(action text, rtype text, rid text, details jsonb)
RETURNS tsvector LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN action LIKE 'node.%' THEN
                to_tsvector('simple'::regconfig, coalesce(details ->> 'command', '') || ' ' ||
                            coalesce(rid, '') || ' ' || coalesce(details ->> 'user', ''))
           ELSE to_tsvector('simple'::regconfig,
                            action || ' ' || replace(action, '.', ' ') || ' ' || coalesce(rtype, ''))
                || CASE WHEN rid ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                        THEN (quote_literal(rid) || ':1')::tsvector
                        ELSE to_tsvector('simple'::regconfig, coalesce(rid, '')) END
                || jsonb_to_tsvector('simple'::regconfig, details, '["string"]') END
$$;
CREATE INDEX audit_events_words_idx ON audit_events
    USING gin (aidc_audit_tsv(action, resource_type, resource_id, details));
DROP INDEX audit_events_search_idx;
ALTER INDEX audit_events_words_idx RENAME TO audit_events_search_idx;

-- `q` of a search as a query of those words (see above).
CREATE FUNCTION aidc_audit_query(q text) RETURNS tsquery
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    r tsquery := websearch_to_tsquery('simple'::regconfig, q);
    u text;
BEGIN
    FOR u IN SELECT DISTINCT lower(m[1]) FROM regexp_matches(q,
                 '([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})', 'gi') AS m LOOP
        r := ts_rewrite(r, websearch_to_tsquery('simple'::regconfig, u),
                        websearch_to_tsquery('simple'::regconfig, u) || quote_literal(u)::tsquery);
    END LOOP;
    RETURN r;
END $$;

-- 0028's search, its words asked through aidc_audit_query
CREATE OR REPLACE FUNCTION aidc_audit_search(p_actor text, p_tenant text, p_action text,
                                             p_prefix text, p_outcome text, p_ip inet,
                                             p_from timestamptz, p_to timestamptz, p_q text,
                                             p_rtype text, p_rid text, p_after_ts timestamptz,
                                             p_after_id bigint, p_limit int, p_lead text)
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
    -- $16/$17: the step's bounds, $18: rows already returned
    q text := format(
        'SELECT s.ts, s.id, $18 + row_number() OVER () FROM (SELECT e.ts, e.id FROM audit_events e'
        ' WHERE ($1 IS NULL OR e.actor_username = $1) AND ($2 IS NULL OR e.tenant_slug = $2)'
        ' AND ($3 IS NULL OR e.action = $3) AND ($4 IS NULL OR e.action LIKE $4)'
        ' AND ($5 IS NULL OR e.outcome = $5)'
        ' AND ($6 IS NULL OR e.source_ip <<= $6) AND ($15 <> ''address'' OR e.source_ip = $6)'
        ' AND ($7 IS NULL OR e.ts >= $7) AND ($8 IS NULL OR e.ts < $8)'
        ' AND ($9 IS NULL OR aidc_audit_tsv(e.action, e.resource_type, e.resource_id, e.details)'
        '      @@ aidc_audit_query($9))'
        ' AND ($10 IS NULL OR e.resource_type = $10) AND ($11 IS NULL OR e.resource_id = $11)'
        ' AND ($12 IS NULL OR (e.ts, e.id) < ($12, $13))'
        ' AND ($16 IS NULL OR e.ts >= $16) AND ($17 IS NULL OR e.ts < $17)'
        ' ORDER BY %s LIMIT $14) s', ord_by);
    steps constant interval[] := ARRAY['1 day', '7 days', '31 days', '92 days']::interval[];
    anchor timestamptz;
    lo timestamptz;
    hi timestamptz;
    k int := 1;
    got bigint := 0;
    n bigint;
BEGIN
    IF NOT (aidc_ctx_role('platform_admin') OR aidc_ctx_role('auditor') OR aidc_ctx_role('system')) THEN
        RAISE EXCEPTION 'reading the audit log needs platform_admin or auditor'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    -- an equality filter's index gives (ts, id) order itself: one pass
    IF p_lead IN ('resource', 'actor', 'address', 'tenant', 'action') THEN
        RETURN QUERY EXECUTE q
            USING p_actor, p_tenant, p_action, p_prefix, p_outcome, p_ip, p_from, p_to, p_q,
                  p_rtype, p_rid, p_after_ts, p_after_id, p_limit, p_lead,
                  NULL::timestamptz, NULL::timestamptz, 0::bigint;
        RETURN;
    END IF;
    -- steps back from the newest time the page can hold; the first has no upper
    -- bound of its own (an event stamped ahead of this clock is not skipped)
    anchor := least(p_to, p_after_ts, clock_timestamp());
    LOOP
        lo := CASE WHEN k <= array_length(steps, 1) THEN anchor - steps[k] END;
        IF lo <= p_from THEN
            lo := NULL; -- the window's own lower bound ($7) ends this last step
        END IF;
        RETURN QUERY EXECUTE q
            USING p_actor, p_tenant, p_action, p_prefix, p_outcome, p_ip, p_from, p_to, p_q,
                  p_rtype, p_rid, p_after_ts, p_after_id, p_limit - got::int, p_lead, lo, hi, got;
        GET DIAGNOSTICS n = ROW_COUNT;
        got := got + n;
        EXIT WHEN got >= p_limit OR lo IS NULL;
        hi := lo;
        k := k + 1;
    END LOOP;
END $$;
