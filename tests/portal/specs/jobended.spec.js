// jobended.spec.js - an ended job's page says how it ended and nothing else: a
// cancelled job (which keeps stop_requested "cancel") shows no "cancelling" badge and
// no "being stopped" note; a failed job shows its stderr first (where the traceback
// is), and a run of under a second is not "0 s". In English and Chinese.
const { test, expect, login, visit } = require('../fixtures');
const { token, bearer, submitJob, waitForState, cancelQuietly } = require('../apicalls');

const TEXT = {
  en: { cancelled: 'cancelled', failed: 'failed', cancelling: 'cancelling',
    stopping: 'Cancellation requested: the job is being stopped.', sent: 'Cancellation requested.',
    done: 'The job is cancelled.', under1: 'Ran for under 1 s,', tenths: 'Ran for 0.4 s,', zero: /Ran for 0 s/ },
  zh: { cancelled: '已取消', failed: '已失败', cancelling: '正在取消',
    stopping: '已请求取消：作业正在停止。', sent: '已请求取消。',
    done: '作业已取消。', under1: '运行了 不到 1 秒，', tenths: '运行了 0.4 秒，', zero: /运行了 0 秒/ },
};

const jobPage = (job) => `#/jobs/physics/${job.id}`;

// The job as the API has it.
async function readJob(request, tok, id) {
  const res = await request.get(`/api/v1/tenants/physics/jobs/${id}`, { headers: bearer(tok) });
  expect(res.status()).toBe(200);
  return res.json();
}

// Nothing on the page says the job is still being stopped.
async function expectEnded(page, w) {
  await expect(page.locator('#job-state .badge')).toHaveText([w.cancelled]);
  await expect(page.locator('#job-state')).not.toContainText(w.cancelling);
  await expect(page.locator('#main').getByText(w.stopping)).toHaveCount(0);
  await expect(page.locator('#main').getByText(w.sent, { exact: true })).toHaveCount(0); // the toast may still hold it
}

for (const [code, locale] of [['en', 'en-US'], ['zh', 'zh-CN']]) {
  test.describe(`an ended job (${code})`, () => {
    test.use({ locale });
    const w = TEXT[code];

    test('cancelled: shows how it ended, not "cancelling"', async ({ page, request }) => {
      test.setTimeout(120_000);
      const tok = await token(request, 'alice');
      // cancelled through the page: what it says while the job stops, then once it has
      const job = await submitJob(request, tok, 'physics',
        { project: 'lattice', name: `cancel-me-${code}-${Date.now()}`, script: 'echo started; sleep 600' });
      try {
        await login(page, 'alice');
        await visit(page, jobPage(job), null);
        await expect(page.locator('#job-state .badge').first()).toHaveText(code === 'en' ? 'running' : '运行中',
          { timeout: 60_000 });
        await page.locator('.page-head button.danger').click();
        await page.locator('#job-cancel-q + .actions button.danger').click();
        await expect(page.locator('#job-state .badge').first()).toHaveText(w.cancelled, { timeout: 60_000 });
        await expectEnded(page, w);
        await expect(page.locator('#main').getByText(w.done, { exact: true })).toBeVisible();
        await visit(page, jobPage(job), `job-cancelled-here-${code}`);
      } finally {
        await cancelQuietly(request, tok, 'physics', job.id);
      }

      // opened after it ended: the job keeps stop_requested "cancel", the page ignores it
      const ended = await readJob(request, tok, job.id);
      expect(ended.state).toBe('cancelled');
      expect(ended.stop_requested).toBe('cancel');
      await page.reload();
      await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
      await expectEnded(page, w);
      await visit(page, jobPage(job), `job-cancelled-${code}`);
    });

    test('failed: stderr first, a run under a second is not "0 s"', async ({ page, request }) => {
      test.setTimeout(120_000);
      const tok = await token(request, 'alice');
      const marker = `Traceback-${code}-${Date.now()}`;
      const job = await submitJob(request, tok, 'physics', { project: 'lattice', name: `fail-fast-${code}`,
        script: `echo "${marker}" >&2\necho "ValueError: boom" >&2\nexit 3` });
      await waitForState(request, tok, 'physics', job.id, ['failed']);
      const ended = await readJob(request, tok, job.id);

      await login(page, 'alice');
      await visit(page, jobPage(job), `job-failed-${code}`);
      await expect(page.locator('#job-state .badge')).toHaveText([w.failed]);
      await expect(page.locator('select[name="stream"]')).toHaveValue('stderr');
      await expect(page.locator('pre.log')).toContainText(marker);
      await expect(page.locator('pre.log')).toContainText('ValueError: boom');
      // the local executor's times are whole seconds: 0 of them is "under 1 s"
      const whole = (new Date(ended.finished_at) - new Date(ended.started_at)) / 1000;
      const status = page.locator('section[aria-labelledby="job-status-h"]');
      await expect(status).not.toContainText(w.zero);
      if (whole === 0) await expect(status).toContainText(w.under1);

      // reading stdout is still one choice away, and stays chosen
      await page.locator('select[name="stream"]').selectOption('stdout');
      await expect(page.locator('pre.log')).not.toContainText(marker);

      // times with fractions (other clusters): the tenths are said
      await page.route((u) => u.pathname === `/api/v1/tenants/physics/jobs/${job.id}`, async (route) => {
        const res = await route.fetch();
        const body = await res.json();
        const day = body.finished_at.slice(0, 19);
        await route.fulfill({ response: res, json: { ...body, started_at: `${day}.100Z`, finished_at: `${day}.512Z` } });
      });
      await page.reload();
      await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
      await expect(status).toContainText(w.tenths);
      await visit(page, jobPage(job), `job-failed-tenths-${code}`);
    });
  });
}

test('a job that fails while its page is open switches to stderr', async ({ page, request }) => {
  test.setTimeout(120_000);
  const tok = await token(request, 'alice');
  const marker = `late-traceback-${Date.now()}`;
  const job = await submitJob(request, tok, 'physics', { project: 'lattice', name: 'fail-later',
    script: `echo working\nsleep 4\necho "${marker}" >&2\nexit 1` });
  await login(page, 'alice');
  await visit(page, jobPage(job), null);
  await expect(page.locator('select[name="stream"]')).toHaveValue('stdout');
  await expect(page.locator('#job-state .badge')).toHaveText(['failed'], { timeout: 60_000 });
  await expect(page.locator('select[name="stream"]')).toHaveValue('stderr');
  await expect(page.locator('pre.log')).toContainText(marker, { timeout: 15_000 });
});
