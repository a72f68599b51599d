// researcher.spec.js - a researcher's day through the portal: alice lists her tenant's
// jobs (filters kept in the link, a phone-sized screen), submits a real job through the
// form (project, image from the catalog, a GPU, a script), watches it succeed on its
// page and reads its output; a bad submission shows the server's words next to the
// fields; a running job is cancelled after a confirmation.
const { test, expect, world, login, visit, allowHttp } = require('../fixtures');
const { token, cancelQuietly } = require('../apicalls');

const JOB_PAGE = /#\/jobs\/physics\/[0-9a-f-]{36}$/;

async function signOut(page) {
  await page.locator('#logout').click();
  await expect(page.locator('#username')).toBeVisible();
}

test.describe('researcher', () => {
  test('the jobs list: filters in the link, submit button, phone layout', async ({ page }) => {
    await login(page, 'alice');
    await visit(page, '#/jobs', 'jobs-list');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Jobs · physics');
    // physics keeps the default: a member reads only her own jobs, so there is
    // no one else to filter for; the finished run of last month is one of them
    await expect(page.getByText('Your jobs in this tenant, newest first')).toBeVisible();
    await expect(page.getByLabel('User', { exact: true })).toBeHidden();
    await expect(page.getByRole('button', { name: 'Everyone\'s jobs' })).toHaveCount(0);
    await expect(page.getByRole('link', { name: 'qcd-baseline' })).toBeVisible();
    await expect(page.getByRole('link', { name: 'Submit a job' })).toBeVisible();

    // a filter changes the link (so it can be shared) without redrawing the page
    const state = page.getByLabel('State', { exact: true });
    await state.evaluate((el) => { el.dataset.same = 'yes'; });
    await state.selectOption('succeeded');
    await expect(page).toHaveURL(/#\/jobs\?state=succeeded&user=alice$/);
    await expect(state).toHaveAttribute('data-same', 'yes');

    // the tenant admin reads everyone's jobs and filters by user
    await signOut(page);
    await login(page, 'tom');
    await visit(page, '#/jobs?state=succeeded', null);
    await expect(page.getByText('Your tenant\'s jobs, newest first')).toBeVisible();
    await page.getByLabel('User', { exact: true }).fill('alice');
    await page.getByRole('button', { name: 'Show' }).click();
    await expect(page).toHaveURL(/#\/jobs\?state=succeeded&user=alice$/);
    await expect(page.getByRole('link', { name: 'qcd-baseline' })).toBeVisible();
    await page.getByRole('button', { name: 'Everyone\'s jobs' }).click();
    await expect(page).toHaveURL(/#\/jobs\?state=succeeded$/);
    await expect(page.getByText('Showing: succeeded, jobs of everyone')).toBeVisible();

    // the link opens the same view
    await page.reload();
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    await expect(page.getByLabel('State', { exact: true })).toHaveValue('succeeded');
    await expect(page.getByLabel('User', { exact: true })).toHaveValue('');

    // a phone: the table folds into cards, nothing wider than the screen
    await signOut(page);
    await login(page, 'alice');
    await page.setViewportSize({ width: 390, height: 844 });
    await visit(page, '#/jobs', 'jobs-list-phone');
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
    await form.getByLabel('Project', { exact: true }).selectOption('qcd');
    // the tenant's image from the catalog: the local cluster pulls it and runs the job in it
    expect(world.runnable_image, 'the world has its registry (docker-registry)').toBeTruthy();
    await form.getByLabel('Container image').fill('physics/pytorch:2.4');
    await expect(form.getByText('framework')).toBeVisible();
    await expect(form.getByText('PyTorch 2.4').first()).toBeVisible();
    await form.getByLabel('GPU type').selectOption('a100');
    await expect(form.getByLabel('Number of GPUs')).toHaveValue('1');
    await expect(form.getByText(/a100: \d of 2 free now\. Your tenant: 2 guaranteed, at most 2\./)).toBeVisible();
    await form.getByLabel('Commands to run').fill(`echo ${marker}\ncat /etc/os-release\nsleep 2\nexit 0`);
    await form.getByLabel('Environment variables').fill('# a comment\nGREETING=hello');
    await form.getByRole('button', { name: 'Submit job' }).click();

    await expect(page).toHaveURL(JOB_PAGE);
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    // the page follows the job by itself: no reload, no sleep
    await expect(page.locator('#job-state .badge').first()).toHaveText('succeeded', { timeout: 120_000 });
    await expect(page.getByText('Finished successfully.')).toBeVisible();
    await expect(page.getByText('Exit code: 0.')).toBeVisible();
    await expect(page.locator('pre.log')).toContainText(marker, { timeout: 20_000 });
    await expect(page.locator('pre.log')).toContainText('aidc-test-busybox'); // in its image
    // the history shows the way it went
    const history = page.locator('ol.timeline');
    for (const state of ['queued', 'running', 'succeeded']) await expect(history).toContainText(state);
    await expect(page.locator('dl.props')).toContainText('physics/pytorch:2.4');
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

  test('a link that names no job says so without asking the server', async ({ page }) => {
    await login(page, 'alice');
    const asked = [];
    page.on('request', (req) => { if (req.url().includes('/jobs/')) asked.push(req.url()); });
    for (const hash of ['#/jobs/physics/not-a-uuid', '#/jobs/..%2Fadmin/0f0e0d0c-0b0a-4908-8706-050403020100',
      '#/jobs/Physics/0f0e0d0c-0b0a-4908-8706-050403020100']) {
      await visit(page, hash, hash.endsWith('not-a-uuid') ? 'job-no-such' : null);
      await expect(page.getByRole('heading', { level: 1 })).toHaveText('No such job');
      await expect(page.getByRole('alert')).toContainText('This link does not point to a job');
      await expect(page.getByRole('link', { name: 'All jobs' })).toBeVisible();
    }
    // ?copy= that is no job id is ignored: an empty form, no request for it
    await visit(page, '#/jobs/new?copy=../../me');
    await expect(page.getByText('Say what to run and what it needs.')).toBeVisible();
    expect(asked).toEqual([]);
  });

  test('"Load more" keeps its rows through the 5 s refresh and moves focus to them', async ({ page }) => {
    test.setTimeout(60_000);
    // the list answered by the test: 51 jobs, 50 a page; the second page is slower than
    // a refresh (which used to drop it), and the refreshes must then ask for all 51
    const fake = Array.from({ length: 51 }, (_, i) => ({
      id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, tenant: 'physics',
      name: `fake-${i}`, state: 'succeeded', project: 'qcd', user: 'alice', reason: null,
      resources: { gpus: 0, cpus: 1, memory_gib: 1, nodes: 1, time_limit_minutes: 60 },
      submitted_at: new Date(Date.now() - i * 60_000).toISOString(), preemptible: false, preemption_count: 0,
    }));
    const limits = [];
    await page.route((u) => u.pathname === '/api/v1/tenants/physics/jobs', async (route) => {
      const q = new URL(route.request().url()).searchParams;
      if (q.get('cursor') === 'page-2') {
        await new Promise((r) => setTimeout(r, 6500));
        return route.fulfill({ json: { items: fake.slice(50), next_cursor: null } });
      }
      const limit = Number(q.get('limit'));
      limits.push(limit);
      return route.fulfill({ json: { items: fake.slice(0, limit), next_cursor: limit < 51 ? 'page-2' : null } });
    });
    await login(page, 'alice');
    await visit(page, '#/jobs?user=');
    const rows = page.locator('table tbody tr');
    await expect(rows).toHaveCount(50);
    const more = page.getByRole('button', { name: 'Load more' });
    await more.click();
    await expect(rows).toHaveCount(51, { timeout: 15_000 });
    await expect(more).toBeHidden();
    await expect(page.getByRole('link', { name: 'fake-50' })).toBeFocused();
    // the next refresh asks for every row shown, and they stay
    const refreshed = page.waitForResponse((r) => r.url().includes('/tenants/physics/jobs?') && r.url().includes('limit=51'));
    await refreshed;
    await expect(rows).toHaveCount(51);
    await expect(page.getByRole('link', { name: 'fake-50' })).toBeFocused();
    expect(limits.filter((l) => l !== 50 && l !== 51)).toEqual([]);
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
      // "submit a copy" carries the id; the confirmation starts on the safe answer
      await expect(page.getByRole('link', { name: 'Submit a copy' })).toHaveAttribute('href', `#/jobs/new?copy=${job.id}`);
      await page.getByRole('button', { name: 'Cancel job' }).click();
      await expect(page.getByText('Cancel this job?')).toBeVisible();
      await expect(page.getByRole('button', { name: 'No, keep it' })).toBeFocused();
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
