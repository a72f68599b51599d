-- 0011_token_node.sql - an API token may be bound to one node (docs/security.md,
-- open finding of issue 11: "node records name their host freely").
--
-- A node agent's audit:ingest token (or a gpu-faults:write token of one node)
-- bound to a node may only write records and fault reports naming that node:
-- a compromised node cannot write another's command history or report another
-- node's GPUs faulty. NULL: not bound (as before).

ALTER TABLE api_tokens ADD COLUMN node text
    CHECK (node IS NULL OR node ~ '^[A-Za-z0-9._-]{1,253}$');
