// roles.js - who may see which page, mirroring the API's permission table
// (../API.md "Roles"). The server decides; this only hides what would be 403.

export const has = (me, role) => !!me && me.roles.includes(role);
export const platformAdmin = (me) => has(me, 'platform_admin');
export const finance = (me) => has(me, 'finance') || platformAdmin(me);
export const auditor = (me) => has(me, 'auditor') || platformAdmin(me);
export const anyone = (me) => !!me;
export const seesAllTenants = (me) => platformAdmin(me) || has(me, 'finance') || has(me, 'auditor');

export function tenantRole(me, tenant) {
  const m = me && me.memberships.find((x) => x.tenant === tenant);
  return m ? m.role : null;
}

// a member of a tenant that keeps the default reads only its own jobs there
// (the API's rule, members_see_all_jobs off); everyone else reads all of them
export function ownJobsOnly(me, tenant) {
  const m = me && me.memberships.find((x) => x.tenant === tenant);
  return !!m && m.role === 'member' && m.members_see_all_jobs !== true && !platformAdmin(me);
}

// reads the tenant's jobs, quota, images: any member role, or a platform admin
export const tenantReader = (me, tenant) => !!tenant && (!!tenantRole(me, tenant) || platformAdmin(me));
export const canSubmit = (me, tenant) => ['member', 'tenant_admin'].includes(tenantRole(me, tenant));
// the tenant's storage spaces: its members and tenant admins (viewers do not use them)
export const usesFiles = canSubmit;
// interactive sessions (notebooks, web apps): whoever may submit jobs starts them
export const usesSessions = canSubmit;
export const tenantAdmin = (me, tenant) => tenantRole(me, tenant) === 'tenant_admin' || (platformAdmin(me) && !!tenant);
export const usageReader = (me, tenant) => tenantReader(me, tenant) || finance(me);

// Where a user lands after sign-in: the page of their global role (a platform
// admin's work is the platform, whether or not they belong to a tenant), else
// their tenant's dashboard; without either, their API tokens.
export function home(me, tenant) {
  if (platformAdmin(me)) return '#/platform';
  if (has(me, 'finance')) return '#/finance';
  if (has(me, 'auditor')) return '#/audit';
  if (tenantReader(me, tenant)) return '#/dashboard';
  return '#/tokens';
}
