// allocations.spec.js - allocation requests in the portal (docs/allocations.md): tom,
// tenant admin of physics, makes alice the PI of a project of its own; alice asks for
// resources (#/allocations); admin asks for information in the review queue
// (#/platform?tab=allocations), alice answers in the thread, admin approves with
// changes; alice sees what was granted and Renew fills the form from it, with its
// usage. Then the pages in Chinese. The project is the spec's own: its quota and its
// allocation touch nothing other specs read.
const { test, expect, world, login, visit } = require('../fixtures');

const PORTAL = { 'X-Requested-With': 'aidc-portal' };

test('a PI asks, a platform admin reviews, the PI renews', async ({ page, browser }) => {
  test.setTimeout(120_000);
  const slug = `al-${Date.now().toString(36)}`;
  await login(page, 'tom');
  let res = await page.request.post('/api/v1/tenants/physics/projects',
    { headers: PORTAL, data: { slug, name: 'Allocation test' } });
  expect(res.status()).toBe(201);
  res = await page.request.patch(`/api/v1/tenants/physics/projects/${slug}`,
    { headers: PORTAL, data: { pi: 'alice' } });
  expect(res.status()).toBe(200);
  expect((await res.json()).pi).toBe('alice');

  // --- alice, the PI, asks
  const pi = await (await browser.newContext()).newPage();
  await login(pi, 'alice');
  await visit(pi, '#/allocations', 'allocations');
  await expect(pi.getByRole('heading', { level: 1 })).toHaveText('Allocations · physics');
  const form = pi.locator('form[aria-labelledby="alloc-form-title"]');
  // only the projects she may ask for: hers
  await expect(form.getByLabel('Project')).toHaveValue(slug);
  await form.getByLabel('GPU type').selectOption('a100');
  await form.getByLabel('GPUs (limit)').fill('1');
  await form.getByLabel('GPU-hours for the period').fill('120');
  await form.getByLabel('Storage (GiB)').fill('10');
  await form.getByLabel('Justification').fill('lattice QCD at finer spacing');
  await form.getByLabel('Grant or funding reference').fill('NSFC-12345');
  await form.getByRole('button', { name: 'Send request' }).click();
  const card = pi.locator('article', { hasText: slug }).first();
  await expect(card.locator('.badge').first()).toHaveText('pending');
  await expect(card).toContainText('1 × gpu:a100, 120 GPU-hours, 10 GiB');

  // --- admin asks for information in the review queue
  const adminPage = await (await browser.newContext()).newPage();
  await login(adminPage, 'admin', world.admin_password);
  await visit(adminPage, '#/platform?tab=allocations', 'allocations-review');
  const review = adminPage.locator('article', { hasText: `physics / ${slug}` });
  await expect(review).toContainText('lattice QCD at finer spacing');
  await expect(review).toContainText('NSFC-12345');
  await expect(review).toContainText('No earlier allocation of this project.');
  await review.getByRole('button', { name: 'Ask for information' }).click();
  await review.getByLabel('Question to the requester').fill('Which machine time did you use before?');
  await review.locator('form').getByRole('button', { name: 'Ask for information' }).click();
  await expect(adminPage.locator('.status-line')).toContainText(`Asked the requester of physics/${slug}`);
  await expect(review.locator('.badge').first()).toHaveText('needs information');

  // --- alice answers in the thread: pending again
  await pi.reload(); // the same page: read it again
  await expect(pi.locator('#main[aria-busy="false"]')).toBeAttached();
  const mine = pi.locator('article', { hasText: slug }).first();
  await expect(mine.locator('.badge').first()).toHaveText('needs information');
  await mine.getByText('Details and comments').click();
  await expect(mine).toContainText('Which machine time did you use before?');
  await mine.getByLabel('Comment').fill('About 80 GPU-hours last year.');
  await mine.getByRole('button', { name: 'Add comment' }).click();
  await expect(mine.locator('.badge').first()).toHaveText('pending');

  // --- admin approves with changes
  await adminPage.reload();
  await expect(adminPage.locator('#main[aria-busy="false"]')).toBeAttached();
  const again = adminPage.locator('article', { hasText: `physics / ${slug}` });
  await again.getByRole('button', { name: 'Approve with changes' }).click();
  await again.getByLabel('GPU-hours for the period').fill('100');
  await again.locator('form').getByRole('button', { name: 'Approve' }).click();
  await expect(adminPage.locator('.status-line')).toContainText(`Approved: physics/${slug}.`);
  await expect(adminPage.locator('article', { hasText: `physics / ${slug}` })).toHaveCount(0);

  // --- alice sees what was granted, and renews
  await pi.reload();
  await visit(pi, '#/allocations', 'allocations-approved');
  const granted = pi.locator('article', { hasText: slug }).first();
  await expect(granted.locator('.badge').first()).toHaveText('approved');
  await expect(granted).toContainText('1 × gpu:a100, 100 GPU-hours, 10 GiB');
  await expect(granted).toContainText('0 of 100 GPU-hours used');
  await granted.getByRole('button', { name: /^Renew the allocation of/ }).click();
  await expect(form.getByLabel('GPU-hours for the period')).toHaveValue('100');
  await expect(form.getByLabel('Justification')).toHaveValue('lattice QCD at finer spacing');
  await expect(pi.locator('#alloc-renewing')).toContainText('it used 0 of 100 GPU-hours');
  // the project's quota is the granted one
  const quota = await (await pi.request.get(`/api/v1/tenants/physics/projects/${slug}/quota`)).json();
  expect(quota.resources['gpu:a100'].limit).toBe(1);

  // --- in Chinese
  await pi.locator('#lang').click();
  await visit(pi, '#/allocations', 'allocations-zh');
  await expect(pi.getByRole('heading', { level: 1 })).toHaveText('资源申请 · physics');
  await expect(pi.locator('article', { hasText: slug }).first().locator('.badge').first()).toHaveText('已批准');
  await pi.locator('#lang').click();
  await adminPage.locator('#lang').click();
  await visit(adminPage, '#/platform?tab=allocations', 'allocations-review-zh');
  await expect(adminPage.getByRole('heading', { name: '待审核' })).toBeVisible();
  await adminPage.locator('#lang').click();
});
