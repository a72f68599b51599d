// sessions.spec.js - interactive sessions in the portal (issue 24): "New notebook" in one
// click (the project remembered, only the server's defaults sent), "More options" (a web
// app with its command, GPUs, idle minutes, mounts; the server's field messages next to
// the fields), the session's page on its way queued (place, reason, estimate) -> starting
// -> ready, which in its ?open=1 mode opens the app by itself (POST open, then the browser
// follows the single-use link to the sessions origin); the list with its badges, reasons,
// Open only for the owner's ready session, Stop after a confirmation, +60 min refused in
// place, and a refresh every 5 s that keeps the focus; an ended session says why and links
// to its job. English and Chinese, desktop and a phone, axe on every view.
//
// The UI tests answer the sessions API with a stand-in (page.route), so they can hold a
// session in the queue or refuse an extension at will; their answers are the real server's
// (fields, states, problem codes). The last two tests (English, Chinese) are the real thing:
// Jupyter Notebook started by the local executor in its sandbox (bubblewrap, slirp4netns),
// reached through aidcd's relay on the sessions origin (world.sessions_origin): the open
// flow, a notebook cell, a terminal, a script of the app's origin kept away from the
// portal's login, Stop in the portal. They need Debian's jupyter-notebook (tests/run.sh and
// deploy/install-deps.sh install it) and fail, with the app's log, where it is missing.
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const { test, expect, world, login, visit, allowHttp, shot, checkA11y } = require('../fixtures');
const { token, bearer } = require('../apicalls');

const APP_ORIGIN = 'http://127.0.0.1:9'; // the stand-in's sessions origin: never reached (routed)
const HOUR = 3600 * 1000;
const iso = (ms) => new Date(ms).toISOString();

function newSession(over = {}) {
  const now = Date.now();
  const s = {
    id: crypto.randomUUID(), tenant: 'physics', project: 'qcd', user: 'alice', app: 'jupyter',
    state: 'queued', url: null, idle_minutes: 60, expires_at: iso(now + 4 * HOUR), reason: 'submitted',
    created_at: iso(now - 60 * 1000), ready_at: null, last_activity_at: null,
    ...over,
  };
  s.job = { id: crypto.randomUUID(), tenant: 'physics', project: s.project, user: s.user, state: 'queued',
    reason: s.reason, queue_position: null, estimated_start: null,
    resources: { gpus: 0, gpu_type: null, cpus: 4, memory_gib: 16, time_limit_minutes: 240 }, ...(over.job || {}) };
  return s;
}

const problem = (status, code, detail, params, errors) => ({
  status, contentType: 'application/problem+json',
  body: JSON.stringify({ type: 'about:blank', title: 'refused', status, detail, code, params, errors }),
});

// The sessions API of tenant physics, answered from memory. fake.sessions is the list
// (newest first); fake.calls what the page sent; fake.extendLimit makes /extend a 422.
async function fakeSessions(page) {
  const fake = { sessions: [], calls: [], extendLimit: null, createAnswer: null };
  const find = (id) => fake.sessions.find((s) => s.id === id);
  await page.route((url) => url.pathname.startsWith('/api/v1/tenants/physics/sessions'), async (route) => {
    const req = route.request();
    const url = new URL(req.url());
    const rest = url.pathname.slice('/api/v1/tenants/physics/sessions'.length).split('/').filter(Boolean);
    const body = req.postData() ? JSON.parse(req.postData()) : null;
    fake.calls.push({ method: req.method(), path: rest.join('/'), body });
    const json = (status, data) => route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(data) });
    if (!rest.length && req.method() === 'GET') {
      const state = url.searchParams.get('state');
      const all = fake.sessions.filter((s) => !state || s.state === state);
      const from = Number(url.searchParams.get('cursor') || 0);
      const limit = Number(url.searchParams.get('limit') || 50);
      const items = all.slice(from, from + limit);
      return json(200, { items, next_cursor: from + limit < all.length ? String(from + limit) : null });
    }
    if (!rest.length && req.method() === 'POST') {
      if (fake.createAnswer) {
        const answer = fake.createAnswer;
        fake.createAnswer = null;
        return route.fulfill(answer);
      }
      const s = newSession({ project: body.project, app: body.app || 'jupyter' });
      fake.sessions.unshift(s);
      return json(201, s);
    }
    const s = find(rest[0]);
    if (!s) return route.fulfill(problem(404, 'app_session.not_found',
      `there is no session ${rest[0]} in tenant "physics"`, { id: rest[0], tenant: 'physics' }));
    if (rest.length === 1) return json(200, s);
    if (rest[1] === 'stop') {
      Object.assign(s, { state: 'ended', reason: `stopped by ${s.user}` });
      s.job.state = 'cancelled';
      s.job.finished_at = iso(Date.now());
      return json(202, s);
    }
    if (rest[1] === 'extend') {
      if (fake.extendLimit)
        return route.fulfill(problem(422, 'app_session.extend_limit',
          `a session runs ${fake.extendLimit} minutes at most; it has 240 already`,
          { limit_minutes: fake.extendLimit, minutes: 240, requested: body.minutes }));
      s.expires_at = iso(Date.parse(s.expires_at) + body.minutes * 60 * 1000);
      return json(200, s);
    }
    if (rest[1] === 'open') return json(200, { url: `${APP_ORIGIN}/s/${s.id}/?key=single-use` });
    return route.fulfill(problem(404, 'request.not_found', 'not found'));
  });
  // the app behind the single-use link
  await page.route(`${APP_ORIGIN}/**`, (route) => route.fulfill({ status: 200, contentType: 'text/html',
    body: '<!doctype html><html lang="en"><title>stand-in app</title><h1>The stand-in app</h1></html>' }));
  return fake;
}

const row = (page, s) => page.locator('tbody tr').filter({ has: page.locator(`a[href="#/sessions/${s.id}"]`) });
const shortName = (s, app = 'Jupyter notebook') => `${app} ${s.id.slice(0, 8)}`;

test.describe('sessions (stand-in API)', () => {
  test('"New notebook" in one click: defaults, the wait in the queue, then the app opens', async ({ page }) => {
    const fake = await fakeSessions(page);
    await login(page, 'alice');
    await expect(page.locator('#nav').getByRole('link', { name: 'Sessions' })).toBeAttached();
    await visit(page, '#/sessions', 'sessions-empty');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Sessions · physics');
    await expect(page.getByText('No sessions yet.')).toBeVisible();

    // the project is remembered in this browser
    await page.getByLabel('Project', { exact: true }).selectOption('lattice');
    await page.getByRole('button', { name: 'New notebook' }).click();
    await expect(page).toHaveURL(/#\/sessions\/[0-9a-f-]{36}\?open=1$/);
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    // only the project and the app: everything else is the server's default
    expect(fake.calls.find((c) => c.method === 'POST' && c.path === '').body).toEqual({ project: 'lattice', app: 'jupyter' });

    // held in the queue: why, where, when
    const s = fake.sessions[0];
    Object.assign(s, { reason: 'capacity:gpu:a100' });
    Object.assign(s.job, { reason: 'capacity:gpu:a100', queue_position: 2, estimated_start: iso(Date.now() + HOUR),
      resources: { ...s.job.resources, gpus: 1, gpu_type: 'a100' } });
    const status = page.locator('#session-status');
    await expect(status).toContainText('Place in the queue: 2.');
    await expect(status).toContainText('All a100 GPUs are busy right now');
    await expect(status).toContainText('Expected to start around');
    await expect(page.locator('ol.steps li[aria-current="step"]')).toContainText('In the queue');
    await expect(page.getByText('It opens in this tab as soon as it is ready.')).toBeVisible();
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('Jupyter notebook in lattice');
    await shot(page, 'session-queued');
    await checkA11y(page);

    s.state = 'starting';
    s.job.state = 'running';
    await expect(status).toContainText('Starting the app');
    await expect(page.locator('ol.steps li.done')).toHaveCount(1);
    await expect(page.locator('ol.steps li.done .sr-only')).toHaveText('In the queue (done)');
    await expect(page.locator('ol.steps li[aria-current="step"] .sr-only')).toHaveText('Starting (now)');
    await shot(page, 'session-starting');
    expect(fake.calls.filter((c) => c.path.endsWith('/open'))).toHaveLength(0);

    // ready: POST open once, and the browser follows the link to the app's origin
    Object.assign(s, { state: 'ready', ready_at: iso(Date.now()), url: `${APP_ORIGIN}/s/${s.id}/` });
    await page.waitForURL(`${APP_ORIGIN}/**`);
    await expect(page.getByRole('heading', { name: 'The stand-in app' })).toBeVisible();
    expect(fake.calls.filter((c) => c.path.endsWith('/open'))).toHaveLength(1);

    // Back: the session's page, without ?open=1 (no second trip to the app)
    await page.goBack();
    await expect(page).toHaveURL(new RegExp(`#/sessions/${s.id}$`));
    await expect(page.locator('#session-status')).toContainText('Ready: the app answers.');
    await expect(page.getByRole('button', { name: 'Open', exact: true })).toBeEnabled();
    expect(fake.calls.filter((c) => c.path.endsWith('/open'))).toHaveLength(1);

    // the choice of project stayed
    await visit(page, '#/sessions', null);
    await expect(page.getByLabel('Project', { exact: true })).toHaveValue('lattice');
    await expect(row(page, s)).toContainText('ready');
  });

  test('"More options": a web app with its command, GPUs, idle time and mounts; messages next to the fields', async ({ page }) => {
    const fake = await fakeSessions(page);
    await login(page, 'alice');
    await visit(page, '#/sessions', null);
    const form = page.locator('#session-form');
    const error = (name) => form.locator(`[data-field="${name}"] .field-error`);
    await form.getByLabel('Project', { exact: true }).selectOption('lattice');
    await form.getByText('More options').click();
    await expect(form.getByLabel('Command that starts the app')).toBeHidden();
    await form.getByLabel('App', { exact: true }).selectOption('web');
    await expect(form.getByRole('button', { name: 'Start web app' })).toBeVisible();
    await form.getByLabel('Command that starts the app').fill('sh -c \'python3 -m http.server $PORT');
    await shot(page, 'sessions-options');
    await checkA11y(page);

    // checked here first: a quote left open
    await form.getByRole('button', { name: 'Start web app' }).click();
    await expect(error('command')).toHaveText('A quote is not closed.');
    expect(fake.calls.filter((c) => c.method === 'POST')).toHaveLength(0);

    await form.getByLabel('Command that starts the app').fill('sh -c \'python3 -m http.server $PORT\'');
    await form.getByLabel('GPU type').selectOption('a100');
    await expect(form.getByLabel('Number of GPUs')).toHaveValue('1');
    await form.getByLabel('Ends when idle for (minutes)').fill('20000');
    await form.getByRole('checkbox', { name: /my home/ }).uncheck();
    // the server's refusal, field by field, in the reader's language
    fake.createAnswer = problem(400, 'validation.range', 'idle_minutes: must be 1 to 10080',
      { min: 1, max: 10080, field: 'idle_minutes' },
      [{ field: 'idle_minutes', code: 'validation.range', params: { min: 1, max: 10080 }, message: 'must be 1 to 10080' }]);
    allowHttp(page, 400, '/api/v1/tenants/physics/sessions');
    await form.getByRole('button', { name: 'Start web app' }).click();
    await expect(error('idle_minutes')).toHaveText('must be 1 to 10080');
    await expect(form.getByLabel('Ends when idle for (minutes)')).toBeFocused();
    await expect(form.locator('.form-error')).toHaveText('Please correct the marked fields.');

    await form.getByLabel('Ends when idle for (minutes)').fill('30');
    await form.getByRole('button', { name: 'Start web app' }).click();
    await expect(page).toHaveURL(/#\/sessions\/[0-9a-f-]{36}\?open=1$/);
    const posts = fake.calls.filter((c) => c.method === 'POST' && c.path === '');
    expect(posts[1].body).toEqual({ project: 'lattice', app: 'web', gpu_type: 'a100', gpus: 1, idle_minutes: 30,
      mounts: [{ space: 'project' }], command: ['sh', '-c', 'python3 -m http.server $PORT'] });
  });

  test('the list: badges and reasons, Open for the owner\'s ready one, Stop confirmed, +60 min refused in place, refreshed in place', async ({ page }) => {
    test.setTimeout(90_000);
    const fake = await fakeSessions(page);
    const ready = newSession({ state: 'ready', ready_at: iso(Date.now()), reason: null, job: { state: 'running' } });
    const queued = newSession({ project: 'lattice', reason: 'quota:gpu:a100',
      job: { queue_position: 3, resources: { gpus: 2, gpu_type: 'a100', cpus: 8, memory_gib: 32 } } });
    const ended = newSession({ state: 'ended', reason: 'idle for 60 minutes', app: 'web',
      job: { state: 'cancelled', finished_at: iso(Date.now() - HOUR) } });
    fake.sessions.push(ready, queued, ended);
    await login(page, 'alice');
    await visit(page, '#/sessions', 'sessions-list');
    await expect(row(page, ready).locator('.badge')).toHaveText('ready');
    await expect(row(page, queued)).toContainText('#3 in the queue · Your tenant is using its whole quota of a100 GPUs');
    await expect(row(page, queued)).toContainText('2 × a100');
    await expect(row(page, ended)).toContainText('Nobody used it for 60 minutes.');
    await expect(row(page, ended)).toContainText('Web app');
    // Open: only the ready one; Stop and +60 min: not the ended one
    await expect(page.getByRole('link', { name: /^Open / })).toHaveCount(1);
    await expect(page.getByRole('link', { name: `Open ${shortName(ready)}` })).toHaveAttribute('href', `#/sessions/${ready.id}?open=1`);
    await expect(row(page, ended).getByRole('button')).toHaveCount(0);

    // +60 min: granted, then refused with the server's reason, said in the row
    const plus = page.getByRole('button', { name: `+60 min for ${shortName(ready)}` });
    const before = Date.parse(ready.expires_at);
    await plus.click();
    await expect(row(page, ready)).toContainText('Extended: it ends at');
    expect(Date.parse(ready.expires_at) - before).toBe(HOUR);
    fake.extendLimit = 480;
    allowHttp(page, 422, '/extend');
    await plus.click();
    await expect(row(page, ready).locator('.field-error')).toHaveText('a session runs 480 minutes at most; it has 240 already');
    await expect(plus).toBeFocused();

    // a refresh redraws the rows (the queued one starts) and keeps the focus and the message
    queued.state = 'starting';
    await expect(row(page, queued).locator('.badge')).toHaveText('starting', { timeout: 12_000 });
    await expect(plus).toBeFocused();
    await expect(row(page, ready).locator('.field-error')).toHaveText('a session runs 480 minutes at most; it has 240 already');

    // Stop asks first; "keep" has the focus and keeps it
    await page.getByRole('button', { name: `Stop ${shortName(queued)}` }).click();
    const ask = row(page, queued).getByRole('group');
    await expect(ask).toContainText('Stop this session?');
    await expect(ask.getByRole('button', { name: 'No, keep it' })).toBeFocused();
    await checkA11y(page);
    await ask.getByRole('button', { name: 'No, keep it' }).click();
    await expect(page.getByRole('button', { name: `Stop ${shortName(queued)}` })).toBeFocused();
    expect(fake.calls.filter((c) => c.path.endsWith('/stop'))).toHaveLength(0);
    await page.getByRole('button', { name: `Stop ${shortName(queued)}` }).click();
    await ask.getByRole('button', { name: 'Yes, stop it' }).click();
    await expect(row(page, queued).locator('.badge')).toHaveText('ended');
    await expect(row(page, queued)).toContainText('Stopped by alice.');
    expect(fake.calls.filter((c) => c.path === `${queued.id}/stop`)).toHaveLength(1);

    // the state filter is in the link
    await page.getByLabel('State', { exact: true }).selectOption('ended');
    await expect(page).toHaveURL(/#\/sessions\?state=ended$/);
    await expect(page.locator('tbody tr')).toHaveCount(2);
  });

  test('"Load more" rows stay through refreshes', async ({ page }) => {
    const fake = await fakeSessions(page);
    for (let i = 0; i < 55; i++) fake.sessions.push(newSession({ state: 'ended', reason: 'time limit' }));
    await login(page, 'alice');
    await visit(page, '#/sessions', null);
    await expect(page.locator('tbody tr')).toHaveCount(50);
    await page.getByRole('button', { name: 'Load more' }).click();
    await expect(page.locator('tbody tr')).toHaveCount(55);
    await expect(page.getByRole('button', { name: 'Load more' })).toBeHidden();
    const lists = () => fake.calls.filter((c) => c.method === 'GET' && c.path === '').length;
    const n = lists();
    await expect.poll(lists, { timeout: 12_000 }).toBeGreaterThan(n);
    await expect(page.locator('tbody tr')).toHaveCount(55);
  });

  test('a session\'s page: an ended one says why and links to its job; another\'s ready one is not opened', async ({ page }) => {
    const fake = await fakeSessions(page);
    const ended = newSession({ state: 'ended', reason: 'the app did not answer on its port within 300 s',
      job: { state: 'failed', finished_at: iso(Date.now()) } });
    const others = newSession({ user: 'alice', state: 'ready', reason: null, job: { state: 'running' } });
    fake.sessions.push(ended, others);
    await login(page, 'alice');
    await visit(page, `#/sessions/${ended.id}`, 'session-ended');
    await expect(page.locator('#session-status')).toContainText('The session has ended.');
    await expect(page.locator('#session-status')).toContainText('The app did not answer on its port within 300 s.');
    await expect(page.getByRole('link', { name: 'Its job\'s page keeps the app\'s output (logs).' }))
      .toHaveAttribute('href', `#/jobs/physics/${ended.job.id}`);
    await expect(page.getByRole('button', { name: 'Stop' })).toBeHidden();
    await expect(page.getByRole('button', { name: 'Open' })).toBeHidden();

    // a link to a session that is no session
    await visit(page, '#/sessions/not-a-session', null);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('No such session');

    // tom (the tenant's admin) sees alice's session, may stop it, but only she opens it
    await page.locator('#logout').click();
    await expect(page.locator('#username')).toBeVisible();
    await login(page, 'tom');
    await visit(page, `#/sessions/${others.id}?open=1`, 'session-not-owner');
    await expect(page.locator('#session-status')).toContainText('Only its owner opens a session.');
    await expect(page.getByRole('button', { name: 'Open' })).toBeHidden();
    await expect(page.getByRole('button', { name: 'Stop' })).toBeVisible();
    await expect(page.getByText('It opens in this tab')).toBeHidden();
    expect(fake.calls.filter((c) => c.path.endsWith('/open'))).toHaveLength(0);
  });

  test('on its page: +60 min refused in place, Stop after a confirmation', async ({ page }) => {
    const fake = await fakeSessions(page);
    const s = newSession({ state: 'ready', reason: null, ready_at: iso(Date.now()), job: { state: 'running' } });
    fake.sessions.push(s);
    fake.extendLimit = 240;
    allowHttp(page, 422, '/extend');
    await login(page, 'alice');
    await visit(page, `#/sessions/${s.id}`, 'session-ready');
    await expect(page.locator('#session-status')).toContainText('Ready: the app answers.');
    await expect(page.locator('ol.steps li.done')).toHaveCount(3);
    await page.getByRole('button', { name: '+60 min' }).click();
    await expect(page.getByRole('alert')).toHaveText('a session runs 240 minutes at most; it has 240 already');
    await page.getByRole('button', { name: 'Stop', exact: true }).click();
    await expect(page.getByRole('button', { name: 'No, keep it' })).toBeFocused();
    await page.getByRole('button', { name: 'Yes, stop it' }).click();
    await expect(page.locator('#session-state .badge')).toHaveText('ended');
    await expect(page.locator('#session-status')).toContainText('Stopped by alice.');
    await expect(page.getByRole('button', { name: 'Stop', exact: true })).toBeHidden();
    await expect(page.getByRole('button', { name: '+60 min' })).toBeHidden();
  });

  test('in Chinese, and on a phone', async ({ page }) => {
    const fake = await fakeSessions(page);
    const queued = newSession({ reason: 'capacity:gpu:a100', job: { queue_position: 1 } });
    const ready = newSession({ state: 'ready', reason: null, job: { state: 'running' } });
    const ended = newSession({ state: 'ended', reason: 'stopped by alice', job: { finished_at: iso(Date.now()) } });
    fake.sessions.push(queued, ready, ended);
    fake.extendLimit = 480;
    allowHttp(page, 422, '/extend');
    await login(page, 'alice');
    await page.locator('#lang').click();
    await visit(page, '#/sessions', 'sessions-zh');
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('交互会话 · physics');
    await expect(page.getByRole('button', { name: '新建笔记本' })).toBeVisible();
    await expect(row(page, ready).locator('.badge')).toHaveText('就绪');
    await expect(row(page, ended)).toContainText('由 alice 停止。');
    await row(page, ready).getByRole('button', { name: /^延长 60 分钟/ }).click();
    await expect(row(page, ready).locator('.field-error')).toHaveText('交互会话最长运行 480 分钟；它已有 240 分钟');
    await visit(page, `#/sessions/${queued.id}`, 'session-queued-zh');
    await expect(page.locator('#session-status')).toContainText('排队位置：第 1 位。');
    await page.locator('#lang').click();

    await page.setViewportSize({ width: 390, height: 844 });
    await visit(page, '#/sessions', 'sessions-phone');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await visit(page, `#/sessions/${queued.id}`, 'session-queued-phone');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.locator('#lang').click();
    await visit(page, '#/sessions', 'sessions-phone-zh');
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
  });
});

// The real thing, once in English and once in Chinese (the portal takes the browser's
// language): the words each run clicks and reads.
const REAL = {
  en: { locale: 'en-US', project: 'Project', newNotebook: 'New notebook', ready: 'ready', ended: 'ended',
    extend: '+60 min', extended: 'Extended: it ends at', stop: 'Stop', yes: 'Yes, stop it', stopped: 'Stopped by alice.' },
  zh: { locale: 'zh-CN', project: '项目', newNotebook: '新建笔记本', ready: '就绪', ended: '已结束',
    extend: '延长 60 分钟', extended: '已延长：最迟于', stop: '停止', yes: '是，停止', stopped: '由 alice 停止。' },
};

// Wait (polling the API) until session id is ready. One that ended first fails the test
// with its reason and its app's stderr: a machine without Jupyter, bubblewrap or
// slirp4netns says so there ("aidc: no Jupyter here", the sandbox's own error).
async function waitReady(request, tok, id) {
  const path = `/api/v1/tenants/physics/sessions/${id}`;
  let s = null;
  await expect.poll(async () => {
    s = await (await request.get(path, { headers: bearer(tok) })).json();
    return s.state;
  }, { timeout: 120_000, message: `session ${id} to be ready` }).toMatch(/^(ready|ended)$/);
  if (s.state === 'ended') {
    const log = await request.get(`/api/v1/tenants/physics/jobs/${s.job.id}/logs?stream=stderr`,
      { headers: bearer(tok) });
    throw new Error(`session ${id} ended before it was ready: ${s.reason}\nits app's stderr:\n${await log.text()}`);
  }
  return s;
}

// From a page of the app's origin: what a script there gets of the portal's login. Each
// fetch sends the browser's cookies (credentials: 'include'); the answer is what the
// script sees: { type, status, body } or { error } when the browser refused it (CORS).
async function probePortal(app, portal, id) {
  return app.evaluate(async ({ portal: p, id: sid }) => {
    const attempt = async (url, init) => {
      try {
        const r = await fetch(url, { credentials: 'include', ...init });
        return { type: r.type, status: r.status, body: r.type === 'opaque' ? null : await r.text() };
      } catch (e) {
        return { error: String(e) };
      }
    };
    const token = JSON.stringify({ name: 'from-the-app', scopes: ['jobs:read'] });
    return {
      cookie: document.cookie,
      // a read: the cookie goes along (same site: 127.0.0.1), the answer stays unreadable
      me: await attempt(`${p}/api/v1/me`),
      // the portal's own header makes it a preflighted request, which the API never allows
      tokenAsPortal: await attempt(`${p}/api/v1/tokens`, { method: 'POST', body: token,
        headers: { 'Content-Type': 'application/json', 'X-Requested-With': 'aidc-portal' } }),
      // "simple" requests go out without a preflight: the server itself must refuse them
      tokenSimple: await attempt(`${p}/api/v1/tokens`, { method: 'POST', mode: 'no-cors', body: token,
        headers: { 'Content-Type': 'text/plain' } }),
      stopSimple: await attempt(`${p}/api/v1/tenants/physics/sessions/${sid}/stop`, { method: 'POST', mode: 'no-cors' }),
    };
  }, { portal, id });
}

// In page: open a WebSocket to a Jupyter terminal (terminado), send line to its shell and
// gather what it prints until that matches until (or 20 s pass). { opened, text, error }.
async function terminal(page, url, line, until) {
  return page.evaluate(({ url: u, line: l, until: re }) => new Promise((resolve) => {
    const done = new RegExp(re);
    const r = { opened: false, text: '', error: null };
    const ws = new WebSocket(u);
    const end = () => { clearTimeout(timer); ws.close(); resolve(r); };
    const timer = setTimeout(end, 20_000);
    ws.onopen = () => { r.opened = true; ws.send(JSON.stringify(['stdin', l])); };
    ws.onmessage = (ev) => {
      const m = JSON.parse(ev.data);
      if (m[0] === 'stdout') r.text += m[1];
      if (done.test(r.text)) end();
    };
    ws.onerror = () => { r.error = 'the WebSocket failed'; };
    ws.onclose = () => { clearTimeout(timer); resolve(r); };
  }), { url, line, until: until.source });
}

for (const [lang, w] of Object.entries(REAL)) {
  test.describe(`sessions (the real server, ${lang})`, () => {
    test.use({ locale: w.locale });

    test('New notebook -> Jupyter through the relay: print(6*7) is 42, a terminal opens, the portal\'s login stays out of reach, Stop from the portal', async ({ page, context, request }) => {
      test.setTimeout(300_000);
      const alice = await token(request, 'alice');
      const portal = new URL(world.base).origin;
      const apps = world.sessions_origin;
      expect(apps, 'the world names the relay\'s origin').toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(apps).not.toBe(portal);
      let id = null;
      try {
        await login(page, 'alice');
        await visit(page, '#/sessions', `sessions-real-${lang}`);
        // the open flow, watched from here: POST open on the portal, the link on the sessions origin
        const opened = page.waitForResponse((r) => r.request().method() === 'POST' &&
          /\/api\/v1\/tenants\/physics\/sessions\/[0-9a-f-]{36}\/open$/.test(r.url()), { timeout: 180_000 });
        const followed = page.waitForResponse((r) => r.url().startsWith(`${apps}/_aidc/open?key=`), { timeout: 180_000 });
        await page.getByLabel(w.project, { exact: true }).selectOption('qcd');
        await page.getByRole('button', { name: w.newNotebook }).click();
        await expect(page).toHaveURL(/#\/sessions\/[0-9a-f-]{36}\?open=1$/);
        id = /#\/sessions\/([0-9a-f-]{36})/.exec(page.url())[1];
        await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
        await shot(page, `session-real-waiting-${lang}`);
        const s = await waitReady(request, alice, id);
        expect(s.url).toBe(`${apps}/sessions/${id}/`);
        expect(s.job.kind).toBe('interactive');

        // ready: the page asked for a single-use link once and the browser followed it
        // (the answer's body is gone with the page it came to: the link is the request's URL)
        expect((await opened).status()).toBe(200);
        const hop = await followed;
        const link = hop.url();
        expect(link).toMatch(new RegExp(`^${apps}/_aidc/open\\?key=[A-Za-z0-9_-]{20,}$`));
        expect(hop.status()).toBe(302);
        expect(await hop.headerValue('location')).toBe(`/sessions/${id}/`);
        expect(await hop.headerValue('set-cookie')).toMatch(new RegExp(
          `^aidc_app=[A-Za-z0-9_-]{43}; Path=/sessions/${id}/; HttpOnly; SameSite=Lax$`));
        // ... and landed in Jupyter Notebook 6's tree, on the sessions origin
        await page.waitForURL(`${apps}/sessions/${id}/tree**`, { timeout: 60_000 });
        // what the app's own pages may fail to load (a favicon, a kernel's first probe) is the app's
        allowHttp(page, 404, apps);
        allowHttp(page, 'failed', apps);
        await expect(page.locator('#notebook_list')).toBeVisible({ timeout: 60_000 });
        await shot(page, `jupyter-tree-${lang}`);
        const entry = (await context.cookies(`${apps}/sessions/${id}/`)).find((c) => c.name === 'aidc_app');
        expect(entry).toMatchObject({ path: `/sessions/${id}/`, httpOnly: true, sameSite: 'Lax' });
        // the link was spent
        const again = await request.get(link, { maxRedirects: 0 });
        expect(again.status()).toBe(403);
        expect((await again.json()).code).toBe('app_session.link_invalid');

        // a new notebook (it opens in a tab of its own): print(6*7) says 42
        await page.locator('#new-dropdown-button').click();
        const [nb] = await Promise.all([context.waitForEvent('page'), page.locator('#kernel-python3 a').click()]);
        // the tab opens blank; Jupyter sends it on once the new notebook is written
        await nb.waitForURL(`${apps}/sessions/${id}/notebooks/**`, { timeout: 30_000 });
        await expect(nb.locator('#kernel_indicator_icon.kernel_idle_icon')).toBeAttached({ timeout: 60_000 });
        await nb.locator('.CodeMirror').first().click();
        await nb.keyboard.type('print(6*7)');
        await nb.keyboard.press('Shift+Enter');
        await expect(nb.locator('.output_area pre').first()).toHaveText('42', { timeout: 30_000 });
        const nbShot = test.info().outputPath(`jupyter-42-${lang}.png`);
        await nb.screenshot({ path: nbShot, fullPage: true });
        await test.info().attach(`jupyter-42-${lang}`, { path: nbShot, contentType: 'image/png' });

        // a script of the app's origin (this notebook's page) against the portal's login
        const seen = []; // what reached the portal from this tab, as the network saw it
        nb.on('response', (r) => { if (r.url().startsWith(portal)) seen.push(`${r.request().method()} ${new URL(r.url()).pathname} ${r.status()}`); });
        const tokensBefore = (await (await request.get('/api/v1/tokens', { headers: bearer(alice) })).json()).items.length;
        const probe = await probePortal(nb, portal, id);
        // no cookie of aidc's is readable there (both are HttpOnly)
        expect(probe.cookie).not.toContain('aidc_session');
        expect(probe.cookie).not.toContain('aidc_app');
        // the API's answers stay unreadable: no CORS consent, so the browser refuses them
        expect(probe.me).toEqual({ error: expect.stringMatching(/TypeError: Failed to fetch/) });
        expect(probe.tokenAsPortal).toEqual({ error: expect.stringMatching(/TypeError: Failed to fetch/) });
        expect(probe.tokenSimple).toMatchObject({ type: 'opaque', status: 0 });
        expect(probe.stopSimple).toMatchObject({ type: 'opaque', status: 0 });
        // and the server refused the writes that did go out (the cookie went along: same site)
        await expect.poll(() => seen.find((l) => l.startsWith('POST') && l.includes('/stop')) || null)
          .toBe(`POST /api/v1/tenants/physics/sessions/${id}/stop 403`);
        expect(seen.filter((l) => l.startsWith('POST /api/v1/tokens'))
          .every((l) => / (403|415)$/.test(l)), seen.join('\n')).toBe(true);
        const tokens = (await (await request.get('/api/v1/tokens', { headers: bearer(alice) })).json()).items;
        expect(tokens.map((t) => t.name)).not.toContain('from-the-app');
        expect(tokens).toHaveLength(tokensBefore);
        expect((await waitReady(request, alice, id)).state).toBe('ready');
        await nb.close();

        // a terminal: New -> Terminal (its own tab too). Debian 12's Notebook bundles a
        // broken xterm.js (libjs-xterm 3.8.1: its browser build is the CommonJS stub, so the
        // page stops at "ReferenceError: exports is not defined" and stays blank); the
        // terminal itself is sound, so the test types into it the way that page would: over
        // the terminal's WebSocket (terminado's JSON messages), from the app's origin
        await page.locator('#new-dropdown-button').click();
        const [term] = await Promise.all([context.waitForEvent('page'), page.locator('#new-terminal a').click()]);
        await term.waitForURL(`${apps}/sessions/${id}/terminals/**`, { timeout: 30_000 });
        const name = /\/terminals\/([^/?#]+)/.exec(term.url())[1];
        const socket = `${apps.replace(/^http/, 'ws')}/sessions/${id}/terminals/websocket/${name}`;
        const said = await terminal(term, socket, 'echo $((6*7))x; ls -d /data/project\r', /42x[\s\S]*\n\/data\/project/);
        expect(said.opened, said.error).toBe(true);
        // the shell's answers; the project's space is there, as in every job
        expect(said.text).toMatch(/^42x\r?$/m);
        expect(said.text).toMatch(/^\/data\/project\r?$/m);
        const termShot = test.info().outputPath(`jupyter-terminal-${lang}.png`);
        await term.screenshot({ path: termShot, fullPage: true });
        await test.info().attach(`jupyter-terminal-${lang}`, { path: termShot, contentType: 'image/png' });
        const termText = test.info().outputPath(`jupyter-terminal-${lang}.txt`);
        fs.writeFileSync(termText, said.text);
        await test.info().attach(`jupyter-terminal-${lang}.txt`, { path: termText, contentType: 'text/plain' });
        await term.close();
        // a page of another origin cannot open it, though the browser sends the cookie (same
        // site): the relay checks Origin on every WebSocket upgrade. (Not from the portal's
        // pages: their CSP, connect-src 'self', would stop it before the relay could.)
        // a blank page of our own on loopback (a routed stand-in origin would count as a
        // public site, which Chromium keeps away from loopback before any handshake)
        const blank = http.createServer((q, r) => r.writeHead(200, { 'Content-Type': 'text/html' })
          .end('<!doctype html><html lang="en"><title>another site</title></html>'));
        await new Promise((resolve) => blank.listen(0, '127.0.0.1', resolve));
        const other = await context.newPage();
        const consoleLines = [];
        other.on('console', (m) => consoleLines.push(m.text()));
        await other.goto(`http://127.0.0.1:${blank.address().port}/`);
        const refused = await terminal(other, socket, 'echo from-another-origin\r', /from-another-origin/);
        expect(refused).toMatchObject({ opened: false, text: '' });
        expect(consoleLines.join('\n')).toContain('Unexpected response code: 403');
        await other.close();
        blank.close();

        // back to the portal: more time, then stop it there
        await page.goto(`/#/sessions/${id}`);
        await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
        await expect(page.locator('#session-state .badge')).toHaveText(w.ready);
        await page.getByRole('button', { name: w.extend, exact: true }).click();
        await expect(page.getByText(w.extended)).toBeVisible();
        await shot(page, `session-real-ready-${lang}`);
        await page.getByRole('button', { name: w.stop, exact: true }).click();
        await page.getByRole('button', { name: w.yes }).click();
        await expect(page.locator('#session-state .badge')).toHaveText(w.ended, { timeout: 60_000 });
        await expect(page.locator('#session-status')).toContainText(w.stopped);
        await shot(page, `session-real-stopped-${lang}`);
        await checkA11y(page);
        id = null;
        // the app is gone for this browser too, cookie or not
        const after = await context.request.get(`${apps}/sessions/${s.id}/api/status`);
        expect(after.status()).toBe(401);
        expect((await after.json()).code).toBe('app_session.no_entry');
      } finally {
        if (id) { // it failed half way: keep what the app said, then stop it
          const s = await (await request.get(`/api/v1/tenants/physics/sessions/${id}`, { headers: bearer(alice) })).json();
          const log = await request.get(`/api/v1/tenants/physics/jobs/${s.job.id}/logs?stream=stderr`, { headers: bearer(alice) });
          const file = test.info().outputPath('app-stderr.txt');
          fs.writeFileSync(file, await log.text());
          await test.info().attach('app-stderr', { path: file, contentType: 'text/plain' });
          await request.post(`/api/v1/tenants/physics/sessions/${id}/stop`, { headers: bearer(alice) });
        }
      }
    });
  });
}
