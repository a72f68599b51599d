// capacity.spec.js - the cluster view (#/capacity; docs/efficiency.md) and a job's
// efficiency summary: alice (a member) sees the GPUs per type with their bar, queued
// demand and earliest starts, but no nodes and no idle report; the platform admin sees
// the nodes of the local cluster and the idle report; a job alice runs shows its CPU and
// memory efficiency (measured by its cgroup) on its page, its GPU fields "not measured"
// on a cluster without metrics. Then in Chinese. Other specs run jobs meanwhile: only
// the shape of the numbers is asserted.
const { test, expect, world, login, visit } = require('../fixtures');
const { token, submitJob, waitForState } = require('../apicalls');

test('the cluster view for members and platform admins', async ({ page, browser }) => {
  test.setTimeout(90_000);
  await login(page, 'alice');
  await page.locator('#nav').getByRole('link', { name: 'Cluster' }).click();
  await visit(page, '#/capacity', 'capacity-member');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Cluster capacity');
  const a100 = page.locator('.capacity-type[data-gpu-type="a100"]');
  await expect(a100).toContainText(/\d+ of 2 in use, \d+ free/);
  await expect(a100.locator('.start-1')).not.toBeEmpty();
  // 8 GPUs of a type the platform has 2 of: never
  await expect(a100.locator('.start-8')).toHaveText('not with what runs now');
  await expect(page.locator('.capacity-type[data-gpu-type="t4"]')).toBeVisible();
  await expect(page.getByRole('heading', { name: 'Nodes' })).toHaveCount(0);
  await expect(page.getByRole('heading', { name: 'Jobs idling on their GPUs' })).toHaveCount(0);

  const admin = await (await browser.newContext()).newPage();
  await login(admin, 'admin', world.admin_password);
  // a platform admin's header is full: the view is linked from the clusters tab
  await visit(admin, '#/platform?tab=clusters', null);
  await admin.locator('#capacity-link').click();
  await expect(admin.locator('#main[aria-busy="false"]')).toBeAttached();
  await visit(admin, '#/capacity', 'capacity-admin');
  await expect(admin.getByRole('heading', { name: 'Nodes' })).toBeVisible();
  await expect(admin.locator('td[data-label="Cluster"]', { hasText: 'local' }).first()).toBeVisible();
  await expect(admin.getByRole('heading', { name: 'Jobs idling on their GPUs' })).toBeVisible();

  await page.locator('#lang').click();
  await visit(page, '#/capacity', 'capacity-zh');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('集群容量');
  await expect(page.locator('.capacity-type[data-gpu-type="a100"] .start-8')).toHaveText('以当前运行情况无法估计');
  await page.locator('#lang').click();
});

test('a job page shows its efficiency', async ({ page, request }) => {
  test.setTimeout(120_000);
  const tok = await token(request, 'alice');
  // about 100 MB held at once, then two seconds of one busy core
  const job = await submitJob(request, tok, 'physics', {
    project: 'qcd', name: 'efficiency-demo', cpus: 2, memory_gib: 1,
    script: 'head -c 100000000 /dev/zero | tail -n 1 | wc -c\nend=$(( $(date +%s) + 2 ))\nwhile [ $(date +%s) -lt $end ]; do :; done',
  });
  await waitForState(request, tok, 'physics', job.id, ['succeeded']);
  await login(page, 'alice');
  await visit(page, `#/jobs/physics/${job.id}`, 'job-efficiency');
  const card = page.locator('section[aria-labelledby="job-eff-h"]');
  await expect(card.getByRole('heading', { name: 'Efficiency' })).toBeVisible();
  await expect(card).toContainText(/CPU efficiency\s*\d+ % of 2 cores over the run/);
  await expect(card).toContainText(/Memory \(peak\)\s*[\d.]+ GiB of 1 GiB asked for \(\d+ %\)/);
  await page.locator('#lang').click();
  await visit(page, `#/jobs/physics/${job.id}`, 'job-efficiency-zh');
  await expect(card.getByRole('heading', { name: '资源使用效率' })).toBeVisible();
  await expect(card).toContainText('CPU 效率');
  await page.locator('#lang').click();
});
