// notifications.spec.js - notification settings (#/notifications): e-mail on with a few
// events, narrowed to a project, saved and read back after a reload; a webhook added with
// its secret (never shown again: the list says only that it is set), a metadata-service
// URL refused with the server's reason next to the field, a second save that keeps the
// stored secret; a job's end shows up in the delivery log (the receiver's name does not
// resolve here, so the log says why and when it tries again); the webhook removed. In
// English and Chinese.
const { test, expect, login, visit, allowHttp } = require('../fixtures');
const { token, submitJob, waitForState } = require('../apicalls');

const SECRET = 'portal-secret-0123456789';
const HOOK = 'https://hooks.example.invalid/aidc';

test('tom sets up e-mail and a webhook and reads the delivery log', async ({ page, request }) => {
  test.setTimeout(120_000);
  await login(page, 'tom');
  // the account page (API tokens, sessions, password) leads there
  await visit(page, '#/tokens', null);
  await page.locator('#notify-link').click();
  await expect(page).toHaveURL(/#\/notifications$/);
  await visit(page, '#/notifications', 'notifications-empty');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Notifications');
  await expect(page.getByText('No webhooks yet.')).toBeVisible();

  // e-mail with three events, narrowed to project lattice
  const settings = page.locator('form').filter({ has: page.locator('#notify-email') });
  await settings.locator('#notify-email').check();
  await expect(settings).toContainText('to tom@example.edu');
  for (const ev of ['job ended', 'job failed', 'budget 80 % used'])
    await settings.getByLabel(ev, { exact: true }).check();
  await settings.getByLabel('Only these projects').fill('lattice');
  const saved = page.waitForResponse((r) => r.url().endsWith('/api/v1/me/notifications') && r.request().method() === 'PUT');
  await settings.getByRole('button', { name: 'Save' }).click();
  expect((await saved).status()).toBe(200);

  // a webhook to the cloud metadata service: refused, the reason at the URL
  allowHttp(page, 422, '/api/v1/me/notifications');
  const add = page.locator('form').filter({ has: page.locator('input[name="secret"]') });
  await add.getByLabel('URL').fill('https://169.254.169.254/latest/meta-data/');
  await add.getByLabel('Secret').fill(SECRET);
  await add.getByRole('button', { name: 'Add webhook' }).click();
  await expect(add.locator('[data-field="webhooks"] .field-error')).toHaveText(
    'the webhook URL points at a loopback, private or link-local address');
  await expect(add.getByLabel('URL')).toHaveAttribute('aria-invalid', 'true');
  await visit(page, '#/notifications', null); // nothing was stored
  await expect(page.getByText('No webhooks yet.')).toBeVisible();

  const add2 = page.locator('form').filter({ has: page.locator('input[name="secret"]') });
  await add2.getByLabel('URL').fill(HOOK);
  await add2.getByLabel('Secret').fill(SECRET);
  await add2.getByRole('button', { name: 'Add webhook' }).click();
  const row = page.locator('tbody tr').filter({ hasText: HOOK });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('set');
  await expect(row).toContainText('job ended, job failed, budget 80 % used');
  expect(await page.locator('#main').textContent()).not.toContain(SECRET);

  // after a reload: the same settings, and saving them again keeps the webhook's secret
  await page.reload();
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await expect(page.locator('#notify-email')).toBeChecked();
  await expect(page.getByLabel('Only these projects')).toHaveValue('lattice');
  await page.locator('form').filter({ has: page.locator('#notify-email') }).getByRole('button', { name: 'Save' }).click();
  await expect(page.locator('#toast')).toHaveText('Saved');
  const tok = await token(request, 'tom');
  const prefs = await (await request.get('/api/v1/me/notifications', { headers: { Authorization: `Bearer ${tok}` } })).json();
  expect(prefs.webhooks).toEqual([{ url: HOOK, events: ['job.ended', 'job.failed', 'budget.80'], secret_set: true }]);
  expect(JSON.stringify(prefs)).not.toContain(SECRET);

  // a job of lattice ends: its e-mail and webhook deliveries are in the log
  const job = await submitJob(request, tok, 'physics', { project: 'lattice', name: `notify-${Date.now()}`, command: ['true'] });
  await waitForState(request, tok, 'physics', job.id, ['succeeded']);
  const log = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Delivery log' }) });
  await expect(async () => {
    await log.getByRole('button', { name: 'Refresh' }).click();
    await expect(log.locator('tbody tr').filter({ hasText: HOOK }).first()).toContainText('does not resolve', { timeout: 1000 });
  }).toPass({ timeout: 30_000 });
  await expect(log.locator('tbody tr').filter({ hasText: 'e-mail' }).first()).toContainText('job ended');
  await visit(page, '#/notifications', 'notifications-set');

  // in Chinese
  await page.locator('#lang').click();
  await visit(page, '#/notifications', 'notifications-zh');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('通知');
  await expect(page.getByRole('heading', { name: '投递记录' })).toBeVisible();
  await page.locator('#lang').click();

  // removed
  await visit(page, '#/notifications', null);
  await page.getByRole('button', { name: `Remove webhook ${HOOK}` }).click();
  await expect(page.getByText('No webhooks yet.')).toBeVisible();
  await request.put('/api/v1/me/notifications', { headers: { Authorization: `Bearer ${tok}` }, data: {} });
});
