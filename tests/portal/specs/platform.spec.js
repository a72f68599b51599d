// platform.spec.js - the platform admin page (#/platform): tenants (create,
// suspend/resume, delete asked and withdrawn), a tenant quota raise that waits
// for a second admin (admin2 approves it, then the quota shows), clusters with
// inventory and health, registries with their sync state and report, users
// (listed, created, edited; a role grant rejected by admin2 with a reason),
// and every tab at 390 px. Names made here are unique per run.
const { test, expect, world, login, visit, allowHttp } = require('../fixtures');

const uniq = (prefix) => `${prefix}-${Date.now().toString(36)}`;

// A second browser (another admin): its console errors and failed requests are
// collected like the fixture's page does, and must be none.
async function secondAdmin(browser) {
  const context = await browser.newContext({ baseURL: world.base });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => problems.push(String(e)));
  page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
  page.on('response', (r) => {
    if (r.status() >= 400 && !(r.status() === 401 && r.url().endsWith('/api/v1/me')))
      problems.push(`${r.status()} ${r.url()}`);
  });
  await login(page, 'admin2');
  return { context, page, problems };
}

const tab = (page, name) => page.locator('nav.tabs').getByRole('link', { name });

test('tenants and a quota raise approved by a second admin', async ({ page, browser }) => {
  test.setTimeout(120_000);
  await login(page, 'admin', world.admin_password);
  await expect(page.locator('#nav')).toContainText('Platform admin');
  await visit(page, '#/platform', 'platform-tenants');
  await expect(tab(page, 'Tenants')).toHaveAttribute('aria-current', 'page');
  await expect(page.locator('tr[data-tenant="physics"]')).toContainText('active');

  // create a tenant
  const slug = uniq('pt');
  await page.getByLabel('Short name (slug)').fill(slug);
  await page.getByLabel('Name', { exact: true }).fill('Platform spec tenant');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await expect(page.locator('#main [role="status"]').first()).toContainText(`Tenant ${slug} created.`);
  const row = page.locator(`tr[data-tenant="${slug}"]`);
  await expect(row).toContainText('Platform spec tenant');
  await expect(row).toContainText('active');
  // a slug taken: the server's 409 in the form
  allowHttp(page, 409, '/api/v1/tenants');
  await page.getByLabel('Short name (slug)').fill(slug);
  await page.getByLabel('Name', { exact: true }).fill('Again');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await expect(page.locator('form .form-error')).toContainText(`tenant slug "${slug}" is taken`);

  // suspend (asks first) and resume
  await row.getByRole('button', { name: `Suspend ${slug}` }).click();
  await row.getByRole('button', { name: 'Suspend', exact: true }).click();
  await expect(row).toContainText('suspended');
  // the redrawn table took the Confirm button away: focus is on the outcome
  await expect(page.locator('#main [role="status"]').first()).toBeFocused();
  await row.getByRole('button', { name: `Resume ${slug}` }).click();
  await expect(row).toContainText('active');

  // deleting waits for approval; withdrawn from "my requests"
  await row.getByRole('button', { name: `Delete ${slug}` }).click();
  await row.getByRole('button', { name: 'Delete', exact: true }).click();
  await expect(page.locator('#main [role="status"]').first()).toContainText('Sent for approval: another platform admin must approve it.');
  await expect(page.locator('#main [role="status"]').first()).toContainText(`delete tenant "${slug}"`);
  await expect(row).toContainText('deletion awaits approval');
  await visit(page, '#/platform?tab=approvals', 'platform-approvals-mine');
  const mine = page.locator('article', { hasText: `delete tenant "${slug}"` });
  await expect(mine).toContainText('Waiting for another platform admin to approve.');
  await expect(mine.getByRole('button', { name: 'Approve' })).toHaveCount(0);
  await mine.getByRole('button', { name: 'Withdraw' }).click();
  await mine.getByRole('button', { name: 'Withdraw' }).click(); // the confirmation
  await expect(page.locator('#main [role="status"]').first()).toContainText(`Request withdrawn: delete tenant "${slug}"`);
  await expect(mine).toHaveCount(0);

  // raise its quota: 202, awaits approval
  await visit(page, `#/platform?tab=quotas&tenant=${slug}`, 'platform-quotas');
  await expect(page.locator('#main').getByLabel('Tenant', { exact: true })).toHaveValue(slug);
  const editor = page.locator(`[data-tenant="${slug}"]`);
  // GPU types come from the clusters' inventory
  await expect(editor.locator('fieldset[data-resource="gpu:a100"]')).toContainText('Clusters offer 2.');
  await expect(editor.locator('fieldset[data-resource="gpu:t4"]')).toBeVisible();
  // a guarantee the clusters cannot give: the server's 422 next to the field
  allowHttp(page, 422, `/tenants/${slug}/quota`);
  const a100 = editor.locator('fieldset[data-resource="gpu:a100"]');
  await a100.getByLabel('Guaranteed').fill('5');
  await a100.getByLabel('Limit').fill('5');
  await page.getByRole('button', { name: 'Save quota' }).click();
  await expect(a100.locator('.field-error')).toContainText('the clusters offer 2');
  await a100.getByLabel('Guaranteed').fill('0');
  await a100.getByLabel('Limit').fill('1');
  const cpu = editor.locator('fieldset[data-resource="cpu"]');
  await cpu.getByLabel('Guaranteed').fill('4');
  await cpu.getByLabel('Limit').fill('8');
  await page.getByRole('button', { name: 'Save quota' }).click();
  const status = page.locator('#main [role="status"]');
  await expect(status).toContainText('Sent for approval: another platform admin must approve it.');
  await expect(status).toContainText(`raise the guaranteed quota of tenant "${slug}": cpu 0 -> 4`);
  await expect(page.locator('.note', { hasText: 'Waiting for approval:' })).toContainText('(asked by admin)');

  // admin2 approves it among the approvals waiting for them
  const other = await secondAdmin(browser);
  try {
    await visit(other.page, '#/platform?tab=approvals', 'platform-approvals-admin2');
    await expect(tab(other.page, /Approvals \(\d+\)/)).toBeVisible();
    const req = other.page.locator('article', { hasText: `raise the guaranteed quota of tenant "${slug}"` });
    await expect(req).toContainText('Requested by');
    await expect(req).toContainText('admin');
    await expect(req).toContainText(`PUT /api/v1/tenants/${slug}/quota`);
    await req.getByRole('button', { name: 'Approve' }).click();
    await expect(other.page.locator('#main [role="status"]').first()).toContainText(
      `Approved and done: raise the guaranteed quota of tenant "${slug}": cpu 0 -> 4 (HTTP 200).`);
    await expect(req).toHaveCount(0);
    // focus went to the card now in its place, or to the section's heading
    expect(await other.page.evaluate(() => document.activeElement.tagName)).toMatch(/^(ARTICLE|H2)$/);
    expect(other.problems).toEqual([]);
  } finally {
    await other.context.close();
  }

  // the quota is now in force
  await page.reload();
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await expect(cpu.getByLabel('Guaranteed')).toHaveValue('4');
  await expect(cpu.getByLabel('Limit')).toHaveValue('8');
  await expect(a100.getByLabel('Limit')).toHaveValue('1');
  await expect(page.locator('.note', { hasText: 'Waiting for approval:' })).toHaveCount(0);
});

test('switching the quota tenant: Save waits for the quota of the tenant picked', async ({ page }) => {
  await login(page, 'admin', world.admin_password);
  await visit(page, '#/platform?tab=quotas&tenant=physics', null);
  const main = page.locator('#main');
  const pick = main.getByLabel('Tenant', { exact: true });
  const save = main.getByRole('button', { name: 'Save quota' });
  const editors = main.locator('form [data-tenant]');
  await expect(main.locator('[data-tenant="physics"] fieldset[data-resource="gpu:a100"]').getByLabel('Guaranteed'))
    .toHaveValue('2');
  await expect(save).toBeEnabled();

  // chem's quota answers late: meanwhile physics' editor is gone and Save disabled
  const chemQuota = '**/api/v1/tenants/chem/quota';
  let release;
  const gate = new Promise((resolve) => { release = resolve; });
  await page.route(chemQuota, async (route) => { await gate; await route.continue(); });
  await pick.selectOption('chem');
  await expect(save).toBeDisabled();
  await expect(editors).toHaveCount(0);
  release();
  const a100 = main.locator('[data-tenant="chem"] fieldset[data-resource="gpu:a100"]');
  await expect(a100.getByLabel('Guaranteed')).toHaveValue('0');
  await expect(a100.getByLabel('Limit')).toHaveValue('2');
  await expect(save).toBeEnabled();
  await page.unroute(chemQuota);

  // a quota that fails to load: its error, no editor, and Save stays disabled
  const physicsQuota = '**/api/v1/tenants/physics/quota';
  allowHttp(page, 503, '/api/v1/tenants/physics/quota');
  await page.route(physicsQuota, (route) => route.fulfill({
    status: 503, contentType: 'application/problem+json',
    body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'try again later' }),
  }));
  await pick.selectOption('physics');
  await expect(main.locator('form .alert')).toContainText('try again later');
  await expect(editors).toHaveCount(0);
  await expect(save).toBeDisabled();
  await page.unroute(physicsQuota);
});

test('clusters show their inventory and health', async ({ page }) => {
  await login(page, 'admin', world.admin_password);
  await visit(page, '#/platform?tab=clusters', 'platform-clusters');
  const local = page.locator('article[data-cluster="local"]');
  await expect(local).toContainText('healthy');
  await expect(local).not.toContainText('unhealthy');
  const inv = local.getByRole('region', { name: 'Inventory of cluster local' });
  await expect(inv.locator('tr', { hasText: 'gpu:a100' })).toContainText('2');
  await expect(inv.locator('tr', { hasText: 'gpu:t4' })).toContainText('2');
  await expect(local).toContainText('Last sync');
  await local.getByRole('button', { name: 'Sync local now' }).click();
  await expect(local.getByRole('status')).toContainText('Sync of local requested.');

  // the create form checks its JSON before sending, and shows the server's answer
  const form = page.locator('form', { has: page.getByRole('button', { name: 'Register a cluster' }) });
  await form.getByLabel('Name', { exact: true }).fill('second-local');
  await form.getByLabel('Options (JSON object)').fill('{"gpus": {"a100": 1}');
  await form.getByRole('button', { name: 'Register a cluster' }).click();
  await expect(form.locator('[data-field="options"] .field-error')).toContainText('Not valid JSON');
  allowHttp(page, 409, '/api/v1/clusters');
  await form.getByLabel('Options (JSON object)').fill('{"gpus": {"a100": 1}}');
  await form.getByRole('button', { name: 'Register a cluster' }).click();
  await expect(form.locator('.form-error')).toContainText('a local cluster exists already');
  allowHttp(page, 422, '/api/v1/clusters');
  await form.getByLabel('Kind').selectOption('slurm');
  await form.getByRole('button', { name: 'Register a cluster' }).click();
  await expect(form.locator('[data-field="endpoint"] .field-error')).toContainText('needs its http:// or https:// address');
  await expect(form.locator('[data-field="credentials_ref"] .field-error')).toContainText('needs file:/path or env:NAME');
});

test('registries show their sync state and report', async ({ page }) => {
  test.setTimeout(90_000);
  await login(page, 'admin', world.admin_password);
  await visit(page, '#/platform?tab=registries', 'platform-registries');
  if (world.registry) {
    const hub = page.locator(`article[data-registry="${world.registry}"]`);
    await expect(hub).toContainText('succeeded');
    await expect(hub).toContainText('Repositories');
  }
  // a registry nobody answers at: its first sync ends failed, with the error shown
  const name = uniq('reg');
  const form = page.locator('form', { has: page.getByRole('button', { name: 'Register a registry' }) });
  await form.getByLabel('Name', { exact: true }).fill(name);
  await form.getByLabel('URL').fill('http://127.0.0.1:9');
  await form.getByLabel('Options (JSON object)').fill('[1]');
  await form.getByRole('button', { name: 'Register a registry' }).click();
  await expect(form.locator('[data-field="options"] .field-error')).toContainText('Must be a JSON object');
  await form.getByLabel('Options (JSON object)').fill('{"timeout_seconds": 2}');
  await form.getByRole('button', { name: 'Register a registry' }).click();
  await expect(page.locator('#main [role="status"]').filter({ hasText: `Registry ${name} registered` })).toBeVisible();
  const card = page.locator(`article[data-registry="${name}"]`);
  await expect(card).toContainText('http://127.0.0.1:9');
  // the page follows the sync by itself: requested/running, then the failed report
  await expect(card).toContainText('failed', { timeout: 45_000 });
  await expect(card.locator('.alert')).toContainText('Error:');
  await expect(card).toContainText('idle');
  await expect(card.getByRole('button', { name: `Sync ${name} now` })).toBeEnabled();
  await card.getByRole('button', { name: `Sync ${name} now` }).click();
  await expect(card.getByRole('status')).toContainText(`Sync of ${name} requested.`);
});

test('users: listed, created, edited; a role grant rejected by a second admin', async ({ page, browser }) => {
  test.setTimeout(90_000);
  await login(page, 'admin', world.admin_password);
  await visit(page, '#/platform?tab=users', 'platform-users');
  await expect(page.locator('tr[data-user="alice"]')).toContainText('Alice Wang');
  await expect(page.locator('tr[data-user="fiona"]')).toContainText('Finance');
  await expect(page.locator('tr[data-user="admin2"]')).toContainText('Platform admin');

  const create = page.locator('form', { has: page.getByRole('button', { name: 'Create user' }) });
  // a weak password: the server's message next to the field
  allowHttp(page, 400, '/api/v1/users');
  const plain = uniq('pu');
  await create.getByLabel('User name').fill(plain);
  await create.getByLabel('Password', { exact: true }).fill('x');
  await create.getByRole('button', { name: 'Create user' }).click();
  await expect(create.locator('[data-field="password"] .field-error')).not.toBeEmpty();
  await create.getByLabel('Password', { exact: true }).fill(world.password);
  await create.getByLabel('Display name').fill('Plain User');
  await create.getByRole('button', { name: 'Create user' }).click();
  await expect(page.locator('#main [role="status"]').first()).toContainText(`User ${plain} created.`);
  const row = page.locator(`tr[data-user="${plain}"]`);
  await expect(row).toContainText('Plain User');
  await expect(row).toContainText('enabled');

  // edit: email, and disable (Cancel first: focus goes back to the Edit button)
  const editButton = row.getByRole('button', { name: `Edit user ${plain}` });
  await editButton.click();
  const edit = page.locator('form', { hasText: `Edit user ${plain}` });
  await edit.getByRole('button', { name: 'Cancel' }).click();
  await expect(edit).toHaveCount(0);
  await expect(editButton).toBeFocused();
  await editButton.click();
  await edit.getByLabel('Email').fill(`${plain}@example.edu`);
  await edit.getByLabel('Account disabled (cannot sign in)').check();
  await edit.getByRole('button', { name: 'Save' }).click();
  await expect(page.locator('#main [role="status"]').first()).toContainText(`User ${plain} saved.`);
  await expect(row).toContainText(`${plain}@example.edu`);
  await expect(row).toContainText('disabled');

  // a user with a global role: created at once, the role waits for approval
  const fin = uniq('pf');
  await create.getByLabel('User name').fill(fin);
  await create.getByLabel('Password', { exact: true }).fill(world.password);
  await create.getByLabel('Finance').check();
  await create.getByRole('button', { name: 'Create user' }).click();
  const status = page.locator('#main [role="status"]').first();
  await expect(status).toContainText(`User ${fin} created without roles; the roles wait for approval.`);
  await expect(status).toContainText('Sent for approval');
  await expect(page.locator(`tr[data-user="${fin}"]`)).toBeVisible();

  // admin2 rejects the grant, with a reason
  const other = await secondAdmin(browser);
  try {
    await visit(other.page, '#/platform?tab=approvals', null);
    const req = other.page.locator('article', { hasText: `grant finance to the new user "${fin}"` });
    await req.getByRole('button', { name: 'Reject' }).click();
    await req.getByLabel('Reason').fill('finance staff are named by HR');
    await visit(other.page, '#/platform?tab=approvals', 'platform-approvals-reject'); // same hash: stays
    await req.getByRole('button', { name: 'Reject request' }).click();
    await expect(other.page.locator('#main [role="status"]').first()).toContainText(`Request rejected: grant finance to the new user "${fin}"`);
    await expect(req).toHaveCount(0);
    expect(other.problems).toEqual([]);
  } finally {
    await other.context.close();
  }
  const got = await (await page.request.get(`/api/v1/users/${fin}`)).json();
  expect(got.roles).toEqual([]);
});

test('every tab at 390 px', async ({ page }) => {
  await login(page, 'admin', world.admin_password); // login() waits for #nav, folded away below 720 px
  await page.setViewportSize({ width: 390, height: 844 });
  for (const name of ['tenants', 'quotas', 'clusters', 'registries', 'users', 'approvals'])
    await visit(page, `#/platform?tab=${name}`, `platform-${name}-390`);
  await expect(tab(page, 'Approvals')).toHaveAttribute('aria-current', 'page');
});

test('non-admins see no platform admin page', async ({ page }) => {
  await login(page, 'tom');
  await expect(page.locator('#nav')).not.toContainText('Platform admin');
  await visit(page, '#/platform', 'platform-forbidden');
  await expect(page.locator('#main')).toContainText('Your roles do not allow this page.');
});
