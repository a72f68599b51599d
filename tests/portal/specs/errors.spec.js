// errors.spec.js - the server's refusals in the reader's language (issue 21, item 8):
// every problem carries a stable code and the params of its text, and the portal shows
// its own text for each code it knows, in English and Chinese; only a code it does not
// know (a newer server) falls back to the server's English.
const { test, expect, login, visit, allowHttp } = require('../fixtures');
const { token, bearer } = require('../apicalls');

const TEXT = {
  en: {
    range: 'must be 0 to 64', empty: 'must not be empty', marked: 'Please correct the marked fields.',
    cluster: 'needs 3 GPUs of type "t4"; the largest cluster has 2',
    quota: 'GPUs of type "a100" exceed the project\'s limit of 1',
    submit: 'Submit job', gpuType: 'GPU type', gpus: 'Number of GPUs', name: 'Job name',
    script: 'Commands to run', project: 'Project',
  },
  zh: {
    range: '须在 0 到 64 之间', empty: '不能为空', marked: '请修正标出的字段。',
    cluster: '需要 3 块“t4”GPU，最大的集群只有 2 块',
    quota: '块“a100”GPU 超出项目上限 1 块',
    submit: '提交作业', gpuType: 'GPU 类型', gpus: 'GPU 数量', name: '作业名称',
    script: '要运行的命令', project: '项目',
  },
};

// A project of physics of its own with an a100 limit of 1 (tom is physics' tenant admin).
async function cappedProject(request, slug) {
  const tom = await token(request, 'tom');
  let res = await request.post('/api/v1/tenants/physics/projects',
    { headers: bearer(tom), data: { slug, name: `Capped ${slug}` } });
  expect(res.status(), await res.text()).toBe(201);
  res = await request.put(`/api/v1/tenants/physics/projects/${slug}/quota`,
    { headers: bearer(tom), data: { resources: { 'gpu:a100': { limit: 1 } } } });
  expect(res.status(), await res.text()).toBe(200);
}

for (const [code, locale] of [['en', 'en-US'], ['zh', 'zh-CN']]) {
  test.describe(`refusals (${code})`, () => {
    test.use({ locale });
    const w = TEXT[code];

    test('field errors and impossible jobs read in the page\'s language', async ({ page, request }) => {
      // the API itself: a code and the params the text was built from
      const alice = await token(request, 'alice');
      const api = await request.post('/api/v1/tenants/physics/jobs', { headers: bearer(alice),
        data: { project: 'lattice', name: 'x', script: 'true', gpus: 3, gpu_type: 't4' } });
      expect(api.status()).toBe(422);
      const problem = await api.json();
      expect(problem.code).toBe('job.gpus_exceed_cluster');
      expect(problem.errors[0]).toMatchObject({ field: 'gpus', code: 'job.gpus_exceed_cluster',
        params: { requested: 3, gpu_type: 't4', largest: 2 } });

      const slug = `capped-${code}-${Date.now() % 100000}`;
      await cappedProject(request, slug);
      await login(page, 'alice');
      await visit(page, '#/jobs/new', null);
      const form = page.locator('#job-form');
      const error = (name) => form.locator(`[data-field="${name}"] .field-error`);

      allowHttp(page, 400, '/api/v1/tenants/physics/jobs');
      await form.getByLabel(w.name).fill('too-big');
      await form.getByLabel(w.gpuType).selectOption('a100');
      await form.getByLabel(w.gpus).fill('999');
      await form.getByRole('button', { name: w.submit }).click();
      await expect(error('gpus')).toHaveText(w.range);
      await expect(error('script')).toHaveText(w.empty);
      await expect(form.locator('.form-error').last()).toHaveText(w.marked);

      allowHttp(page, 422, '/api/v1/tenants/physics/jobs');
      await form.getByLabel(w.script).fill('true');
      await form.getByLabel(w.gpuType).selectOption('t4');
      await form.getByLabel(w.gpus).fill('3');
      await form.getByRole('button', { name: w.submit }).click();
      await expect(error('gpus')).toHaveText(w.cluster);

      // over the project's quota (not the tenant's: the right one is named)
      await form.getByLabel(w.project, { exact: true }).selectOption(slug);
      await form.getByLabel(w.gpuType).selectOption('a100');
      await form.getByLabel(w.gpus).fill('2');
      await form.getByRole('button', { name: w.submit }).click();
      await expect(error('gpus')).toContainText(w.quota);
      await visit(page, '#/jobs/new', `refusal-quota-${code}`);
    });

    test('a code the portal does not know shows the server\'s English', async ({ page }) => {
      await login(page, 'alice');
      await visit(page, '#/jobs/new', null);
      const form = page.locator('#job-form');
      await page.route('**/api/v1/tenants/physics/jobs', (route) => route.fulfill({
        status: 422, contentType: 'application/problem+json',
        body: JSON.stringify({ type: 'about:blank', title: 'Unprocessable Content', status: 422,
          code: 'future.refusal', detail: 'gpus: a refusal of a newer server', params: { field: 'gpus' },
          request_id: 'r', errors: [{ field: 'gpus', code: 'future.refusal',
            message: 'a refusal of a newer server', params: {} }] }),
      }));
      allowHttp(page, 422, '/api/v1/tenants/physics/jobs');
      await form.getByLabel(w.name).fill('future');
      await form.getByLabel(w.script).fill('true');
      await form.getByRole('button', { name: w.submit }).click();
      await expect(form.locator('[data-field="gpus"] .field-error')).toHaveText('a refusal of a newer server');
    });
  });
}
