// usage.spec.js - usage (#/usage): alice picks last month and finds the world's
// 10 GPU-hours of physics/qcd in the chart (drawn on the canvas, in the legend)
// and in the table, and downloads them as CSV; a platform admin also sees all
// tenants and the allocation heat map; finance sees all tenants.
const fs = require('fs');
const { test, expect, world, login, visit, shot, checkA11y } = require('../fixtures');

// world.last_month is YYYY-MM: its first and last day
function lastMonthDays() {
  const [y, m] = world.last_month.split('-').map(Number);
  const last = new Date(Date.UTC(y, m, 0)).getUTCDate();
  return { from: `${world.last_month}-01`, to: `${world.last_month}-${String(last).padStart(2, '0')}` };
}

// pixels of the canvas inside the figure painted in colour [r, g, b]
async function pixelsOf(figure, rgb) {
  return figure.locator('canvas').first().evaluate((c, [r, g, b]) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4)
      if (d[i] === r && d[i + 1] === g && d[i + 2] === b && d[i + 3] === 255) n++;
    return n;
  }, rgb);
}

async function showPeriod(page, { from, to }) {
  await page.getByLabel('From').fill(from);
  await page.getByLabel('To (inclusive)').fill(to);
  await page.getByRole('button', { name: 'Show', exact: true }).click();
  await expect(page.getByRole('status').filter({ hasText: `Showing ${from} to ${to}.` })).toBeVisible();
}

test('alice: last month in chart, table and CSV', async ({ page }) => {
  const range = lastMonthDays();
  const day = world.past_run.start.slice(0, 10); // the run's day
  await login(page, 'alice');
  await visit(page, '#/usage', 'usage');
  // this month by default; no platform-wide report or heat map for a member
  await expect(page.getByRole('heading', { name: 'All tenants' })).toHaveCount(0);
  await expect(page.locator('table.heatmap')).toHaveCount(0);

  const answer = page.waitForResponse((r) => r.url().includes('/api/v1/tenants/physics/usage?'));
  await showPeriod(page, range);
  const res = await answer;
  expect(res.status()).toBe(200);
  expect(res.url()).toContain(`from=${range.from}T00%3A00%3A00Z`);
  expect(res.url()).toContain('group_by=day%2Cproject');

  // the chart by project: its legend names qcd with 10 GPU-hours, and the canvas shows bars
  const byProject = page.locator('figure').filter({ hasText: 'GPU-hours per day by project' });
  await expect(byProject.locator('li').filter({ hasText: 'qcd' })).toContainText('qcd (QCD simulations): 10 GPU-hours');
  await expect(byProject.getByRole('img')).toHaveAttribute('aria-label', /qcd \(QCD simulations\) 10; total 10 GPU-hours/);
  await expect.poll(() => pixelsOf(byProject, [0x00, 0x72, 0xb2]), { message: 'bars of the first series' }).toBeGreaterThan(100);
  const byType = page.locator('figure').filter({ hasText: 'GPU-hours per day by GPU type' });
  await expect(byType.locator('li')).toContainText(['gpu:a100: 10 GPU-hours']);
  await expect.poll(() => pixelsOf(byType, [0x00, 0x72, 0xb2])).toBeGreaterThan(100);

  // the table: every row, the chart's values as text
  const row = page.locator(`tbody tr[data-day="${day}"][data-project="qcd"][data-resource="gpu:a100"]`);
  await expect(row).toContainText('10');
  await expect(row).toContainText('GPU-hours');
  await expect(page.locator(`tbody tr[data-day="${day}"][data-project="qcd"][data-resource="cpu"]`)).toContainText('40');
  // the period is in the address
  expect(page.url()).toContain(`#/usage?from=${range.from}&to=${range.to}`);
  await shot(page, 'usage-last-month');
  await checkA11y(page);

  // the CSV, downloaded
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('button', { name: 'Download CSV' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe(`usage-physics-${range.from}-${range.to}.csv`);
  const csv = fs.readFileSync(await download.path(), 'utf8');
  const lines = csv.split(/\r?\n/);
  expect(lines[0]).toBe('day,project,project_name,resource,quantity,unit');
  expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${day},qcd,QCD simulations,gpu:a100,10(\\.0+)?,gpu_hour$`)));

  // "This month" goes back to the default
  await page.getByRole('button', { name: 'This month' }).click();
  const now = new Date();
  const first = `${now.getUTCFullYear()}-${String(now.getUTCMonth() + 1).padStart(2, '0')}-01`;
  await expect(page.getByLabel('From')).toHaveValue(first);
  await expect(page.getByRole('status').filter({ hasText: `Showing ${first}` })).toBeVisible();
});

test('a period that ends before it starts is refused in place', async ({ page }) => {
  await login(page, 'tom');
  await visit(page, '#/usage', null);
  await page.getByLabel('From').fill('2026-03-10');
  await page.getByLabel('To (inclusive)').fill('2026-03-01');
  await page.getByRole('button', { name: 'Show', exact: true }).click();
  await expect(page.locator('[data-field="to"] .field-error')).toHaveText('Must not be before the start date.');
  await expect(page.getByLabel('To (inclusive)')).toBeFocused();
});

test('admin sees all tenants and the heat map', async ({ page }) => {
  await login(page, 'admin', world.admin_password);
  await visit(page, `#/usage?from=${lastMonthDays().from}&to=${lastMonthDays().to}`, 'usage-admin');
  const all = page.locator('section').filter({ has: page.getByRole('heading', { name: 'All tenants' }) });
  await expect(all.locator('figure li').filter({ hasText: 'physics' })).toContainText('physics: 10 GPU-hours');
  await expect(all.locator('tbody tr').filter({ hasText: 'gpu:a100' }).first()).toContainText('physics');

  const heat = page.locator('table.heatmap');
  await expect(heat).toBeVisible();
  await expect(heat.locator('caption')).toContainText('Allocated GPUs in % of capacity');
  await expect(heat.locator('tbody tr')).toHaveCount(7);
  await expect(heat.locator('tbody tr').first().locator('td')).toHaveCount(24);
  await expect(heat.locator('thead th')).toHaveCount(25);
  // every cell says its value in text (a number or "–" without capacity), not by colour alone
  for (const text of await heat.locator('td').allTextContents()) expect(text).toMatch(/^(\d{1,3}|–)$/);
  // last month's 10 hours on the 10th, 08:00-18:00 UTC: allocated in that weekday's hours
  const wd = (new Date(`${world.past_run.start.slice(0, 10)}T00:00:00Z`).getUTCDay() + 6) % 7; // Monday 0
  const cell = heat.locator('tbody tr').nth(wd).locator('td').nth(9);
  await expect(cell).not.toHaveText('0');
  await expect(cell).not.toHaveText('–');
});

test('finance sees all tenants but no heat map; the phone layout', async ({ page }) => {
  await login(page, 'fiona');
  await page.setViewportSize({ width: 390, height: 844 });
  await visit(page, `#/usage?from=${lastMonthDays().from}&to=${lastMonthDays().to}`, 'usage-390');
  await expect(page.getByRole('heading', { name: 'All tenants' })).toBeVisible();
  await expect(page.locator('table.heatmap')).toHaveCount(0);
  const all = page.locator('section').filter({ has: page.getByRole('heading', { name: 'All tenants' }) });
  await expect(all.locator('figure li').filter({ hasText: 'physics' })).toContainText('physics: 10 GPU-hours');
  // the chart fits the phone's width
  const box = await all.locator('canvas').first().boundingBox();
  expect(box.width).toBeLessThanOrEqual(390);
  expect(box.width).toBeGreaterThan(200);
});
