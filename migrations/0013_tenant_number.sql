-- 0013_tenant_number.sql - a number per tenant, never reused: the local
-- executor runs a tenant's jobs as uid/gid options.uid_range.first + number
-- (docs/operations.md "The local executor"), so files one tenant's jobs make
-- are not another's, on this machine and on shared storage later.
--
-- An identity column: existing tenants are numbered as the column is added,
-- new ones as they are inserted; the application cannot choose or change one.

ALTER TABLE tenants ADD COLUMN number integer GENERATED ALWAYS AS IDENTITY;
ALTER TABLE tenants ADD CONSTRAINT tenants_number_key UNIQUE (number);
