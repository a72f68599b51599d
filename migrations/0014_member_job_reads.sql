-- 0014_member_job_reads.sql - members read their own jobs (../shared/API.md:
-- "a member reads and cancels its own jobs"); tenant admins, viewers and the
-- platform-wide roles read all of a tenant's. A tenant may let its members see
-- each other's jobs (members_see_all_jobs, set by its tenant admin).
--
-- The rule is the database's, for every read of a job and of its events: the
-- context names the tenants where the actor reads only its own jobs
-- (aidc.own_jobs_tenants, set by aidcd for a member's tenants that keep the
-- default), and the read policies of jobs and job_events take it into account.

ALTER TABLE tenants ADD COLUMN members_see_all_jobs boolean NOT NULL DEFAULT false;

CREATE FUNCTION aidc_own_jobs_only(t uuid) RETURNS boolean
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT t = ANY (aidc_ctx_uuids('aidc.own_jobs_tenants'))
$$;

ALTER POLICY jobs_read ON jobs
    USING (aidc_can_read(tenant_id)
           AND (NOT aidc_own_jobs_only(tenant_id) OR user_id = aidc_ctx_user()));
-- an event is read as its job is (the subquery is under the jobs policy above)
ALTER POLICY job_events_read ON job_events
    USING (aidc_can_read(tenant_id)
           AND (NOT aidc_own_jobs_only(tenant_id)
                OR EXISTS (SELECT 1 FROM jobs j WHERE j.id = job_events.job_id)));

-- The setting travels with the memberships an actor is loaded with ...
CREATE OR REPLACE FUNCTION aidc_user_memberships(uid uuid) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT coalesce(json_agg(json_build_object('tenant_id', t.id, 'tenant', t.slug,
                                               'role', m.role, 'suspended', t.suspended,
                                               'members_see_all_jobs', t.members_see_all_jobs)
                             ORDER BY t.slug), '[]'::json)
      FROM memberships m JOIN tenants t ON t.id = m.tenant_id
     WHERE m.user_id = uid AND t.deleted_at IS NULL
$$;
REVOKE ALL ON FUNCTION aidc_user_memberships(uuid) FROM PUBLIC;

-- ... so a change reloads them, as a suspension does.
CREATE OR REPLACE FUNCTION aidc_bump_tenant_members() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NEW.suspended IS DISTINCT FROM OLD.suspended
       OR NEW.deleted_at IS DISTINCT FROM OLD.deleted_at
       OR NEW.members_see_all_jobs IS DISTINCT FROM OLD.members_see_all_jobs THEN
        UPDATE users SET auth_version = auth_version + 1
         WHERE id IN (SELECT user_id FROM memberships WHERE tenant_id = NEW.id);
    END IF;
    RETURN NULL;
END $$;
REVOKE ALL ON FUNCTION aidc_bump_tenant_members() FROM PUBLIC;
DROP TRIGGER tenants_auth_version ON tenants;
CREATE TRIGGER tenants_auth_version AFTER UPDATE OF suspended, deleted_at, members_see_all_jobs
    ON tenants FOR EACH ROW EXECUTE FUNCTION aidc_bump_tenant_members();
DROP TRIGGER tenants_auth_epoch ON tenants;
CREATE TRIGGER tenants_auth_epoch AFTER UPDATE OF suspended, deleted_at, members_see_all_jobs
    ON tenants FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();

-- A tenant admin changes this setting of its own tenant, and nothing else of it:
-- name, suspension and deletion stay the platform admins'.
CREATE POLICY tenants_update_admin ON tenants FOR UPDATE USING (aidc_can_admin(id));
CREATE FUNCTION aidc_tenant_update_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF NOT aidc_ctx_platform_admin()
       AND (NEW.slug IS DISTINCT FROM OLD.slug OR NEW.name IS DISTINCT FROM OLD.name
            OR NEW.suspended IS DISTINCT FROM OLD.suspended
            OR NEW.deleted_at IS DISTINCT FROM OLD.deleted_at
            OR NEW.storage_over_quota_at IS DISTINCT FROM OLD.storage_over_quota_at) THEN
        RAISE EXCEPTION 'only platform admins change a tenant''s name, suspension or deletion'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER tenants_update_guard BEFORE UPDATE ON tenants
    FOR EACH ROW EXECUTE FUNCTION aidc_tenant_update_guard();
