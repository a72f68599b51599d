// templates.spec.js - job templates in the portal (docs/templates.md): tom, tenant admin
// of physics, writes a tenant template in the editor (#/templates); alice starts from
// it on the submit page: a form made from its parameters (typed inputs, defaults,
// required marks), a value out of bounds answered next to its input, then a job whose
// hostile parameter stays one word when it runs. Then the pages in Chinese. The
// template is the spec's own (a name of its own), removed at the end.
const { test, expect, login, visit, allowHttp } = require('../fixtures');

const JOB_PAGE = /#\/jobs\/physics\/[0-9a-f-]{36}$/;
const PORTAL = { 'X-Requested-With': 'aidc-portal' };

test('a tenant admin writes a template, a member submits from it', async ({ page, browser }) => {
  test.setTimeout(150_000);
  const name = `greet-${Date.now().toString(36)}`;
  const spec = {
    description: 'Greets, a few times',
    script: "printf '[%s]\\n' {{greeting}} {{count}} {{loud}} {{mode}}",
    resources: { cpus: 1, memory_gib: 1, time_limit_minutes: 5 },
    parameters: [
      { name: 'greeting', type: 'string', required: true, description: 'what to say' },
      { name: 'count', type: 'integer', default: 3, min: 1, max: 5, description: 'how often' },
      { name: 'loud', type: 'boolean', default: false },
      { name: 'mode', type: 'choice', choices: ['plain', 'fancy'], default: 'plain' },
    ],
  };

  // --- tom writes it in the editor
  await login(page, 'tom');
  await visit(page, '#/jobs/new');
  await page.getByRole('link', { name: 'Manage this tenant\'s templates' }).click();
  await visit(page, '#/templates', 'templates-admin');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Job templates · physics');
  await expect(page.locator('main')).toContainText('pytorch-ddp'); // the platform's, read-only
  await page.locator('#template-new').click();
  const editor = page.locator('#template-editor');
  await editor.getByLabel('Name').fill(name);
  // a placeholder naming no parameter: the server's words in the editor
  allowHttp(page, 400, '/api/v1/tenants/physics/templates');
  await editor.getByLabel('Template (JSON)').fill(JSON.stringify({ ...spec, script: 'echo {{who}}' }, null, 2));
  await editor.getByRole('button', { name: 'Save' }).click();
  await expect(editor.locator('[data-field="spec"] .field-error'))
    .toContainText('placeholder "who" names no parameter of the template');
  await editor.getByLabel('Template (JSON)').fill(JSON.stringify(spec, null, 2));
  await editor.getByRole('button', { name: 'Save' }).click();
  await expect(page.locator('main table').first()).toContainText(name);
  await visit(page, '#/templates', 'templates-admin-saved');

  // --- alice starts from it on the submit page
  const alice = await (await browser.newContext()).newPage();
  await login(alice, 'alice');
  await visit(alice, '#/jobs/new', 'job-submit-templates');
  const chooser = alice.locator('section', { hasText: 'Start from a template' });
  await expect(chooser).toContainText('jupyter');
  await expect(chooser.getByRole('link', { name: 'Manage this tenant\'s templates' })).toHaveCount(0);
  await chooser.locator(`a[data-template="${name}"]`).click();
  await expect(alice.getByRole('heading', { level: 1 })).toHaveText(`Submit from a template · ${name}`);
  await visit(alice, `#/jobs/template?name=${name}`, 'template-form');
  const form = alice.locator('#template-form');
  await expect(form.getByLabel('greeting *')).toHaveAttribute('aria-required', 'true');
  await expect(form.getByLabel('count', { exact: true })).toHaveValue('3');
  await expect(form.getByLabel('count', { exact: true })).toHaveAttribute('type', 'number');
  await expect(form.getByLabel('loud', { exact: true })).not.toBeChecked();
  await expect(form.getByLabel('mode', { exact: true })).toHaveValue('plain');
  await form.getByLabel('Project', { exact: true }).selectOption('qcd');

  // out of bounds: 422, said next to the parameter
  allowHttp(alice, 422, '/api/v1/tenants/physics/jobs');
  await form.getByLabel('greeting *').fill('hello; echo pwned');
  await form.getByLabel('count', { exact: true }).fill('9');
  await form.getByRole('button', { name: 'Submit job' }).click();
  await expect(form.locator('[data-field="parameters.count"] .field-error'))
    .toHaveText('parameter "count" must be at most 5');
  await visit(alice, `#/jobs/template?name=${name}`, null); // axe with the error shown

  await form.getByLabel('count', { exact: true }).fill('2');
  await form.getByLabel('loud', { exact: true }).check();
  await form.getByLabel('mode', { exact: true }).selectOption('fancy');
  await form.locator('summary').click();
  await form.getByLabel('Job name').fill(`${name}-job`);
  await visit(alice, `#/jobs/template?name=${name}`, 'template-form-filled');
  await form.getByRole('button', { name: 'Submit job' }).click();
  await expect(alice).toHaveURL(JOB_PAGE);
  await expect(alice.locator('#main[aria-busy="false"]')).toBeAttached();
  await expect(alice.locator('#job-state .badge').first()).toHaveText('succeeded', { timeout: 120_000 });
  // the hostile value stayed one word: printed whole, nothing of it ran
  await expect(alice.locator('pre.log')).toContainText('[hello; echo pwned]\n[2]\n[true]\n[fancy]',
    { timeout: 20_000 });
  const lines = (await alice.locator('pre.log').first().textContent()).split('\n');
  expect(lines).not.toContain('pwned');
  await visit(alice, new URL(alice.url()).hash, 'template-job');

  // --- in Chinese
  await alice.locator('#lang').click();
  await visit(alice, '#/jobs/new', 'job-submit-templates-zh');
  await expect(alice.locator('main')).toContainText('从模板开始');
  await visit(alice, `#/jobs/template?name=${name}`, 'template-form-zh');
  await expect(alice.locator('main')).toContainText('提交作业');
  await alice.locator('#lang').click();

  const res = await page.request.delete(`/api/v1/tenants/physics/templates/${name}`, { headers: PORTAL });
  expect(res.status()).toBe(204);
});
