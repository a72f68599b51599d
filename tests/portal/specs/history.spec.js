// history.spec.js - the jobs list as a history, like sacct: tom (physics' tenant admin)
// opens the further filters, narrows by name pattern and end date, sorts by run time,
// sees each job's wait and run time, keeps it all in the link, and exports the filtered
// history as one CSV file; the same page in Chinese; a hand-edited link with values the
// API would refuse still opens.
const fs = require('fs');
const { test, expect, world, login, visit, shot } = require('../fixtures');

// the reader's own calendar day of an instant (the date inputs are local days)
function localDay(d) {
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}`;
}

test.describe('job history', () => {
  test('filters, sorts, times and CSV (en)', async ({ page }) => {
    await login(page, 'tom');
    await visit(page, '#/jobs', 'history-list');
    const table = page.getByRole('table', { name: 'Jobs' });
    await expect(table.getByRole('columnheader', { name: 'Waited' })).toBeVisible();
    await expect(table.getByRole('columnheader', { name: 'Ran' })).toBeVisible();
    // last month's finished run: it waited 2 minutes and ran from start to end
    const ran = (Date.parse(world.past_run.end) - Date.parse(world.past_run.start)) / 1000;
    const row = table.getByRole('row').filter({ has: page.getByRole('link', { name: 'qcd-baseline' }) });
    await expect(row.getByRole('cell', { name: '2 min 0 s' })).toBeVisible();
    await expect(row.getByRole('cell', { name: `${Math.floor(ran / 3600)} h ${Math.floor((ran % 3600) / 60)} min` })).toBeVisible();

    await page.getByText('More filters and sorting').click();
    await page.getByLabel('Name', { exact: true }).fill('QCD-*');
    await page.getByLabel('Sort by').selectOption('runtime');
    await expect(page).toHaveURL(/#\/jobs\?.*sort=runtime/);
    await page.getByRole('button', { name: 'Show' }).click();
    await expect(page).toHaveURL(/name=QCD-\*/);
    await expect(page.getByText('named like "QCD-*"')).toBeVisible();
    await expect(page.getByText('sorted by Run time')).toBeVisible();
    await expect(table.getByRole('link', { name: 'qcd-baseline' })).toBeVisible();

    // ended since tomorrow: nothing; the link keeps it; the page reopens the same
    const tomorrow = localDay(new Date(Date.now() + 86400000));
    await page.getByLabel('Ended from').fill(tomorrow);
    await page.getByLabel('Ended from').dispatchEvent('change');
    await expect(page).toHaveURL(new RegExp(`ended_from=${tomorrow}`));
    await expect(page.getByText('No jobs match these filters.')).toBeVisible();
    await page.reload();
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    await expect(page.getByLabel('Ended from')).toHaveValue(tomorrow);
    await expect(page.getByLabel('Sort by')).toHaveValue('runtime');
    await expect(page.getByText('No jobs match these filters.')).toBeVisible();
    await page.getByLabel('Ended from').fill('');
    await page.getByLabel('Ended from').dispatchEvent('change');
    await expect(table.getByRole('link', { name: 'qcd-baseline' })).toBeVisible();
    await shot(page, 'history-filtered');

    // the export is every page of what the filters show, as one file
    const [csv] = await Promise.all([page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(csv.suggestedFilename()).toBe('jobs-physics.csv');
    const lines = fs.readFileSync(await csv.path(), 'utf8').split('\r\n').filter(Boolean);
    expect(lines[0]).toBe('id,name,state,reason,project,user,cluster,gpu_type,gpus,nodes,cpus,'
      + 'memory_gib,submitted_at,started_at,finished_at,wait_seconds,run_seconds,exit_code');
    expect(lines.length).toBeGreaterThan(1);
    for (const l of lines.slice(1)) expect(l.toLowerCase()).toContain(',qcd-');
    expect(lines.find((l) => l.includes(',qcd-baseline,succeeded,'))).toMatch(new RegExp(`,120,${ran},$`));
    await expect(page.getByText(/Exported \d+ jobs\./)).toBeVisible();
  });

  test('the same page in Chinese, and links with bad values', async ({ page }) => {
    await login(page, 'tom');
    await page.locator('#lang').click();
    // values the API would refuse are dropped, not sent
    await visit(page, '#/jobs?sort=size&exit_code=abc&from=yesterday&gpu_type=A100!&name=qcd', 'history-zh');
    await expect(page.getByRole('columnheader', { name: '等待' })).toBeVisible();
    await expect(page.getByRole('columnheader', { name: '运行' })).toBeVisible();
    await expect(page.getByText('更多筛选与排序')).toBeVisible();
    await expect(page.getByText('名称含“qcd”')).toBeVisible();
    await expect(page.getByRole('link', { name: 'qcd-baseline' })).toBeVisible();
    await expect(page.getByLabel('排序依据')).toHaveValue('submitted');
    await expect(page.getByRole('button', { name: '导出 CSV' })).toBeVisible();
  });
});
