// images.spec.js - the image catalog (#/images): searching finds the world's
// physics/pytorch:2.3 with its labels; a member registers a tenant image and
// finds it listed; a bad digest is refused with the message next to the field.
const crypto = require('crypto');
const { test, expect, world, login, visit, allowHttp, shot, checkA11y } = require('../fixtures');

test('alice searches the catalog for pytorch', async ({ page }) => {
  await login(page, 'alice');
  await visit(page, '#/images', 'images');
  const search = page.getByRole('search');
  await search.getByLabel('Name, tag or label value').fill('pytorch');
  const answer = page.waitForResponse((r) => r.url().includes('/api/v1/images?') && r.url().includes('q=pytorch'));
  await search.getByRole('button', { name: 'Search' }).click();
  expect((await answer).status()).toBe(200);

  const row = page.locator('tbody tr[data-image="physics/pytorch:2.3"]');
  await expect(row).toBeVisible();
  await expect(row).toContainText('framework: pytorch');
  await expect(row).toContainText('PyTorch 2.3');                   // the title label
  await expect(row).toContainText('tenant physics');                // visibility
  await expect(row).toContainText('4.5 GiB');                       // 4831838208 bytes
  await expect(row.locator(`code[title="${world.image.digest}"]`)).toHaveText(`${world.image.digest.slice(0, 19)}…`);
  // every row found matches the search (name, tag or a label value)
  for (const text of await page.locator('tbody tr').allTextContents()) expect(text.toLowerCase()).toContain('pytorch');
  // the search is in the address: a reload keeps it
  expect(page.url()).toContain('#/images?q=pytorch');
  await page.reload();
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await expect(page.getByRole('search').getByLabel('Name, tag or label value')).toHaveValue('pytorch');
  await expect(page.locator('tbody tr[data-image="physics/pytorch:2.3"]')).toBeVisible();

  // a label filter
  await page.getByRole('search').getByLabel('Name, tag or label value').fill('');
  await page.getByRole('search').getByLabel('Label (KEY=VALUE)').fill('framework=pytorch');
  await page.getByRole('search').getByRole('button', { name: 'Search' }).click();
  await expect(page.locator('tbody tr[data-image="physics/pytorch:2.3"]')).toBeVisible();
  await shot(page, 'images-search');
  await checkA11y(page);
});

test('tom registers a tenant image; a bad digest is refused next to its field', async ({ page }) => {
  const repo = `physics/e2e-${Date.now().toString(36)}`;
  const digest = `sha256:${crypto.randomBytes(32).toString('hex')}`;
  await login(page, 'tom');
  await visit(page, '#/images', null);
  const form = page.locator('form').filter({ has: page.locator('input[name="repository"]') });

  // first a digest that is none: the server's 400 lands at the digest field
  allowHttp(page, 400, '/api/v1/tenants/physics/images');
  await form.getByLabel('Repository').fill(repo);
  await form.getByLabel('Tag', { exact: true }).fill('1.0');
  await form.getByLabel('Digest').fill('sha256:not-a-digest');
  await form.getByLabel('Size in bytes').fill('1500000000');
  await form.getByLabel('Labels (one KEY=VALUE per line)').fill('framework=jax\nteam=lattice');
  const refused = page.waitForResponse((r) => r.url().endsWith('/api/v1/tenants/physics/images') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Register image' }).click();
  expect((await refused).status()).toBe(400);
  const digestError = form.locator('[data-field="digest"] .field-error');
  await expect(digestError).toContainText('sha256');
  await expect(form.locator('input[name="digest"]')).toHaveAttribute('aria-invalid', 'true');
  await expect(form.locator('input[name="digest"]')).toBeFocused();
  await expect(form.locator('[data-field="repository"] .field-error')).toBeEmpty();
  await shot(page, 'images-bad-digest');
  await checkA11y(page);

  // a line that is no KEY=VALUE is caught before anything is sent
  await form.getByLabel('Labels (one KEY=VALUE per line)').fill('framework=jax\njust-a-word');
  await form.getByLabel('Digest').fill(digest);
  await form.getByRole('button', { name: 'Register image' }).click();
  await expect(form.locator('[data-field="labels"] .field-error')).toHaveText('Line 2 is not KEY=VALUE.');
  await expect(digestError).toBeEmpty();

  // corrected: registered, and the catalog shows it
  await form.getByLabel('Labels (one KEY=VALUE per line)').fill('framework=jax\nteam=lattice');
  await form.getByLabel('Immutable').check();
  const created = page.waitForResponse((r) => r.url().endsWith('/api/v1/tenants/physics/images') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Register image' }).click();
  expect((await created).status()).toBe(201);
  const row = page.locator(`tbody tr[data-image="${repo}:1.0"]`);
  await expect(row).toBeVisible();
  await expect(row).toContainText('framework: jax');
  await expect(row).toContainText('1.4 GiB');
  await expect(row.locator(`code[title="${digest}"]`)).toBeVisible();
  await expect(form.locator('input[name="repository"]')).toHaveValue('');
  // the catalog (not only this page's memory) has it: search it again from the start
  await visit(page, `#/images?q=${encodeURIComponent(repo)}`, 'images-registered');
  await expect(page.locator(`tbody tr[data-image="${repo}:1.0"]`)).toContainText('yes'); // immutable
});

test('the catalog on a phone', async ({ page }) => {
  await login(page, 'alice');
  await page.setViewportSize({ width: 390, height: 844 });
  await visit(page, '#/images?q=pytorch', 'images-390');
  await expect(page.locator('tbody tr[data-image="physics/pytorch:2.3"]')).toBeVisible();
  // alice is a member: she may register too
  await expect(page.getByRole('button', { name: 'Register image' })).toBeVisible();
});
