-- 0041_tenant_names_epoch.sql - what finds a tenant by its slug moves the auth epoch.
--
-- aidcd remembers the tenant a platform-wide role names by slug (id and
-- suspension) at the auth epoch it looked it up at, and a request that uses the
-- memory holds only while the epoch is unchanged (server/tenantcache.h).
-- Suspension and deletion (deleted_at) moved the epoch already (0001, 0014). A
-- changed slug, a row deleted and the table truncated did not: no request does
-- that, but a change by hand must not leave a replica finding a tenant by a
-- name it no longer has.
CREATE TRIGGER tenants_names_auth_epoch AFTER UPDATE OF slug OR DELETE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
CREATE TRIGGER tenants_truncate_auth_epoch AFTER TRUNCATE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
