-- 0023_templates.sql - job templates (docs/templates.md): a job described
-- once, with typed parameters, submitted with a few values.
--
-- * job_templates: platform templates (tenant_id NULL: every signed-in user
--   reads them, platform admins write them) and a tenant's own (its readers
--   read them, its admins write them). A tenant template of a name shadows
--   the platform one of that name when a job is submitted.
-- * spec: the template less its name, as checked by api/tplcheck.c
--   (description, kind, image, command or script, resources, mounts, env,
--   parameters); its size is bounded there and again here.
-- * three platform templates to start from: pytorch-ddp, jupyter,
--   batch-inference.

CREATE TABLE job_templates (
    id          uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    tenant_id   uuid REFERENCES tenants (id),
    name        text NOT NULL CHECK (name ~ '^[a-z][a-z0-9-]{1,62}$'),
    spec        jsonb NOT NULL CHECK (jsonb_typeof(spec) = 'object'
                                      AND octet_length(spec::text) <= 131072),
    created_by  text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX job_templates_platform_name ON job_templates (name) WHERE tenant_id IS NULL;
CREATE UNIQUE INDEX job_templates_tenant_name ON job_templates (tenant_id, name)
    WHERE tenant_id IS NOT NULL;

-- Platform rows: read by everyone the application serves (it asks only for
-- signed-in users), written by platform admins. Tenant rows: as the tenant's
-- other rows, written by its admins.
ALTER TABLE job_templates ENABLE ROW LEVEL SECURITY;
CREATE POLICY job_templates_read ON job_templates FOR SELECT
    USING (tenant_id IS NULL OR aidc_can_read(tenant_id));
CREATE POLICY job_templates_insert ON job_templates FOR INSERT
    WITH CHECK (CASE WHEN tenant_id IS NULL THEN aidc_ctx_platform_admin()
                     ELSE aidc_can_admin(tenant_id) END);
CREATE POLICY job_templates_update ON job_templates FOR UPDATE
    USING (CASE WHEN tenant_id IS NULL THEN aidc_ctx_platform_admin()
                ELSE aidc_can_admin(tenant_id) END)
    WITH CHECK (CASE WHEN tenant_id IS NULL THEN aidc_ctx_platform_admin()
                     ELSE aidc_can_admin(tenant_id) END);
CREATE POLICY job_templates_delete ON job_templates FOR DELETE
    USING (CASE WHEN tenant_id IS NULL THEN aidc_ctx_platform_admin()
                ELSE aidc_can_admin(tenant_id) END);

-- ---- seeded platform templates ----------------------------------------------

-- torchrun once per node of the job, one process per GPU. Slurm gives a
-- multi-node job's batch step (on its first node) the node count
-- (SLURM_JOB_NUM_NODES) and, in each task of an srun step, the node's rank
-- (SLURM_NODEID) and the address srun ran from (SLURM_LAUNCH_NODE_IPADDR: the
-- first node). The script turns them into what torchrun's static rendezvous
-- needs (NNODES, NODE_RANK, MASTER_ADDR, MASTER_PORT): in the batch step it
-- runs itself again as one srun task per node; in a task (or with pyxis,
-- whose container already is a step of one task per node), or on one node
-- (local, Kubernetes), it starts torchrun. Parameters go in outside quotes.
INSERT INTO job_templates (tenant_id, name, created_by, spec) VALUES (NULL, 'pytorch-ddp', 'aidc',
jsonb_build_object(
  'description', 'PyTorch DDP on N nodes: torchrun on every node, one process per GPU',
  'kind', 'batch',
  'image', 'docker.io/pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime',
  'resources', jsonb_build_object('nodes', '{{nodes}}', 'gpus', '{{gpus_per_node}}',
                                  'gpu_type', '{{gpu_type}}', 'cpus', '{{cpus_per_node}}',
                                  'memory_gib', '{{memory_gib}}',
                                  'time_limit_minutes', '{{time_limit_minutes}}'),
  'mounts', jsonb_build_array(jsonb_build_object('space', 'project'),
                              jsonb_build_object('space', 'home')),
  'env', jsonb_build_object('OMP_NUM_THREADS', '1'),
  'script', $s$#!/bin/bash
# PyTorch DDP: torchrun once per node, one process per GPU (docs/templates.md)
set -euo pipefail
export NNODES=${SLURM_JOB_NUM_NODES:-1} MASTER_PORT=${MASTER_PORT:-29500}
if [ "$NNODES" -gt 1 ] && [ -z "${SLURM_STEP_ID:-}" ]; then
    # Slurm's batch step, on the first node: this script once per node, as srun tasks
    exec srun --ntasks-per-node=1 --kill-on-bad-exit=1 /bin/bash -c "$(cat "$0")"
fi
export NODE_RANK=${SLURM_NODEID:-0} MASTER_ADDR=${SLURM_LAUNCH_NODE_IPADDR:-127.0.0.1}
exec torchrun --nnodes="$NNODES" --node_rank="$NODE_RANK" --nproc_per_node={{gpus_per_node}} \
    --master_addr="$MASTER_ADDR" --master_port="$MASTER_PORT" {{entrypoint}}
$s$,
  'parameters', jsonb_build_array(
    jsonb_build_object('name', 'entrypoint', 'type', 'string', 'required', true,
                       'description', 'the training script, e.g. /project/train.py'),
    jsonb_build_object('name', 'nodes', 'type', 'integer', 'default', 2, 'min', 1, 'max', 64,
                       'description', 'nodes'),
    jsonb_build_object('name', 'gpus_per_node', 'type', 'integer', 'default', 8, 'min', 1, 'max', 64,
                       'description', 'GPUs (and processes) per node'),
    jsonb_build_object('name', 'gpu_type', 'type', 'string', 'required', true,
                       'pattern', '[a-z0-9][a-z0-9_-]*', 'description', 'GPU type'),
    jsonb_build_object('name', 'cpus_per_node', 'type', 'integer', 'default', 32, 'min', 1, 'max', 1024,
                       'description', 'CPUs per node'),
    jsonb_build_object('name', 'memory_gib', 'type', 'integer', 'default', 256, 'min', 1, 'max', 16384,
                       'description', 'memory per node, GiB'),
    jsonb_build_object('name', 'time_limit_minutes', 'type', 'integer', 'default', 720, 'min', 1,
                       'max', 525600, 'description', 'time limit, minutes'))));

-- An interactive template: started through POST …/sessions (docs/sessions.md);
-- no command, so aidc starts Jupyter.
INSERT INTO job_templates (tenant_id, name, created_by, spec) VALUES (NULL, 'jupyter', 'aidc',
jsonb_build_object(
  'description', 'Jupyter: a notebook on the GPU pool, opened in the browser',
  'kind', 'interactive',
  'resources', jsonb_build_object('gpus', '{{gpus}}', 'gpu_type', '{{gpu_type}}',
                                  'cpus', '{{cpus}}', 'memory_gib', '{{memory_gib}}',
                                  'time_limit_minutes', '{{time_limit_minutes}}'),
  'parameters', jsonb_build_array(
    jsonb_build_object('name', 'gpus', 'type', 'integer', 'default', 0, 'min', 0, 'max', 8,
                       'description', 'GPUs'),
    jsonb_build_object('name', 'gpu_type', 'type', 'string', 'pattern', '[a-z0-9][a-z0-9_-]*',
                       'description', 'GPU type (with GPUs)'),
    jsonb_build_object('name', 'cpus', 'type', 'integer', 'default', 4, 'min', 1, 'max', 64,
                       'description', 'CPUs'),
    jsonb_build_object('name', 'memory_gib', 'type', 'integer', 'default', 16, 'min', 1, 'max', 512,
                       'description', 'memory, GiB'),
    jsonb_build_object('name', 'time_limit_minutes', 'type', 'integer', 'default', 240, 'min', 10,
                       'max', 1440, 'description', 'time limit, minutes'))));

INSERT INTO job_templates (tenant_id, name, created_by, spec) VALUES (NULL, 'batch-inference', 'aidc',
jsonb_build_object(
  'description', 'Batch inference: a model over a folder of inputs, results into another',
  'kind', 'batch',
  'image', 'docker.io/pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime',
  'resources', jsonb_build_object('gpus', '{{gpus}}', 'gpu_type', '{{gpu_type}}',
                                  'cpus', 8, 'memory_gib', 64,
                                  'time_limit_minutes', '{{time_limit_minutes}}'),
  'mounts', jsonb_build_array(jsonb_build_object('space', 'project')),
  'script', $s$#!/bin/sh
# Batch inference (docs/templates.md): the program reads --input, writes --output
set -eu
mkdir -p {{output}}
exec python3 {{program}} --model {{model}} --input {{input}} --output {{output}} \
    --batch-size {{batch_size}} --precision {{precision}}
$s$,
  'parameters', jsonb_build_array(
    jsonb_build_object('name', 'program', 'type', 'string', 'required', true,
                       'description', 'the inference program (e.g. /project/infer.py)'),
    jsonb_build_object('name', 'model', 'type', 'string', 'required', true,
                       'description', 'the model: a path or a hub name'),
    jsonb_build_object('name', 'input', 'type', 'string', 'required', true,
                       'description', 'folder of inputs'),
    jsonb_build_object('name', 'output', 'type', 'string', 'default', '/project/outputs',
                       'description', 'folder for the results'),
    jsonb_build_object('name', 'batch_size', 'type', 'integer', 'default', 32, 'min', 1,
                       'max', 4096, 'description', 'batch size'),
    jsonb_build_object('name', 'precision', 'type', 'choice', 'default', 'bf16',
                       'choices', jsonb_build_array('fp32', 'fp16', 'bf16'),
                       'description', 'numeric precision'),
    jsonb_build_object('name', 'gpus', 'type', 'integer', 'default', 1, 'min', 1, 'max', 8,
                       'description', 'GPUs'),
    jsonb_build_object('name', 'gpu_type', 'type', 'string', 'required', true,
                       'pattern', '[a-z0-9][a-z0-9_-]*', 'description', 'GPU type'),
    jsonb_build_object('name', 'time_limit_minutes', 'type', 'integer', 'default', 120, 'min', 1,
                       'max', 10080, 'description', 'time limit, minutes'))));

-- aidc_grant_app is wrapped, as in 0009.
ALTER FUNCTION aidc_grant_app(regrole) RENAME TO aidc_grant_app_before_0023;
CREATE FUNCTION aidc_grant_app(app regrole) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM aidc_grant_app_before_0023(app);
    EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON job_templates TO %s', app);
END $$;
