// finance.spec.js - the finance page (#/finance): fiona generates the invoice of physics
// for last month from the world's metered run (alice, qcd, a100 x1, 10 h at the world's
// prices: 10 gpu_hour x 8.00 + 40 core_hour x 0.05 + 160 gib_hour x 0.01 = 83.60 CNY),
// reviews its lines, finalizes it and downloads it as CSV; a 409 on finalize (a month
// still open) is shown plainly; a price she requests waits for a platform admin.
const fs = require('fs');
const { test, expect, world, login, visit, allowHttp, shot, checkA11y } = require('../fixtures');

// "YYYY-MM" of this month in UTC (the server's clock and zone for periods)
function thisMonth() {
  const d = new Date();
  return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

function generateForm(page) {
  return page.locator('form').filter({ has: page.getByRole('button', { name: 'Generate draft' }) });
}

async function generate(page, tenant, period) {
  const form = generateForm(page);
  await form.getByLabel('Tenant').selectOption(tenant);
  await form.getByLabel('Month').fill(period);
  const answer = page.waitForResponse((r) => r.url().endsWith('/api/v1/invoices') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Generate draft' }).click();
  return answer;
}

test('fiona generates, reviews, finalizes and downloads the invoice of physics', async ({ page }) => {
  const period = world.last_month;
  await login(page, 'fiona');
  await visit(page, '#/finance', 'finance');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Finance');

  // the world's default prices are listed, in effect
  const prices = page.getByRole('table', { name: 'Prices' });
  const a100Price = prices.locator('tbody tr').filter({ hasText: 'gpu:a100' }).filter({ hasText: 'default' });
  await expect(a100Price).toContainText('8.00 CNY per GPU-hour');
  await expect(a100Price).toContainText('in effect');
  // entered in UTC, listed in UTC (not in the browser's zone)
  await expect(a100Price).toContainText(`${period}-01 00:00 UTC`);

  expect((await generate(page, 'physics', period)).status()).toBe(201);
  const invoice = page.getByRole('region', { name: new RegExp(`^Invoice of physics for ${period}`) });
  await expect(invoice.getByRole('heading', { level: 2 })).toContainText('draft');
  await expect(invoice.getByRole('status')).toContainText('Draft generated');

  // the lines: one per project x resource x unit price x kind, amounts exactly as the server gave them
  const lines = invoice.getByRole('table', { name: `Lines of the invoice of physics for ${period}` });
  await expect(lines.locator('tbody tr')).toHaveCount(3);
  const gpu = lines.locator('tbody tr').filter({ hasText: 'gpu:a100' });
  const cells = gpu.locator('td');
  await expect(cells.nth(0)).toContainText('qcd');          // project
  await expect(cells.nth(2)).toHaveText('usage');           // kind
  await expect(cells.nth(3)).toHaveText('10');              // quantity (10.000000 h)
  await expect(cells.nth(4)).toHaveText('GPU-hour');        // unit gpu_hour
  await expect(cells.nth(5)).toHaveText('8.00');            // unit price
  await expect(cells.nth(6)).toHaveText('80.00');           // amount
  await expect(lines.locator('thead')).toContainText('Amount (CNY)');
  await expect(lines.locator('tbody tr').filter({ hasText: 'cpu' }).locator('td').nth(6)).toHaveText('2.00');
  await expect(lines.locator('tbody tr').filter({ hasText: 'memory_gib' }).locator('td').nth(6)).toHaveText('1.60');
  const subtotals = invoice.getByRole('table', { name: 'Subtotals per project' });
  await expect(subtotals.locator('tbody tr')).toHaveCount(1);
  await expect(subtotals.locator('tbody tr td').nth(1)).toHaveText(world.past_run.cost_cny);
  await expect(invoice.getByText(`Total: ${world.past_run.cost_cny} CNY`)).toBeVisible();
  // the list shows the draft too
  const listed = page.getByRole('table', { name: 'Invoices' }).locator('tbody tr')
    .filter({ hasText: 'physics' }).filter({ hasText: period });
  await expect(listed).toContainText('draft');
  await shot(page, 'finance-invoice-draft');
  await checkA11y(page);

  // finalize: a confirmation first, then the final invoice without the button
  await invoice.getByRole('button', { name: 'Finalize…' }).click();
  await expect(invoice).toContainText('A final invoice never changes again');
  await shot(page, 'finance-invoice-confirm');
  const finalized = page.waitForResponse((r) => r.url().endsWith('/finalize'));
  await invoice.getByRole('button', { name: 'Finalize invoice' }).click();
  expect((await finalized).status()).toBe(200);
  await expect(invoice.getByRole('heading', { level: 2 })).toContainText('final');
  await expect(invoice.getByRole('heading', { level: 2 })).not.toContainText('draft');
  await expect(invoice.getByRole('button', { name: /Finalize/ })).toHaveCount(0);
  await expect(invoice.getByRole('button', { name: 'Generate again' })).toHaveCount(0);
  await expect(invoice).toContainText('Final: never changes again');
  await expect(invoice).toContainText('by fiona');
  await expect(listed).toContainText('final');
  await shot(page, 'finance-invoice-final');

  // the CSV: the server's text, saved by the browser
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    invoice.getByRole('button', { name: 'Download CSV' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe(`invoice-physics-${period}.csv`);
  const csv = fs.readFileSync(await download.path(), 'utf8');
  const rows = csv.trim().split(/\r\n/);
  expect(rows[0]).toBe('tenant,period,state,project,project_name,resource,kind,original_period,quantity,unit,unit_price,amount,currency');
  const a100 = rows.find((r) => r.includes(',gpu:a100,'));
  expect(a100).toMatch(new RegExp(`^physics,${period},final,qcd,[^,]*,gpu:a100,usage,,10(\\.0+)?,gpu_hour,8\\.00,80\\.00,CNY$`));
  expect(rows[rows.length - 1]).toMatch(new RegExp(`,total,.*,${world.past_run.cost_cny.replace('.', '\\.')},CNY$`));

  // the link of the page opens the same invoice
  expect(page.url()).toMatch(/#\/finance\?invoice=[0-9a-f-]{36}$/);
  await page.reload();
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await expect(page.getByRole('region', { name: new RegExp(`^Invoice of physics for ${period}`) })
    .getByRole('heading', { level: 2 })).toContainText('final');

  // a final invoice is not generated again: the server's 409 is shown at the form
  allowHttp(page, 409, '/api/v1/invoices');
  expect((await generate(page, 'physics', period)).status()).toBe(409);
  await expect(generateForm(page).locator('.form-error')).toContainText('is final');
});

test('finalizing a month that is still open is refused with the reason', async ({ page }) => {
  await login(page, 'fiona');
  await visit(page, '#/finance', null);
  // a draft of the running month (with or without usage: other specs may have run chem
  // jobs this month), which cannot be final before the month ends
  expect((await generate(page, 'chem', thisMonth())).status()).toBe(201);
  const invoice = page.getByRole('region', { name: new RegExp(`^Invoice of chem for ${thisMonth()}`) });
  await expect(invoice.getByRole('heading', { level: 2 })).toContainText('draft');
  allowHttp(page, 409, '/finalize');
  await invoice.getByRole('button', { name: 'Finalize…' }).click();
  const refused = page.waitForResponse((r) => r.url().endsWith('/finalize'));
  await invoice.getByRole('button', { name: 'Finalize invoice' }).click();
  expect((await refused).status()).toBe(409);
  const alert = invoice.getByRole('alert').filter({ hasText: 'cannot be finalized' });
  await expect(alert).toContainText('has not ended');
  await expect(invoice.getByRole('heading', { level: 2 })).toContainText('draft');
  await expect(invoice.getByRole('button', { name: 'Finalize…' })).toBeVisible();
  await shot(page, 'finance-finalize-409');
  await checkA11y(page);
});

test('a price fiona requests waits for a platform admin', async ({ page }) => {
  await login(page, 'fiona');
  await visit(page, '#/finance', null);
  const form = page.locator('form').filter({ has: page.getByRole('button', { name: 'Request price' }) });
  await expect(page.getByText('Every new price needs the approval of a platform admin')).toBeVisible();

  // a JSON-number-like price with a comma: refused at its field, nothing filed
  allowHttp(page, 400, '/api/v1/prices');
  await form.getByLabel('Resource').fill('gpu:t4');
  await form.getByLabel('Unit price').fill('2,50');
  const bad = page.waitForResponse((r) => r.url().endsWith('/api/v1/prices') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Request price' }).click();
  expect((await bad).status()).toBe(400);
  await expect(form.locator('[data-field="unit_price"] .field-error')).toContainText('decimal string');
  await expect(form.locator('input[name="unit_price"]')).toHaveAttribute('aria-invalid', 'true');

  // a good one, for physics from a whole UTC hour in the future: 202, approval pending
  const from = new Date(Date.UTC(new Date().getUTCFullYear() + 1, 0, 1, 1 + Math.floor(Math.random() * 22)));
  const effective = from.toISOString().replace('.000Z', 'Z');
  await form.getByLabel('Unit price').fill('2.50');
  await form.getByLabel('Currency').fill('CNY');
  await form.getByLabel('Effective from').fill(effective);
  await form.getByLabel('Tenant').selectOption('physics');
  const filed = page.waitForResponse((r) => r.url().endsWith('/api/v1/prices') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Request price' }).click();
  expect((await filed).status()).toBe(202);
  const pending = page.getByRole('status').filter({ hasText: 'Sent for approval' });
  await expect(pending).toContainText('Sent for approval: another platform admin must approve it.');
  await expect(pending).toContainText('a platform admin must approve the request');
  await expect(pending).toContainText(`price of gpu:t4 for physics: 2.50 CNY from ${effective}`);
  await expect(form.locator('.form-error')).toHaveText('');
  // not a price yet: the list has no gpu:t4 price of physics
  await expect(page.getByRole('table', { name: 'Prices' }).locator('tbody tr')
    .filter({ hasText: 'gpu:t4' }).filter({ hasText: 'physics' })).toHaveCount(0);
  await shot(page, 'finance-price-pending');
  await checkA11y(page);
});

test('the finance page on a phone', async ({ page }) => {
  await login(page, 'fiona');
  await page.setViewportSize({ width: 390, height: 844 });
  await visit(page, '#/finance', 'finance-390');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Finance');
});

test('"Load more" goes on with the invoices shown, not the filter as edited since', async ({ page }) => {
  await login(page, 'fiona');
  // two empty drafts of chem long ago (no usage then): at least two chem invoices
  const d = new Date();
  const month = (back) => {
    const m = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() - back, 1));
    return `${m.getUTCFullYear()}-${String(m.getUTCMonth() + 1).padStart(2, '0')}`;
  };
  await visit(page, '#/finance', null);
  for (const back of [25, 26]) expect([201, 200]).toContain((await generate(page, 'chem', month(back))).status());

  // one invoice a page; the page a load-more brings is the last one
  await page.route((u) => u.pathname === '/api/v1/invoices' && u.searchParams.get('limit') === '50', async (route) => {
    const u = new URL(route.request().url());
    u.searchParams.set('limit', '1');
    const res = await route.fetch({ url: u.toString() });
    const body = await res.json();
    if (u.searchParams.get('cursor')) body.next_cursor = null;
    await route.fulfill({ response: res, json: body });
  });
  const filters = page.getByRole('search', { name: 'Filter invoices' });
  await filters.getByLabel('Tenant').selectOption('chem');
  const shown = page.waitForResponse((r) => r.url().includes('/api/v1/invoices?') && r.url().includes('tenant=chem'));
  await filters.getByRole('button', { name: 'Show' }).click();
  await shown;
  const rows = page.getByRole('table', { name: 'Invoices' }).locator('tbody tr');
  await expect(rows).toHaveCount(1);

  // the filter changed but not applied: the next page is still chem's
  await filters.getByLabel('Tenant').selectOption('physics');
  const more = page.getByRole('button', { name: 'Load more' });
  const next = page.waitForRequest((r) => r.url().includes('/api/v1/invoices?') && r.url().includes('cursor='));
  await more.focus();
  await page.keyboard.press('Enter');
  const url = (await next).url();
  expect(url).toContain('tenant=chem');
  expect(url).not.toContain('physics');
  await expect(rows).toHaveCount(2);
  for (const text of await rows.allTextContents()) expect(text).toContain('chem');
  // the button is gone: the focus moved to the first new row
  await expect(more).toBeHidden();
  await expect(rows.nth(1)).toBeFocused();
  await checkA11y(page);
});
