-- 0024_notifications.sql - notifications (docs/notifications.md): what each
-- user wants to hear about, and the outbox the notifier delivers from.
--
-- * notification_prefs: one row per user who saved preferences: e-mail on or
--   off, the events e-mailed, the projects the user narrows to (empty: all),
--   and at most 5 webhooks [{"url","secret","events":[...]}]. The secrets are
--   needed to sign deliveries, so they are stored; the API never shows them.
-- * notifications: the outbox and, kept 30 days, the delivery log. A row is
--   written in the same transaction as the event that causes it (triggers on
--   job_events and app_sessions, the janitor's allocation notices, the
--   notifier's budget sweep), so an event that rolls back notifies no one and
--   one that commits is never lost.
-- * notification_budget_marks: budget.80 and budget.100, once per tenant or
--   project, month and threshold.

CREATE TABLE notification_prefs (
    user_id    uuid PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    email      boolean NOT NULL DEFAULT false,
    events     text[] NOT NULL DEFAULT '{}' CHECK (cardinality(events) <= 16),
    projects   text[] NOT NULL DEFAULT '{}' CHECK (cardinality(projects) <= 50),
    webhooks   jsonb NOT NULL DEFAULT '[]'
               CHECK (jsonb_typeof(webhooks) = 'array' AND jsonb_array_length(webhooks) <= 5),
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- A user's own row; the workers (system context) read all of them.
ALTER TABLE notification_prefs ENABLE ROW LEVEL SECURITY;
CREATE POLICY notification_prefs_own ON notification_prefs
    USING (user_id = aidc_ctx_user() OR aidc_ctx_platform_admin())
    WITH CHECK (user_id = aidc_ctx_user() OR aidc_ctx_platform_admin());

CREATE TABLE notifications (
    id           uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    user_id      uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    event        text NOT NULL CHECK (event IN ('job.ended', 'job.failed', 'job.preempted',
                                                'session.ready', 'budget.80', 'budget.100',
                                                'allocation.expiring')),
    channel      text NOT NULL CHECK (channel IN ('email', 'webhook')),
    -- the webhook's URL; '' for e-mail (users.email is read at delivery)
    target       text NOT NULL CHECK (char_length(target) <= 2048),
    payload      jsonb NOT NULL,
    state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'failed')),
    attempts     integer NOT NULL DEFAULT 0,
    -- when the next attempt is due; a claimed row's lease (a crashed attempt retries after it)
    next_at      timestamptz NOT NULL DEFAULT now(),
    last_status  integer,
    last_error   text CHECK (char_length(last_error) <= 1024),
    created_at   timestamptz NOT NULL DEFAULT clock_timestamp(),
    delivered_at timestamptz
);
CREATE INDEX notifications_due ON notifications (next_at) WHERE state = 'pending';
CREATE INDEX notifications_user ON notifications (user_id, created_at DESC, id DESC);
CREATE INDEX notifications_age ON notifications (created_at);
ALTER TABLE notifications ENABLE ROW LEVEL SECURITY;
CREATE POLICY notifications_read ON notifications FOR SELECT
    USING (user_id = aidc_ctx_user() OR aidc_ctx_platform_admin());
CREATE POLICY notifications_update ON notifications FOR UPDATE USING (aidc_ctx_platform_admin());
CREATE POLICY notifications_delete ON notifications FOR DELETE USING (aidc_ctx_platform_admin());

CREATE TABLE notification_budget_marks (
    scope_id  uuid NOT NULL, -- the tenant's or the project's id
    period    date NOT NULL,
    threshold integer NOT NULL CHECK (threshold IN (80, 100)),
    PRIMARY KEY (scope_id, period, threshold)
);
ALTER TABLE notification_budget_marks ENABLE ROW LEVEL SECURITY;
CREATE POLICY notification_budget_marks_all ON notification_budget_marks
    USING (aidc_ctx_platform_admin()) WITH CHECK (aidc_ctx_platform_admin());

-- Queue ev for user uid as their preferences say: one row for e-mail (when on
-- and ev is among its events), one per webhook listening to ev. proj: the
-- project slug the event belongs to (NULL: none, then no project narrowing).
-- Definer's rights: the event's transaction may run as anyone (a member
-- cancelling a job notifies its owner), and no caller may insert rows itself.
CREATE FUNCTION aidc_notify_emit(uid uuid, ev text, proj text, data jsonb) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    p notification_prefs;
    n integer := 0;
    k integer;
BEGIN
    IF uid IS NULL OR EXISTS (SELECT 1 FROM users WHERE id = uid AND disabled) THEN
        RETURN 0;
    END IF;
    SELECT * INTO p FROM notification_prefs WHERE user_id = uid;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    IF proj IS NOT NULL AND cardinality(p.projects) > 0 AND NOT proj = ANY (p.projects) THEN
        RETURN 0;
    END IF;
    IF p.email AND ev = ANY (p.events)
       AND EXISTS (SELECT 1 FROM users u WHERE u.id = uid AND u.email <> '') THEN
        INSERT INTO notifications (user_id, event, channel, target, payload)
        VALUES (uid, ev, 'email', '', data);
        n := 1;
    END IF;
    INSERT INTO notifications (user_id, event, channel, target, payload)
    SELECT uid, ev, 'webhook', w->>'url', data FROM jsonb_array_elements(p.webhooks) w
     WHERE w->'events' ? ev;
    GET DIAGNOSTICS k = ROW_COUNT;
    n := n + k;
    IF n > 0 THEN
        PERFORM pg_notify('aidc_notify', '');
    END IF;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION aidc_notify_emit(uuid, text, text, jsonb) FROM PUBLIC;

-- job.ended (succeeded, failed, cancelled), job.failed, job.preempted: to the job's owner.
CREATE FUNCTION aidc_notify_job_event() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    j record;
    d jsonb;
BEGIN
    IF NEW.to_state NOT IN ('succeeded', 'failed', 'cancelled', 'preempted')
       OR NEW.from_state IS NOT DISTINCT FROM NEW.to_state THEN
        RETURN NULL;
    END IF;
    -- an array's tasks (array_parent, where arrays exist: read without naming the
    -- column) are told of through their parent, not one message per task
    SELECT x.id, x.user_id, x.name, x.exit_code, x.gpus, x.gpu_type, p.slug AS project,
           t.slug AS tenant, to_jsonb(x)->>'array_parent' AS array_parent INTO j
      FROM jobs x JOIN projects p ON p.id = x.project_id JOIN tenants t ON t.id = x.tenant_id
     WHERE x.id = NEW.job_id;
    IF NOT FOUND OR j.user_id IS NULL OR j.array_parent IS NOT NULL
       OR NOT EXISTS (SELECT 1 FROM notification_prefs WHERE user_id = j.user_id) THEN
        RETURN NULL;
    END IF;
    d := jsonb_build_object('job', jsonb_build_object(
             'id', j.id, 'name', j.name, 'tenant', j.tenant, 'project', j.project,
             'state', NEW.to_state, 'reason', NEW.reason,
             'exit_code', CASE WHEN NEW.to_state = 'preempted' THEN NULL ELSE j.exit_code END,
             'gpus', j.gpus, 'gpu_type', j.gpu_type, 'at', NEW.ts));
    IF NEW.to_state = 'preempted' THEN
        PERFORM aidc_notify_emit(j.user_id, 'job.preempted', j.project, d);
    ELSE
        PERFORM aidc_notify_emit(j.user_id, 'job.ended', j.project, d);
        IF NEW.to_state = 'failed' THEN
            PERFORM aidc_notify_emit(j.user_id, 'job.failed', j.project, d);
        END IF;
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events
    FOR EACH ROW EXECUTE FUNCTION aidc_notify_job_event();

-- session.ready: the first time a session's app answers, to its owner.
CREATE FUNCTION aidc_notify_session_ready() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    j record;
BEGIN
    SELECT x.name, p.slug AS project, t.slug AS tenant INTO j
      FROM jobs x JOIN projects p ON p.id = x.project_id JOIN tenants t ON t.id = x.tenant_id
     WHERE x.id = NEW.job_id;
    PERFORM aidc_notify_emit(NEW.user_id, 'session.ready', j.project,
        jsonb_build_object('session', jsonb_build_object(
            'id', NEW.id, 'app', NEW.app, 'job', NEW.job_id, 'name', j.name,
            'tenant', j.tenant, 'project', j.project, 'at', NEW.ready_at)));
    RETURN NULL;
END $$;
CREATE TRIGGER app_sessions_notify AFTER UPDATE OF ready_at ON app_sessions
    FOR EACH ROW WHEN (OLD.ready_at IS NULL AND NEW.ready_at IS NOT NULL)
    EXECUTE FUNCTION aidc_notify_session_ready();

-- allocation.expiring: to the request's requester and its project's PI.
CREATE FUNCTION aidc_notify_allocation(rid uuid) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    a record;
    d jsonb;
    n integer := 0;
BEGIN
    SELECT r.id, r.requested_by, p.pi_user_id, p.slug AS project, t.slug AS tenant,
           r.starts_on, r.ends_on INTO a
      FROM allocation_requests r JOIN projects p ON p.id = r.project_id
      JOIN tenants t ON t.id = r.tenant_id WHERE r.id = rid;
    IF NOT FOUND THEN
        RETURN 0;
    END IF;
    d := jsonb_build_object('allocation', jsonb_build_object(
             'id', a.id, 'tenant', a.tenant, 'project', a.project,
             'starts_on', a.starts_on, 'ends_on', a.ends_on));
    n := aidc_notify_emit(a.requested_by, 'allocation.expiring', a.project, d);
    IF a.pi_user_id IS DISTINCT FROM a.requested_by THEN
        n := n + aidc_notify_emit(a.pi_user_id, 'allocation.expiring', a.project, d);
    END IF;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION aidc_notify_allocation(uuid) FROM PUBLIC;

-- budget.80 / budget.100: each tenant and project with a gpu_hours_month
-- limit, once per month and threshold, to the members of its tenant. Used
-- hours are counted as the quota report counts them (db/quotas.c).
CREATE FUNCTION aidc_notify_budgets() RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
    m date := (date_trunc('month', now(), 'UTC') AT TIME ZONE 'UTC')::date;
    b record;
    th integer;
    n integer := 0;
BEGIN
    FOR b IN
        WITH used AS (
            SELECT tenant_id, project_id, sum(s) / 3600 AS h FROM (
                SELECT tenant_id, project_id, gpu_seconds AS s FROM usage_monthly
                 WHERE period = m
                UNION ALL
                SELECT tenant_id, project_id, gpus * extract(epoch FROM e - s)
                  FROM aidc_usage_unmetered(date_trunc('month', now(), 'UTC'), now())
                 WHERE gpus > 0) x
             GROUP BY GROUPING SETS ((tenant_id), (tenant_id, project_id))),
        lim AS (
            SELECT q.tenant_id, NULL::uuid AS project_id, q."limit" FROM tenant_quotas q
             WHERE q.resource = 'gpu_hours_month' AND q."limit" > 0
            UNION ALL
            SELECT q.tenant_id, q.project_id, q."limit" FROM project_quotas q
             WHERE q.resource = 'gpu_hours_month' AND q."limit" > 0)
        SELECT l.tenant_id, l.project_id, l."limit", coalesce(u.h, 0) AS used,
               t.slug AS tenant, p.slug AS project
          FROM lim l JOIN tenants t ON t.id = l.tenant_id
          LEFT JOIN projects p ON p.id = l.project_id
          LEFT JOIN used u ON u.tenant_id = l.tenant_id
               AND u.project_id IS NOT DISTINCT FROM l.project_id
    LOOP
        FOREACH th IN ARRAY ARRAY[80, 100] LOOP
            CONTINUE WHEN b.used < b."limit" * th / 100.0;
            INSERT INTO notification_budget_marks (scope_id, period, threshold)
            VALUES (coalesce(b.project_id, b.tenant_id), m, th) ON CONFLICT DO NOTHING;
            CONTINUE WHEN NOT FOUND;
            PERFORM aidc_notify_emit(ms.user_id, 'budget.' || th, b.project,
                jsonb_build_object('budget', jsonb_build_object(
                    'tenant', b.tenant, 'project', b.project, 'period', m,
                    'threshold', th, 'limit_gpu_hours', b."limit",
                    'used_gpu_hours', round(b.used, 3))))
               FROM memberships ms WHERE ms.tenant_id = b.tenant_id;
            n := n + 1;
        END LOOP;
    END LOOP;
    RETURN n;
END $$;
REVOKE ALL ON FUNCTION aidc_notify_budgets() FROM PUBLIC;

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0024;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0024(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON notification_prefs TO %s', app);
    EXECUTE format('GRANT SELECT, UPDATE, DELETE ON notifications TO %s', app);
    EXECUTE format('GRANT SELECT, INSERT, DELETE ON notification_budget_marks TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_notify_allocation(uuid) TO %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_notify_budgets() TO %s', app);
END $$;
