-- 0008_gpu_faults.sql - GPU health: the nodes of each cluster as its backend
-- last listed them, faulty GPUs reported by operators or by Alertmanager, what
-- they take out of the inventory, node drains through the outbox, and jobs
-- requeued because of a fault. docs/gpu-health.md explains the rules.
--
-- aidc_grant_app is wrapped (the one before keeps a name of its own) so the grants
-- of earlier migrations stay where they were written.

-- ---- nodes --------------------------------------------------------------------------

-- One row per node and GPU type, replaced at every inventory refresh: the node
-- names a fault may name, the GPU indexes of each type on it (first_index ..
-- first_index + gpus - 1, the cluster's own numbering: Slurm's IDX, the device
-- plugin's, the local executor's), and whether the backend counts the node in
-- the inventory (usable: not drained, cordoned, down or NotReady). A node
-- without GPUs has one row with gpu_type ''.
CREATE TABLE cluster_nodes (
    cluster_id  uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    node        text NOT NULL CHECK (node ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$'),
    gpu_type    text NOT NULL CHECK (gpu_type = '' OR gpu_type ~ '^[a-z0-9][a-z0-9._-]{0,31}$'),
    first_index integer NOT NULL CHECK (first_index >= 0),
    gpus        integer NOT NULL CHECK (gpus >= 0),
    usable      boolean NOT NULL,
    -- the local executor leaves single GPUs out; a Slurm or Kubernetes node is
    -- drained or cordoned whole, so a fault takes all its GPUs out of service
    per_gpu     boolean NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (cluster_id, node, gpu_type)
);

-- ---- faults -------------------------------------------------------------------------

CREATE TABLE gpu_faults (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    cluster_id  uuid NOT NULL REFERENCES clusters (id) ON DELETE CASCADE,
    node        text NOT NULL CHECK (node ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$'),
    gpu_index   integer CHECK (gpu_index BETWEEN 0 AND 1023), -- NULL: every GPU of the node
    reason      text NOT NULL CHECK (char_length(reason) BETWEEN 1 AND 500),
    source      text NOT NULL CHECK (source ~ '^[a-z][a-z0-9_.-]{0,63}$'),
    alert       text CHECK (char_length(alert) <= 200), -- Alertmanager's alertname
    since       timestamptz NOT NULL DEFAULT now(),
    reported_by text NOT NULL,
    resolved_at timestamptz,
    resolved_by text,
    CHECK ((resolved_at IS NULL) = (resolved_by IS NULL))
);
-- one open fault per GPU (and per "all GPUs" of a node): a repeated alert finds it
CREATE UNIQUE INDEX gpu_faults_open ON gpu_faults (cluster_id, node, coalesce(gpu_index, -1))
    WHERE resolved_at IS NULL;
CREATE INDEX gpu_faults_cluster ON gpu_faults (cluster_id, id);
ALTER TABLE gpu_faults ENABLE ROW LEVEL SECURITY;
-- platform data about machines: platform admins and auditors read it, workers too
CREATE POLICY gpu_faults_read ON gpu_faults FOR SELECT
    USING (aidc_ctx_platform_admin() OR aidc_ctx_role('auditor'));
CREATE POLICY gpu_faults_insert ON gpu_faults FOR INSERT WITH CHECK (aidc_ctx_platform_admin());
CREATE POLICY gpu_faults_update ON gpu_faults FOR UPDATE USING (aidc_ctx_platform_admin());

-- GPUs of each type of cluster cid that its open faults take out of service:
-- counted, those the backend's inventory still counts (a drained node has left
-- it already), and all of them. A fault of every GPU, or any fault on a node
-- drained whole, takes all the node's GPUs.
CREATE FUNCTION aidc_gpus_out(cid uuid)
RETURNS TABLE (resource text, counted bigint, total bigint)
LANGUAGE sql STABLE AS $$
    SELECT 'gpu:' || n.gpu_type,
           sum(o.n) FILTER (WHERE n.usable)::bigint, sum(o.n)::bigint
      FROM cluster_nodes n
      CROSS JOIN LATERAL (
          SELECT CASE WHEN NOT n.per_gpu OR bool_or(f.gpu_index IS NULL) THEN n.gpus
                      ELSE count(DISTINCT f.gpu_index) FILTER (
                               WHERE f.gpu_index >= n.first_index
                                 AND f.gpu_index < n.first_index + n.gpus) END AS n
            FROM gpu_faults f
           WHERE f.cluster_id = n.cluster_id AND f.node = n.node AND f.resolved_at IS NULL
          HAVING count(*) > 0) o
     WHERE n.cluster_id = cid AND n.gpus > 0
     GROUP BY 1
$$;

-- Faulty GPUs per cluster and type, for /metrics (aidc_gpus_faulty): the GPUs
-- faults name (every GPU of the node for a fault of all), 0 for a type of the
-- cluster's nodes without any, read at scrape time whoever asks.
CREATE FUNCTION aidc_gpus_faulty()
RETURNS TABLE (cluster text, gpu_type text, gpus bigint)
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT c.name, n.gpu_type,
           coalesce(sum(CASE WHEN o.whole THEN n.gpus ELSE o.n END), 0)::bigint
      FROM cluster_nodes n JOIN clusters c ON c.id = n.cluster_id
      LEFT JOIN LATERAL (
          SELECT bool_or(f.gpu_index IS NULL) AS whole,
                 count(DISTINCT f.gpu_index) FILTER (
                     WHERE f.gpu_index >= n.first_index
                       AND f.gpu_index < n.first_index + n.gpus) AS n
            FROM gpu_faults f
           WHERE f.cluster_id = n.cluster_id AND f.node = n.node AND f.resolved_at IS NULL
          HAVING count(*) > 0) o ON true
     WHERE n.gpus > 0
     GROUP BY 1, 2
$$;
REVOKE ALL ON FUNCTION aidc_gpus_faulty() FROM PUBLIC;

-- ---- the inventory without the faulty GPUs ------------------------------------------

-- What the backend reported, and the GPUs faults take out of it: total (what
-- admission places work on) is reported minus the counted ones, so every
-- reader of the inventory sees the smaller figure at once; faulty is what
-- faults hold back in all, so "could this job ever run" and the quota
-- capacity still count GPUs that come back.
ALTER TABLE cluster_inventory ADD COLUMN reported bigint CHECK (reported >= 0),
                              ADD COLUMN faulty bigint NOT NULL DEFAULT 0 CHECK (faulty >= 0);
UPDATE cluster_inventory SET reported = total;

-- Bring the totals of cluster cid in line with its open faults. A GPU type
-- whose only nodes are drained has left the backend's report: its row stays
-- (total 0) while faults hold GPUs of it, so they show as faulty.
CREATE FUNCTION aidc_inventory_apply_faults(cid uuid) RETURNS void
LANGUAGE sql AS $$
    WITH k AS (SELECT * FROM cluster_inventory WHERE cluster_id = cid),
    want AS (
        SELECT coalesce(k.resource, o.resource) AS resource,
               coalesce(k.reported, k.total, 0) AS reported,
               greatest(0, coalesce(k.reported, k.total, 0) - coalesce(o.counted, 0)) AS total,
               coalesce(o.total, 0) AS faulty
          FROM k FULL JOIN aidc_gpus_out(cid) o ON o.resource = k.resource)
    INSERT INTO cluster_inventory AS i (cluster_id, resource, total, reported, faulty)
    SELECT cid, resource, total, reported, faulty FROM want
    ON CONFLICT (cluster_id, resource) DO UPDATE
       SET total = EXCLUDED.total, faulty = EXCLUDED.faulty, updated_at = now()
     WHERE (i.total, i.faulty) IS DISTINCT FROM (EXCLUDED.total, EXCLUDED.faulty)
$$;

-- The inventory as GET /clusters/{name} shows it: faulty beside total and allocated.
CREATE OR REPLACE FUNCTION aidc_cluster_inventory(cid uuid) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT coalesce(json_object_agg(i.resource, json_build_object(
               'total', i.total,
               'allocated', coalesce((
                   SELECT CASE WHEN i.resource = 'cpu' THEN sum(j.cpus * j.nodes)
                               WHEN i.resource = 'memory_gib' THEN sum(j.memory_gib * j.nodes)
                               ELSE sum(j.gpus * j.nodes) FILTER (WHERE 'gpu:' || j.gpu_type = i.resource)
                          END
                     FROM jobs j
                    WHERE j.cluster_id = cid AND j.state IN ('admitted', 'pending', 'running')), 0),
               'faulty', i.faulty)
           ORDER BY i.resource), '{}'::json)
      FROM cluster_inventory i WHERE i.cluster_id = cid
$$;

-- ---- jobs stopped by a fault ----------------------------------------------------------

-- the fault that asked a job to stop (preempt_by names a job; this a fault): the
-- requeue names it in the job's history, and the run ends as preempted, so the
-- invoice credits its lost GPU time as it credits a preemption's
ALTER TABLE jobs ADD COLUMN preempt_fault bigint REFERENCES gpu_faults (id) ON DELETE SET NULL;

-- ---- node drains through the outbox --------------------------------------------------

-- A row is either a job's (submit, cancel, preempt) or a node's (drain,
-- undrain): rows of one node are delivered in order, as those of one job.
ALTER TABLE outbox ALTER COLUMN job_id DROP NOT NULL,
                   ALTER COLUMN tenant_id DROP NOT NULL,
                   ADD COLUMN node text,
                   ADD COLUMN details jsonb;
ALTER TABLE outbox DROP CONSTRAINT outbox_action_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_action_check
    CHECK (action IN ('submit', 'cancel', 'preempt', 'drain', 'undrain'));
ALTER TABLE outbox ADD CONSTRAINT outbox_job_or_node
    CHECK (CASE WHEN action IN ('drain', 'undrain') THEN node IS NOT NULL AND job_id IS NULL
                ELSE node IS NULL AND job_id IS NOT NULL AND tenant_id IS NOT NULL END);
CREATE INDEX outbox_node ON outbox (cluster_id, node, id) WHERE node IS NOT NULL;
-- a fault request (a platform admin) reads a node's last drain to know whether to queue
-- one; the fault list shows it to platform admins and auditors
CREATE POLICY outbox_node_read ON outbox FOR SELECT
    USING (node IS NOT NULL AND (aidc_ctx_platform_admin() OR aidc_ctx_role('auditor')));

-- ---- privileges --------------------------------------------------------------------

-- the grants before this migration stay as they are, under a name of this migration's
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0008;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0008(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON cluster_nodes TO %s', app);
    -- a fault is resolved, never deleted
    EXECUTE format('GRANT SELECT, INSERT, UPDATE ON gpu_faults TO %s', app);
    EXECUTE format('REVOKE DELETE, TRUNCATE ON gpu_faults FROM %s', app);
    EXECUTE format('GRANT EXECUTE ON FUNCTION aidc_gpus_faulty() TO %s', app);
END $$;
