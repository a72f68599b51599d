// auditor.spec.js - the audit page (#/audit): alice submits a job through the API; audrey
// finds its job.submit event by actor and action (with the request id and the job id),
// opens its details, waits until the sealer chained it, verifies the chain and exports
// what her search matches (NDJSON and CSV downloads, checked through the API first: a
// refused export shows its reason in place, an expired session goes to sign-in). "Load
// more" goes on with the search on screen, not the form as edited since, and keeps the
// keyboard focus. The command log renders. A search says the time range it covered (the
// API's default: the last 30 days) and can be widened to all time.
const fs = require('fs');
const { test, expect, world, login, visit, allowHttp, shot, checkA11y } = require('../fixtures');
const { token, bearer } = require('../apicalls');

test('audrey finds alice\'s job submission, verifies the chain and exports it', async ({ page, request }) => {
  const alice = bearer(await token(request, 'alice'));
  const name = `audit-e2e-${Date.now().toString(36)}`;
  const submitted = await request.post('/api/v1/tenants/physics/jobs', {
    headers: alice, data: { project: 'qcd', name, script: 'sleep 300' },
  });
  expect(submitted.status()).toBe(201);
  const job = await submitted.json();
  const requestId = submitted.headers()['x-request-id'];
  expect(requestId).toBeTruthy();

  try {
    await login(page, 'audrey');
    await visit(page, '#/audit', 'audit');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Audit');

    // search: actor alice, action job.submit
    const search = page.getByRole('search', { name: 'Search audit events' });
    await search.getByLabel('Actor (user name)').fill('alice');
    await search.getByLabel('Action').fill('job.submit');
    const answer = page.waitForResponse((r) => r.url().includes('/api/v1/audit/events?') &&
      r.url().includes('actor=alice') && r.url().includes('action=job.submit'));
    await search.getByRole('button', { name: 'Search' }).click();
    expect((await answer).status()).toBe(200);
    await expect(page).toHaveURL(/#\/audit\?actor=alice&action=job\.submit$/);
    const event = page.locator('details').filter({ hasText: job.id });
    await expect(event).toHaveCount(1);
    // newest first, and only what was asked for
    const summaries = page.locator('details > summary');
    for (const text of await summaries.allTextContents()) {
      expect(text).toContain('job.submit');
      expect(text).toContain('alice');
    }

    // the sealer chains new events within seconds: search again until this one has its place
    await expect(async () => {
      const again = page.waitForResponse((r) => r.url().includes('/api/v1/audit/events?') && r.url().includes('actor=alice'));
      await search.getByRole('button', { name: 'Search' }).click();
      await again;
      await expect(event).toContainText(/position \d+/, { timeout: 1000 });
    }).toPass({ timeout: 30_000 });

    // its details: actor, roles, tenant, address, user agent, request id, resource, status
    await expect(event).not.toHaveAttribute('open', '');
    await event.locator('summary').click();
    await expect(event).toHaveAttribute('open', '');
    const props = event.locator('dl');
    const prop = (label) => props.locator('dt', { hasText: new RegExp(`^${label}$`) }).locator('xpath=following-sibling::dd[1]');
    await expect(prop('User')).toHaveText('alice');
    await expect(prop('API token')).not.toBeEmpty();
    await expect(prop('Global roles')).toHaveText('—');
    await expect(prop('Tenant')).toHaveText('physics');
    await expect(prop('Source IP')).toContainText(/\d/);
    await expect(prop('User agent')).not.toHaveText('—');
    await expect(prop('Request ID')).toHaveText(requestId);
    await expect(prop('Resource type')).toHaveText('job');
    await expect(prop('Resource ID or name')).toHaveText(job.id);
    await expect(prop('HTTP status')).toHaveText('201');
    await expect(event.locator('pre')).toContainText(`"name": "${name}"`);
    const seq = Number((await prop('Chain').innerText()).match(/position (\d+)/)[1]);
    await shot(page, 'audit-event');
    await checkA11y(page);

    // chain verification: intact, and it covers the event
    const verdict = page.locator('.verify-result');
    await expect(async () => {
      await page.getByRole('button', { name: 'Verify chain' }).click();
      await expect(verdict.locator('[data-ok]')).toBeVisible({ timeout: 5000 });
      await expect(verdict.locator('[data-ok]')).toHaveAttribute('data-ok', 'true', { timeout: 1000 });
      const last = Number(await verdict.locator('[data-ok]').getAttribute('data-last-seq'));
      expect(last).toBeGreaterThanOrEqual(seq);
    }).toPass({ timeout: 30_000 });
    await expect(verdict).toContainText('Chain intact');
    await expect(verdict).toContainText(/\d+ chain entries verified/);
    await shot(page, 'audit-verified');

    // export what the search matched: checked through the API first (the search on
    // screen, limit 1), then streamed by the server and saved by the browser
    await expect(page.getByText('The last search has no time range')).toBeVisible();
    // an edit of the form without searching changes neither the export nor "Load more"
    await search.getByLabel('Actor (user name)').fill('someone-else');
    const checked = page.waitForResponse((r) => r.url().includes('/api/v1/audit/events?') && r.url().includes('limit=1'));
    const [ndjson] = await Promise.all([page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export NDJSON' }).click()]);
    const check = await checked;
    expect(check.status()).toBe(200);
    expect(check.url()).toContain('actor=alice');
    expect(ndjson.url()).toMatch(/\/api\/v1\/audit\/events\/export\?actor=alice&action=job\.submit&format=ndjson$/);
    await expect(page.getByText('The download has started')).toBeVisible();
    const lines = fs.readFileSync(await ndjson.path(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const trailer = lines.pop();
    expect(trailer.export).toBeTruthy();
    // signed checkpoints that fall inside the exported range come as their own lines
    // ({"checkpoint": {...}}), so an auditor can verify the file offline
    const events = lines.filter((l) => !l.checkpoint);
    expect(events.length).toBeGreaterThanOrEqual(1);
    for (const e of events) {
      expect(e.action).toBe('job.submit');
      expect(e.actor.user).toBe('alice');
    }
    const mine = events.find((e) => e.resource && e.resource.id === job.id);
    expect(mine).toBeTruthy();
    expect(mine.request_id).toBe(requestId);
    expect(mine.seq).toBe(seq);

    const [csv] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Export CSV' }).click()]);
    expect(csv.url()).toMatch(/\/audit\/events\/export\?actor=alice&action=job\.submit&format=csv$/);
    const text = fs.readFileSync(await csv.path(), 'utf8');
    expect(text.split(/\r?\n/)[0]).toContain('action');
    expect(text).toContain(job.id);
  } finally {
    const cancelled = await request.post(`/api/v1/tenants/physics/jobs/${job.id}/cancel`, { headers: alice });
    expect([200, 202, 409]).toContain(cancelled.status());
  }
});

test('the command log renders and searches', async ({ page }) => {
  await login(page, 'audrey');
  await visit(page, '#/audit?view=commands', 'audit-commands');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Audit: command log');
  await expect(page.getByRole('link', { name: 'Command log' })).toHaveAttribute('aria-current', 'page');
  const search = page.getByRole('search', { name: 'Search the command log' });
  await search.getByLabel('Host').fill('no-such-node');
  const answer = page.waitForResponse((r) => r.url().includes('/api/v1/audit/commands?') && r.url().includes('host=no-such-node'));
  await search.getByRole('button', { name: 'Search' }).click();
  expect((await answer).status()).toBe(200);
  await expect(page.getByText('No command records match.')).toBeVisible();
  await expect(page).toHaveURL(/#\/audit\?view=commands&host=no-such-node$/);
  // the link back to the events
  await page.getByRole('link', { name: 'Events' }).click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Audit');
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await checkA11y(page);
});

test('a search says what time range it covered, and can search all time', async ({ page }) => {
  // an auditor's sign-in lands on #/audit: its first search may be answered before
  // visit(), which then has nothing to navigate, so the wait starts before the sign-in
  const first = page.waitForResponse((r) => r.url().includes('/api/v1/audit/events?'));
  await login(page, 'audrey');
  await visit(page, '#/audit', 'audit-window');
  const window = (await (await first).json()).window;
  expect(window.default).toBe(true);
  // the API's default window: the last 30 days, said above the results
  const note = page.locator('[data-audit-window]');
  await expect(note).toContainText('Showing events of the last 30 days');
  const widen = note.getByRole('button', { name: 'Search all time' });
  await expect(widen).toBeVisible();
  const wide = page.waitForResponse((r) => r.url().includes('/api/v1/audit/events?') && r.url().includes('from=2000-01-01'));
  await widen.click();
  const answer = await wide;
  expect(answer.status()).toBe(200);
  expect((await answer.json()).window.default).toBe(false);
  await expect(note).toContainText('Showing events since');
  await expect(widen).toBeHidden();
  await expect(page).toHaveURL(/#\/audit\?from=2000-01-01/);
  // the command log says its window too
  await visit(page, '#/audit?view=commands', 'audit-commands-window');
  await expect(page.locator('[data-audit-window]')).toContainText('Showing events of the last 30 days');
  await checkA11y(page);
});

test('the audit page on a phone', async ({ page }) => {
  await login(page, 'audrey');
  await page.setViewportSize({ width: 390, height: 844 });
  await visit(page, '#/audit', 'audit-390');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Audit');
  await visit(page, '#/audit?view=commands', 'audit-commands-390');
});

test('an export that the server refuses is explained in place, never saved as a file', async ({ page, context }) => {
  await login(page, 'audrey');
  await visit(page, '#/audit?actor=audrey', null);
  const downloads = [];
  page.on('download', (d) => downloads.push(d));

  // 503 (or 429, or a refused filter) answering the check: the reason, no download
  allowHttp(page, 503, '/api/v1/audit/events');
  await page.route((u) => u.pathname === '/api/v1/audit/events' && u.searchParams.get('limit') === '1',
    (route) => route.fulfill({ status: 503, contentType: 'application/problem+json', headers: { 'Retry-After': '5' },
      body: JSON.stringify({ type: 'about:blank', title: 'Service Unavailable', status: 503, detail: 'the database is not reachable' }) }),
    { times: 1 });
  const ndjson = page.getByRole('button', { name: 'Export NDJSON' });
  await ndjson.click();
  const alert = page.getByRole('alert').filter({ hasText: 'The export could not start.' });
  await expect(alert).toContainText('the database is not reachable');
  await expect(ndjson).toBeFocused();
  await checkA11y(page);

  // a filter the server refuses names its field
  allowHttp(page, 400, '/api/v1/audit/events');
  await page.route((u) => u.pathname === '/api/v1/audit/events' && u.searchParams.get('limit') === '1',
    (route) => route.fulfill({ status: 400, contentType: 'application/problem+json',
      body: JSON.stringify({ title: 'Bad Request', status: 400, detail: 'invalid parameters',
        errors: [{ field: 'from', message: 'is not an RFC 3339 time' }] }) }),
    { times: 1 });
  await page.getByRole('button', { name: 'Export CSV' }).click();
  await expect(page.getByRole('alert').filter({ hasText: 'The export could not start.' })).toContainText('from: is not an RFC 3339 time');

  // the session ended: the check's 401 signs out (api.js), nothing is downloaded
  allowHttp(page, 401, '/api/v1/audit/events');
  await context.clearCookies();
  await page.getByRole('button', { name: 'Export CSV' }).click();
  await expect(page.locator('#login-form')).toBeVisible();
  expect(downloads).toHaveLength(0);
});

test('"Load more" goes on with the search on screen and keeps the focus', async ({ page }) => {
  // two events a page (from the start: audrey lands on #/audit); the last page a
  // load-more brings is marked the last one
  let lastPage = false;
  await page.route((u) => u.pathname === '/api/v1/audit/events' && u.searchParams.get('limit') === '50', async (route) => {
    const u = new URL(route.request().url());
    u.searchParams.set('limit', '2');
    const res = await route.fetch({ url: u.toString() });
    const body = await res.json();
    if (u.searchParams.get('cursor') && lastPage) body.next_cursor = null;
    await route.fulfill({ response: res, json: body });
  });
  await login(page, 'audrey');
  await visit(page, '#/audit', null);
  const items = page.locator('details[data-event-id]');
  await expect(items).toHaveCount(2);
  const more = page.getByRole('button', { name: 'Load more' });

  // the form edited without searching: the next page still belongs to the search shown
  await page.getByRole('search', { name: 'Search audit events' }).getByLabel('Actor (user name)').fill('no-such-user');
  let next = page.waitForRequest((r) => r.url().includes('/api/v1/audit/events?') && r.url().includes('cursor='));
  await more.focus();
  await page.keyboard.press('Enter');
  expect((await next).url()).not.toContain('no-such-user');
  await expect(items).toHaveCount(4);
  await expect(more).toBeFocused(); // more remain: the focus stays on the button

  // the last page: the button goes, the focus moves to the first new event
  lastPage = true;
  next = page.waitForRequest((r) => r.url().includes('/api/v1/audit/events?') && r.url().includes('cursor='));
  await page.keyboard.press('Enter');
  expect((await next).url()).not.toContain('no-such-user');
  await expect(items).toHaveCount(6);
  await expect(more).toBeHidden();
  await expect(items.nth(4).locator('summary')).toBeFocused();
  await checkA11y(page);
});
