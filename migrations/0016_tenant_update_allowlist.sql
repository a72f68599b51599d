-- 0016_tenant_update_allowlist.sql - the guard on a tenant admin's update of its
-- tenant (0014) named the columns it may not change; a column added later would
-- have been open to it by default. It now names what it may change, and an unset
-- context (aidc.all missing: NULL, not false) counts as "not a platform admin".
CREATE OR REPLACE FUNCTION aidc_tenant_update_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF aidc_ctx_platform_admin() IS NOT TRUE
       AND (to_jsonb(NEW) - 'members_see_all_jobs' - 'updated_at')
           IS DISTINCT FROM (to_jsonb(OLD) - 'members_see_all_jobs' - 'updated_at') THEN
        RAISE EXCEPTION 'a tenant admin changes only whether members see each other''s jobs'
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END $$;
