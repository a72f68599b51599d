// researcher.spec.js - a researcher's day through the portal: alice lists her tenant's
// jobs (filters kept in the link, a phone-sized screen), submits a real job through the
// form (project, image from the catalog, a GPU, a script), watches it succeed on its
// page and reads its output; a bad submission shows the server's words next to the
// fields; a running job is cancelled after a confirmation.
const { test, expect, world, login, visit, allowHttp } = require('../fixtures');
const { token, cancelQuietly } = require('../apicalls');

const JOB_PAGE = /#\/jobs\/physics\/[0-9a-f-]{36}$/;

test.describe('researcher', () => {
  test('the jobs list: filters in the link, submit button, phone layout', async ({ page }) => {
    await login(page, 'alice');
    await visit(page, '#/jobs', 'jobs-list');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Jobs · physics');
    // a member sees her own jobs first; the finished run of last month is one of them
    await expect(page.getByLabel('User', { exact: true })).toHaveValue('alice');
    await expect(page.getByRole('link', { name: 'qcd-baseline' })).toBeVisible();
    await expect(page.getByRole('link', { name: 'Submit a job' })).toBeVisible();

    // a filter changes the link (so it can be shared) without redrawing the page
    const state = page.getByLabel('State', { exact: true });
    await state.evaluate((el) => { el.dataset.same = 'yes'; });
    await state.selectOption('succeeded');
    await expect(page).toHaveURL(/#\/jobs\?state=succeeded&user=alice$/);
    await expect(state).toHaveAttribute('data-same', 'yes');
    await page.getByRole('button', { name: 'Everyone\'s jobs' }).click();
    await expect(page).toHaveURL(/#\/jobs\?state=succeeded&user=$/);
    await expect(page.getByText('Showing: succeeded, jobs of everyone')).toBeVisible();

    // the link opens the same view
    await page.reload();
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    await expect(page.getByLabel('State', { exact: true })).toHaveValue('succeeded');
    await expect(page.getByLabel('User', { exact: true })).toHaveValue('');

    // a phone: the table folds into cards, nothing wider than the screen
    await page.setViewportSize({ width: 390, height: 844 });
    await visit(page, '#/jobs?user=', 'jobs-list-phone');
    await expect(page.getByRole('link', { name: 'qcd-baseline' })).toBeVisible();
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
  });

  test('alice submits a job through the form, sees it succeed and reads its output', async ({ page }) => {
    test.setTimeout(150_000);
    const marker = `portal-says-hello-${Date.now()}`;
    await login(page, 'alice');
    await visit(page, '#/jobs');
    await page.getByRole('link', { name: 'Submit a job' }).click();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Submit a job · physics');
    await visit(page, '#/jobs/new', 'job-submit');

    const form = page.locator('#job-form');
    await form.getByLabel('Job name').fill(`hello-${Date.now()}`);
    await form.getByLabel('Project').selectOption('qcd');
    // the tenant's image from the catalog (the local cluster records it and runs on the host)
    await form.getByLabel('Container image').fill('physics/pytorch:2.3');
    await expect(form.getByText('framework')).toBeVisible();
    await expect(form.getByText('PyTorch 2.3').first()).toBeVisible();
    await form.getByLabel('GPU type').selectOption('a100');
    await expect(form.getByLabel('Number of GPUs')).toHaveValue('1');
    await expect(form.getByText(/a100: \d of 2 free now\. Your tenant: 2 guaranteed, at most 2\./)).toBeVisible();
    await form.getByLabel('Commands to run').fill(`echo ${marker}\nsleep 2\nexit 0`);
    await form.getByLabel('Environment variables').fill('# a comment\nGREETING=hello');
    await form.getByRole('button', { name: 'Submit job' }).click();

    await expect(page).toHaveURL(JOB_PAGE);
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    // the page follows the job by itself: no reload, no sleep
    await expect(page.locator('#job-state .badge').first()).toHaveText('succeeded', { timeout: 120_000 });
    await expect(page.getByText('Finished successfully.')).toBeVisible();
    await expect(page.getByText('Exit code: 0.')).toBeVisible();
    await expect(page.locator('pre.log')).toContainText(marker, { timeout: 20_000 });
    // the history shows the way it went
    const history = page.locator('ol.timeline');
    for (const state of ['queued', 'running', 'succeeded']) await expect(history).toContainText(state);
    await expect(page.locator('dl.props')).toContainText('physics/pytorch:2.3');
    await expect(page.locator('dl.props')).toContainText('GREETING = hello');
    await visit(page, new URL(page.url()).hash, 'job-detail');

    // and the list links to it
    await visit(page, '#/jobs');
    await expect(page.locator('table')).toContainText('succeeded');
  });

  test('a bad submission shows the server\'s message next to each field', async ({ page }) => {
    await login(page, 'alice');
    await visit(page, '#/jobs/new');
    const form = page.locator('#job-form');
    const error = (name) => form.locator(`[data-field="${name}"] .field-error`);

    // checked in the browser first: environment lines, each with its line number
    await form.getByLabel('Environment variables').fill('OK=1\nnot a variable\nAIDC_TENANT=x');
    await form.getByRole('button', { name: 'Submit job' }).click();
    await expect(error('env')).toContainText('Line 2: write NAME=value.');
    await expect(error('env')).toContainText('Line 3: AIDC_TENANT is set by the platform');
    await form.getByLabel('Environment variables').fill('');

    // 400: the server's field messages land beside the fields
    allowHttp(page, 400, '/api/v1/tenants/physics/jobs');
    await form.getByLabel('Job name').fill('too-big');
    await form.getByLabel('GPU type').selectOption('a100');
    await form.getByLabel('Number of GPUs').fill('999');
    await form.getByRole('button', { name: 'Submit job' }).click();
    await expect(error('gpus')).toHaveText('must be 0 to 64');
    await expect(form.getByLabel('Number of GPUs')).toHaveAttribute('aria-invalid', 'true');
    await expect(error('script')).toHaveText('must not be empty');
    await expect(form.locator('.form-error').last()).toHaveText('Please correct the marked fields.');
    await visit(page, '#/jobs/new', null); // axe with the errors shown (same hash: no navigation)

    // 422: valid, but no cluster could ever run it
    allowHttp(page, 422, '/api/v1/tenants/physics/jobs');
    await form.getByLabel('Commands to run').fill('true');
    await form.getByLabel('GPU type').selectOption('t4');
    await form.getByLabel('Number of GPUs').fill('3');
    await form.getByRole('button', { name: 'Submit job' }).click();
    await expect(error('gpus')).toHaveText('needs 3 GPUs of type "t4"; the largest cluster has 2');
    await expect(error('script')).toBeEmpty();
    await expect(form.locator('.form-error').last()).toContainText('This job can never run as asked');
    await expect(page).toHaveURL(/#\/jobs\/new$/);
  });

  test('alice cancels her running job after confirming', async ({ page, request }) => {
    test.setTimeout(90_000);
    const tok = await token(request, 'alice');
    const res = await request.post('/api/v1/tenants/physics/jobs', {
      headers: { Authorization: `Bearer ${tok}` },
      data: { project: 'lattice', name: `to-cancel-${Date.now()}`, script: 'echo waiting; sleep 600' },
    });
    expect(res.status()).toBe(201);
    const job = await res.json();
    try {
      await login(page, 'alice');
      await visit(page, `#/jobs/physics/${job.id}`);
      await expect(page.locator('#job-state .badge').first()).toHaveText('running', { timeout: 60_000 });
      await expect(page.locator('pre.log')).toContainText('waiting', { timeout: 20_000 });
      await page.getByRole('button', { name: 'Cancel job' }).click();
      await expect(page.getByText('Cancel this job?')).toBeVisible();
      await visit(page, `#/jobs/physics/${job.id}`, 'job-cancel-confirm');
      await page.getByRole('button', { name: 'Yes, cancel the job' }).click();
      await expect(page.locator('#job-state .badge').first()).toHaveText('cancelled', { timeout: 60_000 });
      await expect(page.getByRole('button', { name: 'Cancel job' })).toBeHidden();
      await expect(page.locator('ol.timeline')).toContainText('Cancellation requested by alice.');
    } finally {
      await cancelQuietly(request, tok, 'physics', job.id);
    }
  });
});
