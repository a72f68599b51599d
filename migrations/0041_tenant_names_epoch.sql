-- 0041_tenant_names_epoch.sql - what finds a tenant by its slug moves the auth epoch.
--
-- aidcd remembers the tenant a platform-wide role names by slug (id and
-- suspension) at the auth epoch it looked it up at, and a request that uses the
-- memory holds only while the epoch is unchanged (server/tenantcache.h). A
-- suspension moved the epoch already (0001_init.sql), and so did a deletion,
-- which also suspends. The slug itself, deleted_at alone, and a row deleted or
-- truncated had no trigger: no request changes them that way, but a change by
-- hand must not leave a replica finding a tenant by a name it no longer has.
CREATE TRIGGER tenants_names_auth_epoch AFTER UPDATE OF slug, deleted_at OR DELETE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
CREATE TRIGGER tenants_truncate_auth_epoch AFTER TRUNCATE ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
