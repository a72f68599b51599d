// dashboard.spec.js - the first page a researcher sees, in both languages: quota per GPU
// type as bars with the numbers in words (used / guaranteed / limit, borrowed apart), her
// running and queued jobs, this month's GPU-hours against the budget; the language
// switch turns the whole signed-in portal Chinese and is remembered; the menu folds on a
// phone and opens from the keyboard.
const { test, expect, login, visit } = require('../fixtures');
const { token, submitJob, waitForState, cancelQuietly } = require('../apicalls');

const quotaOf = (page, name) => page.locator('.quota').filter({ has: page.locator('strong', { hasText: name }) });

test('alice sees her quota, her running job and the month\'s budget', async ({ page, request }) => {
  const tok = await token(request, 'alice');
  const name = `dash-${Date.now().toString(36)}`;
  const job = await submitJob(request, tok, 'physics',
    { project: 'lattice', name, script: 'sleep 300', gpus: 1, gpu_type: 'a100' });
  try {
    await waitForState(request, tok, 'physics', job.id, ['running']);
    await login(page, 'alice');
    await visit(page, '#/dashboard', 'dashboard');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Dashboard · physics');
    // the bar carries its numbers as text (role img + label), not colour alone
    const a100 = quotaOf(page, 'gpu:a100');
    await expect(a100).toContainText('1 used of 2 guaranteed, limit 2; 0 borrowed');
    await expect(a100.getByRole('img')).toHaveAttribute('aria-label', /gpu:a100: 1 used of 2 guaranteed/);
    await expect(quotaOf(page, 'gpu:t4')).toContainText('of 2 guaranteed, limit 2');
    const mine = page.getByRole('region', { name: 'My running and queued jobs', exact: true }).first();
    const row = mine.locator('tr').filter({ hasText: name });
    await expect(row).toContainText('running');
    await expect(row).toContainText('1 × a100');
    await row.getByRole('link', { name }).click();
    await expect(page).toHaveURL(new RegExp(`#/jobs/physics/${job.id}$`));
    // the budget: gpu_hours_month limit 1000 of the world
    await visit(page, '#/dashboard', 'dashboard-again');
    await expect(quotaOf(page, 'Budget')).toContainText(/of 1,000 GPU-hours/);
  } finally {
    await cancelQuietly(request, tok, 'physics', job.id);
  }
});

test('borrowed GPUs are shown apart from the guarantee', async ({ page, request }) => {
  const tok = await token(request, 'carol');
  const job = await submitJob(request, tok, 'chem',
    { project: 'md', name: `dash-borrow-${Date.now().toString(36)}`, script: 'sleep 300', gpus: 1, gpu_type: 'a100' });
  try {
    await waitForState(request, tok, 'chem', job.id, ['running']);
    await login(page, 'carol');
    await visit(page, '#/dashboard', 'dashboard-borrowed');
    // chem has no guarantee: its one running a100 is borrowed
    await expect(quotaOf(page, 'gpu:a100')).toContainText('1 used of 0 guaranteed, limit 2; 1 borrowed');
    await expect(quotaOf(page, 'gpu:a100').locator('.bar-borrowed')).toHaveCSS('width', /^[1-9]/);
  } finally {
    await cancelQuietly(request, tok, 'chem', job.id);
  }
});

test('the language switch turns the signed-in portal Chinese and is remembered', async ({ page }) => {
  await login(page, 'alice');
  await visit(page, '#/dashboard', 'dashboard-en');
  await page.locator('#lang').click();
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  await expect(page.locator('#main[aria-busy="false"]')).toBeVisible();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('总览 · physics');
  await expect(page.locator('#nav')).toContainText('作业');
  await expect(page.locator('#nav')).toContainText('用量');
  await expect(page.locator('#logout')).toHaveText('退出登录');
  await expect(quotaOf(page, 'gpu:a100')).toContainText('保障 2');
  await expect(page.locator('#lang')).toHaveText('English');
  await visit(page, '#/dashboard', 'dashboard-zh');
  // every page follows, and a reload keeps the choice
  await visit(page, '#/jobs', 'jobs-zh');
  await expect(page.getByRole('heading', { level: 1 })).toContainText('作业');
  await page.reload();
  await expect(page.locator('#main[aria-busy="false"]')).toBeVisible();
  await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
  await expect(page.locator('#logout')).toHaveText('退出登录');
  await page.locator('#lang').click();
  await expect(page.locator('#logout')).toHaveText('Sign out');
});

test('on a phone the menu folds and opens from the keyboard', async ({ page }) => {
  await page.setViewportSize({ width: 390, height: 844 });
  await login(page, 'alice');
  await visit(page, '#/dashboard', 'dashboard-390');
  const menu = page.locator('#menu');
  await expect(menu).toBeVisible();
  await expect(page.locator('#nav')).toBeHidden();
  await menu.focus();
  await page.keyboard.press('Enter');
  await expect(menu).toHaveAttribute('aria-expanded', 'true');
  await expect(page.locator('#nav')).toBeVisible();
  await page.locator('#nav').getByRole('link', { name: 'Jobs' }).press('Enter');
  await expect(page).toHaveURL(/#\/jobs$/);
  await expect(page.locator('#main[aria-busy="false"]')).toBeVisible();
  await expect(page.locator('#nav')).toBeHidden(); // folded again after navigating
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth > window.innerWidth);
  expect(overflow).toBe(false);
});

test('the skip link moves focus to the content and keeps the page', async ({ page }) => {
  await login(page, 'alice');
  await visit(page, '#/dashboard', 'dashboard-skip');
  await page.locator('#skip-link').focus();
  await page.keyboard.press('Enter');
  await expect(page.locator('#main')).toBeFocused();
  await expect(page).toHaveURL(/#\/dashboard$/);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Dashboard · physics');
});
