// arrays.spec.js - a job array and a job depending on it, as alice sees them: the
// array's page counts and lists its tasks (each linked, with its wait and run time),
// a task's page leads back to its array, the dependant's page says what it waits for,
// and the jobs list shows the array's progress; the array's page in Chinese too.
const { test, expect, login, visit } = require('../fixtures');
const { token, submitJob, waitForState } = require('../apicalls');

test('an array and its dependant, en and zh', async ({ page, request }) => {
  test.setTimeout(120_000);
  const tok = await token(request, 'alice');
  const stamp = Date.now();
  const arr = await submitJob(request, tok, 'physics', {
    project: 'lattice', name: `sweep-${stamp}`, command: ['sh', '-c', 'echo task $AIDC_ARRAY_INDEX'],
    array: { count: 3, max_parallel: 2 },
  });
  const after = await submitJob(request, tok, 'physics', {
    project: 'lattice', name: `summary-${stamp}`, command: ['true'],
    depends_on: [{ job: arr.id, condition: 'succeeded' }],
  });
  await waitForState(request, tok, 'physics', arr.id, ['succeeded']);
  await waitForState(request, tok, 'physics', after.id, ['succeeded']);

  await login(page, 'alice');
  await visit(page, `#/jobs/physics/${arr.id}`, 'array-page');
  const card = page.locator('section', { has: page.getByRole('heading', { name: 'Array tasks' }) });
  await expect(card.getByText('3 tasks, at most 2 at once:')).toBeVisible();
  const tasks = card.getByRole('table', { name: 'The array\'s tasks' });
  await expect(tasks.locator('tbody tr')).toHaveCount(3);
  for (const i of [0, 1, 2]) await expect(tasks.getByRole('link', { name: `#${i}` })).toBeVisible();
  await expect(tasks.locator('tbody .badge', { hasText: 'succeeded' })).toHaveCount(3);

  // a task leads back to its array
  await tasks.getByRole('link', { name: '#1' }).click();
  await expect(page.getByText('Task #1 of the array')).toBeVisible();
  await page.getByRole('link', { name: arr.id.slice(0, 8) }).click();
  await expect(page).toHaveURL(new RegExp(`#/jobs/physics/${arr.id}$`));

  // the dependant says what it waited for
  await visit(page, `#/jobs/physics/${after.id}`, 'array-dependant');
  await expect(page.getByText('It starts only when:')).toBeVisible();
  await expect(page.getByRole('listitem').filter({ hasText: 'that job succeeded' })).toBeVisible();

  // the list shows the array once, with its progress
  await visit(page, `#/jobs?name=sweep-${stamp}`, null);
  await expect(page.getByText('array · 3/3 done')).toBeVisible();

  await page.locator('#lang').click();
  await visit(page, `#/jobs/physics/${arr.id}`, 'array-page-zh');
  await expect(page.getByRole('heading', { name: '数组任务' })).toBeVisible();
  await expect(page.getByText('共 3 个任务，最多同时运行 2 个：')).toBeVisible();
});
