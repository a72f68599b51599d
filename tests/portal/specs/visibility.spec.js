// visibility.spec.js - who reads whose jobs (issue 21, item 5): a member reads only its
// own jobs unless its tenant shares them; the tenant admin turns sharing on and off on
// the tenant page, and the member's job list follows. In English and Chinese.
const { test, expect, login, visit } = require('../fixtures');
const { token, bearer } = require('../apicalls');

const TEXT = {
  en: { section: 'Who sees whose jobs', box: 'Members see each other\'s jobs', save: 'Save',
    on: 'Members now see each other\'s jobs.', off: 'Members now see only their own jobs.',
    own: 'Your jobs in this tenant, newest first', all: 'Your tenant\'s jobs, newest first', user: 'User' },
  zh: { section: '作业可见范围', box: '成员可以查看彼此的作业', save: '保存',
    on: '成员现在可以查看彼此的作业。', off: '成员现在只能看到自己的作业。',
    own: '您在本租户的作业，最新的在前', all: '本租户的作业，最新的在前', user: '用户' },
};

async function signOut(page) {
  await page.locator('#logout').click();
  await expect(page.locator('#username')).toBeVisible();
}

for (const [code, locale] of [['en', 'en-US'], ['zh', 'zh-CN']]) {
  test.describe(`job visibility (${code})`, () => {
    test.use({ locale });
    const w = TEXT[code];

    test('the tenant admin shares jobs with the members, and takes it back', async ({ page, request }) => {
      const tom = await token(request, 'tom');
      try {
        await login(page, 'tom');
        await visit(page, '#/tenant', null);
        const box = page.getByLabel(w.box);
        await expect(page.getByRole('heading', { name: w.section })).toBeVisible();
        await expect(box).not.toBeChecked();
        await box.check();
        await page.locator('#tadmin-visibility').getByRole('button', { name: w.save }).click();
        await expect(page.locator('#tadmin-visibility')).toContainText(w.on);
        await visit(page, '#/tenant', `tenant-visibility-${code}`);
        await expect(page.getByLabel(w.box)).toBeChecked(); // the server has it

        // the member now reads everyone's jobs: the list offers the user filter
        await signOut(page);
        await login(page, 'alice');
        await visit(page, '#/jobs', null);
        await expect(page.getByText(w.all)).toBeVisible();
        await expect(page.getByLabel(w.user, { exact: true })).toBeVisible();

        await signOut(page);
        await login(page, 'tom');
        await visit(page, '#/tenant', null);
        await page.getByLabel(w.box).uncheck();
        await page.locator('#tadmin-visibility').getByRole('button', { name: w.save }).click();
        await expect(page.locator('#tadmin-visibility')).toContainText(w.off);

        await signOut(page);
        await login(page, 'alice');
        await visit(page, '#/jobs', `jobs-own-only-${code}`);
        await expect(page.getByText(w.own)).toBeVisible();
        await expect(page.getByLabel(w.user, { exact: true })).toBeHidden();
      } finally {
        // whatever happened, physics keeps the default for the other specs
        const res = await request.patch('/api/v1/tenants/physics',
          { headers: bearer(tom), data: { members_see_all_jobs: false } });
        expect(res.status()).toBe(200);
      }
    });
  });
}
