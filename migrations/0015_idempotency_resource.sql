-- 0015_idempotency_resource.sql - what an idempotent request changed, kept with its
-- answer: a replay's audit event names the job (or project, token ...) it answers for,
-- instead of {type: null, id: null}.
ALTER TABLE idempotency_keys
    ADD COLUMN resource_type text CHECK (char_length(resource_type) <= 64),
    ADD COLUMN resource_id text CHECK (char_length(resource_id) <= 1024);
