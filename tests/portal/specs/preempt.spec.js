// preempt.spec.js - borrowing and giving back: carol (chem, no guaranteed GPUs) submits a
// t4 x2 job through the portal; it runs on GPUs borrowed from physics, and her job's page
// says so. Then physics (alice, through the API) asks for its two t4: carol's job is
// preempted, and her page shows, in words, that it was preempted, by which job of which
// tenant, and that it went back to the queue. Both jobs are cancelled at the end.
const { test, expect, world, login, visit } = require('../fixtures');
const { token, cancelQuietly } = require('../apicalls');

test('a borrowed job is preempted when the owner needs its GPUs, and the portal says why', async ({ page, request }) => {
  test.setTimeout(180_000);
  const stamp = Date.now();
  const carolTok = await token(request, 'carol');
  const aliceTok = await token(request, 'alice');
  let carolJob = null;
  let aliceJob = null;
  try {
    // carol submits through the form
    await login(page, 'carol');
    await visit(page, '#/jobs/new');
    const form = page.locator('#job-form');
    await form.getByLabel('Job name').fill(`md-borrow-${stamp}`);
    await form.getByLabel('Project', { exact: true }).selectOption('md');
    await form.getByLabel('GPU type').selectOption('t4');
    await form.getByLabel('Number of GPUs').fill('2');
    await form.getByLabel('Commands to run').fill('echo borrowing t4\nsleep 600');
    await form.getByRole('button', { name: 'Submit job' }).click();
    await expect(page).toHaveURL(/#\/jobs\/chem\/[0-9a-f-]{36}$/);
    carolJob = new URL(page.url()).hash.split('/').pop();

    // it runs, on borrowed GPUs, and the page explains what that means
    await expect(page.locator('#job-state .badge').first()).toHaveText('running', { timeout: 60_000 });
    await expect(page.locator('#job-state')).toContainText('on borrowed GPUs');
    await expect(page.getByText('Runs on borrowed GPUs.')).toBeVisible();
    await expect(page.locator('dl.props')).toContainText('yes (on borrowed GPUs)');
    await visit(page, `#/jobs/chem/${carolJob}`, 'job-borrowed');

    // physics wants its guaranteed t4 back
    const res = await request.post('/api/v1/tenants/physics/jobs', {
      headers: { Authorization: `Bearer ${aliceTok}` },
      data: { project: 'qcd', name: `needs-its-t4-${stamp}`, script: 'sleep 600', gpus: 2, gpu_type: 't4' },
    });
    expect(res.status()).toBe(201);
    aliceJob = (await res.json()).id;

    // carol's page, without a reload, tells who took the GPUs and what happened to her job
    await expect(page.getByText('This job was preempted: tenant physics needed its GPUs back',
      { exact: false })).toBeVisible({ timeout: 90_000 });
    const heading = page.getByRole('heading', { name: 'Preempted 1×' });
    await expect(heading).toBeVisible();
    const item = page.locator('section', { has: heading }).locator('li', { hasText: 'preempted by job' });
    await expect(item).toContainText(aliceJob.slice(0, 8));
    await expect(item).toContainText('of tenant physics');
    await expect(page.getByText('the job was running on GPUs borrowed from another tenant')).toBeVisible();
    await expect(page.locator('#job-state .badge').first()).toHaveText('queued');
    await expect(page.locator('ol.timeline')).toContainText('preempted');
    await expect(page.locator('dl.props')).toContainText('Times preempted1');
    await visit(page, `#/jobs/chem/${carolJob}`, 'job-preempted');

    // the list shows it too
    await visit(page, '#/jobs');
    await expect(page.locator('tr', { hasText: `md-borrow-${stamp}` })).toContainText('preempted 1×');

    // carol cancels her waiting job from its page
    await visit(page, `#/jobs/chem/${carolJob}`);
    await page.getByRole('button', { name: 'Cancel job' }).click();
    await page.getByRole('button', { name: 'Yes, cancel the job' }).click();
    await expect(page.locator('#job-state .badge').first()).toHaveText('cancelled', { timeout: 30_000 });
    await expect(page.getByText('The job is cancelled.')).toBeVisible();
  } finally {
    await cancelQuietly(request, carolTok, 'chem', carolJob);
    await cancelQuietly(request, aliceTok, 'physics', aliceJob);
  }
});
