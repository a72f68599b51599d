-- 0005_approvals.sql - dual approval: one pending request per operation, and
-- deleted tenants gone for their members at the next request.

-- Asking again for an operation that already waits for approval finds the
-- pending request instead of adding a second one (api/approvals.c inserts
-- with ON CONFLICT on this index). jsonb's text form is canonical (key order,
-- spacing), so equal bodies hash alike.
CREATE UNIQUE INDEX approvals_pending_op ON approvals (method, path, md5(coalesce(body::text, '')))
    WHERE state = 'pending';

-- Memberships of deleted tenants no longer count: the tenant vanishes for its
-- members (404) and its tenant-bound tokens stop (the membership has ended).
CREATE OR REPLACE FUNCTION aidc_user_memberships(uid uuid) RETURNS json
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public, pg_temp AS $$
    SELECT coalesce(json_agg(json_build_object('tenant_id', t.id, 'tenant', t.slug,
                                               'role', m.role, 'suspended', t.suspended)
                             ORDER BY t.slug), '[]'::json)
      FROM memberships m JOIN tenants t ON t.id = m.tenant_id
     WHERE m.user_id = uid AND t.deleted_at IS NULL
$$;

-- A deletion changes what each member may do, as a suspension does: bump
-- their auth_version and the platform's epoch, so cached actors are reloaded.
CREATE OR REPLACE FUNCTION aidc_bump_tenant_members() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
    IF NEW.suspended IS DISTINCT FROM OLD.suspended
       OR NEW.deleted_at IS DISTINCT FROM OLD.deleted_at THEN
        UPDATE users SET auth_version = auth_version + 1
         WHERE id IN (SELECT user_id FROM memberships WHERE tenant_id = NEW.id);
    END IF;
    RETURN NULL;
END $$;
DROP TRIGGER tenants_auth_version ON tenants;
CREATE TRIGGER tenants_auth_version AFTER UPDATE OF suspended, deleted_at ON tenants
    FOR EACH ROW EXECUTE FUNCTION aidc_bump_tenant_members();
DROP TRIGGER tenants_auth_epoch ON tenants;
CREATE TRIGGER tenants_auth_epoch AFTER UPDATE OF suspended, deleted_at ON tenants
    FOR EACH STATEMENT EXECUTE FUNCTION aidc_bump_auth_epoch();
