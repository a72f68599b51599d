-- 0028_audit_search_window.sql - audit searches that stay fast over millions of
-- events: newest matches first in growing time steps, and refused events found
-- by their action without reading the events.
--
-- Over 5M events three searches took 0.5-1.7 s (docs/performance.md, Audit):
-- a common word, a /24 network and an action prefix with an outcome. Neither a
-- word nor a network has an index in (ts, id) order, so every match was read
-- and sorted before the newest 50 came back. The API now searches a default
-- window (api/audit.c), and within any window this function looks at the
-- newest day first, then the week, the month, the quarter, then the rest,
-- and stops as soon as the page is full: each step is planned for its own
-- bounds, so it reads only the monthly partitions it overlaps and, of a
-- common word, the matches of one day. A search that matches little reads
-- every step, each through the filter's own index.

-- The refused events (a few per cent) carry their action and outcome in the
-- index: `action=auth.*&outcome=denied` is an index-only scan over the refused
-- events of the window, newest first, instead of a heap read per candidate
-- (the action index cannot serve a LIKE prefix under a non-C collation).
-- Only refused events enter it, as before.
DROP INDEX audit_events_refused_idx;
CREATE INDEX audit_events_refused_idx ON audit_events (ts, id) INCLUDE (action, outcome)
    WHERE outcome <> 'success';

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
        '      @@ websearch_to_tsquery(''simple'', $9))'
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
