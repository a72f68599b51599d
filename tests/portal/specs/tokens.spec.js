// tokens.spec.js - API tokens (#/tokens): a token is created with a scope, its secret
// shown once; the page's curl example really works (run with curl) and stops
// working after the token is revoked in the page (a failed revoke can be retried); a
// reload never shows the secret; a node agent's token is bound to its node.
// Login sessions (the same page): another session of the user is ended in the list
// and its token refused at once; signing out there ends this one and shows the login page.
// Changing the password (the same page, a user of that test's own): a mistyped repeat
// is caught before any request, a wrong current password is named at its field, and a
// change ends every other session while this browser stays signed in.
const { execFileSync } = require('child_process');
const { test, expect, world, login, visit, allowHttp, checkA11y, shot } = require('../fixtures');
const { token, bearer } = require('../apicalls');

// Run the example exactly as shown (a CI job would paste it into sh), with the
// HTTP status appended on a line of its own.
function runExample(example) {
  const out = execFileSync('sh', ['-c', `${example} -w '\\n%{http_code}'`],
    { encoding: 'utf8', timeout: 30_000 });
  const lines = out.replace(/\n$/, '').split('\n');
  const status = Number(lines.pop());
  return { status, body: lines.join('\n') };
}

test('alice creates a token, uses the curl example, revokes it', async ({ page }) => {
  const name = `ci-pipeline-${Date.now().toString(36)}`;
  await login(page, 'alice');
  await visit(page, '#/tokens', 'tokens');

  const form = page.locator('form').filter({ has: page.locator('input[name="name"]') });
  await form.locator('input[name="name"]').fill(name);
  await form.locator('input[name="expires_in_days"]').fill('7');
  await form.locator('input[name="scopes"][value="jobs:read"]').check();
  await expect(form.locator('select[name="tenant"]')).toHaveValue('physics');
  const created = page.waitForResponse((r) => r.url().endsWith('/api/v1/tokens') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Create token' }).click();
  expect((await created).status()).toBe(201);

  // the secret, once, with the warning and a ready-to-paste command
  const secretBox = page.locator('#token-secret');
  await expect(secretBox).toBeVisible();
  const secret = (await secretBox.textContent()).trim();
  expect(secret).toMatch(/^aidc_\S+$/);
  await expect(page.getByText('it is shown only this once')).toBeVisible();
  const example = (await page.locator('#token-curl').textContent()).trim();
  const origin = new URL(world.base).origin;
  expect(example).toContain(`Authorization: Bearer ${secret}`);
  expect(example).toContain(`${origin}/api/v1/tenants/physics/jobs`);
  await shot(page, 'tokens-created');
  await checkA11y(page);

  // the list names the token and its scope, never the secret
  const row = page.locator('tbody tr').filter({ hasText: name });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('jobs:read');
  await expect(row).toContainText('physics');
  await expect(row).toContainText('never'); // not used yet
  expect(await page.getByRole('table', { name: 'My tokens' }).textContent()).not.toContain(secret);

  // the example, run for real: a CI pipeline reading the tenant's jobs
  const ok = runExample(example);
  expect(ok.status, ok.body).toBe(200);
  const list = JSON.parse(ok.body);
  expect(Array.isArray(list.items)).toBe(true);
  expect(list.items.some((j) => j.id === world.past_run.job_id)).toBe(true);
  // jobs:read only: the same token may not submit
  const denied = runExample(example.replace(/'$/, "' -X POST -H 'Content-Type: application/json' -d '{}'"));
  expect(denied.status).toBe(403);

  // a revoke that fails (here a 503) says why and brings the Revoke button back, focused
  allowHttp(page, 503, '/api/v1/tokens/');
  await page.route((u) => u.pathname.startsWith('/api/v1/tokens/'), (route) => (route.request().method() === 'DELETE'
    ? route.fulfill({ status: 503, contentType: 'application/problem+json',
      body: JSON.stringify({ title: 'Service Unavailable', status: 503, detail: 'try again in a moment' }) })
    : route.fallback()), { times: 1 });
  await row.getByRole('button', { name: `Revoke ${name}` }).click();
  await expect(row).toContainText(`Revoke "${name}"?`);
  await row.getByRole('button', { name: 'Yes, revoke' }).click();
  await expect(row.getByRole('alert')).toContainText(`Revoking "${name}" failed: try again in a moment`);
  await expect(row.getByRole('button', { name: `Revoke ${name}` })).toBeFocused();
  await checkA11y(page);

  // revoke again (with the confirmation step), then the token is refused
  await page.keyboard.press('Enter');
  await expect(row).toContainText(`Revoke "${name}"?`);
  const revoked = page.waitForResponse((r) => r.url().includes('/api/v1/tokens/') && r.request().method() === 'DELETE');
  await row.getByRole('button', { name: 'Yes, revoke' }).click();
  expect((await revoked).status()).toBe(204);
  await expect(page.locator('tbody tr').filter({ hasText: name })).toHaveCount(0);
  // the row is gone: the focus is on the list's heading, its status line says what happened
  await expect(page.getByRole('heading', { level: 2, name: 'My tokens' })).toBeFocused();
  await expect(page.getByRole('status').filter({ hasText: `Revoked ${name}` })).toBeVisible();
  await expect(secretBox).toHaveCount(0); // a revoked token's secret is of no use: gone too
  const refused = runExample(example);
  expect(refused.status, refused.body).toBe(401);

  // a reload shows no secret anywhere
  await page.reload();
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await expect(page.getByRole('heading', { level: 1, name: 'API tokens' })).toBeVisible();
  await expect(page.locator('#token-secret')).toHaveCount(0);
  expect(await page.locator('body').textContent()).not.toContain(secret);
});

test('a token needs a name and a scope; the errors show next to the fields', async ({ page }) => {
  await login(page, 'tom');
  await visit(page, '#/tokens', null);
  const form = page.locator('form').filter({ has: page.locator('input[name="name"]') });
  await form.getByRole('button', { name: 'Create token' }).click();
  await expect(form.locator('[data-field="name"] .field-error')).toHaveText('Enter a name.');
  await expect(form.locator('[data-field="scopes"] .field-error')).toHaveText('Choose at least one scope.');
  await expect(form.locator('input[name="name"]')).toBeFocused();
  // a token never exceeds its creator's roles: tom (a tenant admin) is offered admin,
  // not the platform's scopes (the server would refuse them: 403)
  await expect(form.locator('input[name="scopes"][value="admin"]')).toHaveCount(1);
  for (const scope of ['billing:write', 'audit:read', 'audit:ingest', 'gpu-faults:write'])
    await expect(form.locator(`input[name="scopes"][value="${scope}"]`)).toHaveCount(0);
  await expect(page.locator('#token-secret')).toHaveCount(0);
});

test('a node agent token is bound to its node; only machine scopes may be', async ({ page }) => {
  const name = `agent-${Date.now().toString(36)}`;
  await login(page, 'admin', world.admin_password); // the machine scopes are a platform admin's to give
  await visit(page, '#/tokens', null);
  const form = page.locator('form').filter({ has: page.locator('input[name="name"]') });
  await form.locator('input[name="name"]').fill(name);
  await form.locator('input[name="node"]').fill('gpu-node-07');
  await form.locator('input[name="scopes"][value="jobs:read"]').check();
  // the server's refusal lands at the node field
  allowHttp(page, 400, '/api/v1/tokens');
  await form.getByRole('button', { name: 'Create token' }).click();
  await expect(form.locator('[data-field="node"] .field-error')).toContainText('audit:ingest');
  await expect(page.locator('#token-secret')).toHaveCount(0);
  await form.locator('input[name="scopes"][value="jobs:read"]').uncheck();
  await form.locator('input[name="scopes"][value="audit:ingest"]').check();
  const created = page.waitForResponse((r) => r.url().endsWith('/api/v1/tokens') && r.request().method() === 'POST');
  await form.getByRole('button', { name: 'Create token' }).click();
  expect((await created).status()).toBe(201);
  const row = page.locator('tbody tr').filter({ hasText: name });
  await expect(row).toContainText('gpu-node-07');
  await expect(row).toContainText('audit:ingest');
  await checkA11y(page);
});

test('bob (no tenant) and the phone layout', async ({ page }) => {
  await login(page, 'bob');  // at 1280 px: login() waits for #nav, which a phone folds away
  await page.setViewportSize({ width: 390, height: 844 });
  await visit(page, '#/tokens', 'tokens-390');
  // no membership: nothing to bind to, the token acts as bob
  await expect(page.locator('select[name="tenant"]')).toHaveCount(0);
  const name = `bob-script-${Date.now().toString(36)}`;
  await page.locator('input[name="name"]').fill(name);
  await page.locator('input[name="scopes"][value="images:read"]').check();
  await page.getByRole('button', { name: 'Create token' }).click();
  await expect(page.locator('#token-secret')).toBeVisible();
  const example = (await page.locator('#token-curl').textContent()).trim();
  expect(example).toContain('/api/v1/me');
  const me = runExample(example);
  expect(me.status, me.body).toBe(200);
  expect(JSON.parse(me.body).username).toBe('bob');
  await shot(page, 'tokens-390-created');
  await checkA11y(page);
  // clean up: revoke it
  const row = page.locator('tbody tr').filter({ hasText: name });
  await row.getByRole('button', { name: `Revoke ${name}` }).click();
  await row.getByRole('button', { name: 'Yes, revoke' }).click();
  await expect(page.locator('tbody tr').filter({ hasText: name })).toHaveCount(0);
});

test('alice ends another session of hers; its token is refused at once', async ({ page, playwright }) => {
  // A second login of alice's, from "another computer": a User-Agent of its own
  // names this test's session among any that other specs left.
  const ua = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) ' +
    `Chrome/123.0.0.0 Safari/537.36 aidc-e2e/${Date.now().toString(36)}`;
  const other = await playwright.request.newContext({ baseURL: world.base, userAgent: ua });
  try {
    const tok = await token(other, 'alice');
    expect((await other.get('/api/v1/me', { headers: bearer(tok) })).status()).toBe(200);

    await login(page, 'alice');
    await visit(page, '#/tokens', 'tokens-sessions');
    const sessions = page.getByRole('table', { name: 'Sessions' });
    const rows = sessions.locator('tbody tr');
    expect(await rows.count()).toBeGreaterThanOrEqual(2);
    // this browser's session: one row, marked, with the browser's User-Agent in full as its title
    const current = rows.filter({ hasText: 'this session' });
    await expect(current).toHaveCount(1);
    const browserUa = await page.evaluate(() => navigator.userAgent);
    await expect(current.getByTitle(browserUa, { exact: true })).toHaveCount(1);
    await expect(current.getByRole('button', { name: /^Sign out/ })).toBeVisible();
    // the other one: its browser in a few words (the full text in the title), not this session
    const mine = rows.filter({ has: page.getByTitle(ua, { exact: true }) });
    await expect(mine).toHaveCount(1);
    await expect(mine).toContainText('Chrome 123 on Windows');
    await expect(mine).not.toContainText('this session');
    // both came from this machine
    await expect(mine.locator('td').nth(1)).toHaveText((await current.locator('td').nth(1).textContent()).trim());
    await expect(page.getByText('If you do not recognise a session, end it and change your password.')).toBeVisible();

    // Cancel keeps it, the End button has the focus back
    const end = mine.getByRole('button', { name: /^End the session of Chrome 123 on Windows from / });
    await end.click();
    await expect(mine).toContainText('Whoever uses it is signed out at once.');
    await expect(mine.getByRole('button', { name: 'Yes, end it' })).toBeFocused();
    await mine.getByRole('button', { name: 'Cancel' }).click();
    await expect(end).toBeFocused();

    // End, confirmed: the row goes, the status line says so, the focus is on the heading
    await end.click();
    await expect(mine.getByRole('button', { name: 'Yes, end it' })).toBeFocused();
    await checkA11y(page);
    const ended = page.waitForResponse((r) => r.url().includes('/api/v1/me/sessions/') && r.request().method() === 'DELETE');
    await mine.getByRole('button', { name: 'Yes, end it' }).click();
    expect((await ended).status()).toBe(204);
    await expect(mine).toHaveCount(0);
    await expect(current).toHaveCount(1);
    await expect(page.getByRole('heading', { level: 2, name: 'Sessions', exact: true })).toBeFocused();
    await expect(page.getByRole('status').filter({ hasText: 'Ended the session of Chrome 123 on Windows' })).toBeVisible();
    await checkA11y(page);

    // the ended session's token is refused at once; this browser is still signed in
    expect((await other.get('/api/v1/me', { headers: bearer(tok) })).status()).toBe(401);
    await page.reload();
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    await expect(page.getByRole('heading', { level: 1, name: 'API tokens' })).toBeVisible();
    await expect(page.getByRole('table', { name: 'Sessions' }).locator('tbody tr').filter({ has: page.getByTitle(ua, { exact: true }) }))
      .toHaveCount(0);
  } finally {
    await other.dispose();
  }
});

test('signing out in the sessions list ends this session and shows the login page', async ({ page, playwright }) => {
  await login(page, 'alice');
  await visit(page, '#/tokens', null);
  // the browser's cookie, replayed from elsewhere: valid now, refused once signed out
  const cookie = (await page.context().cookies()).map((c) => `${c.name}=${c.value}`).join('; ');
  const replay = await playwright.request.newContext({ baseURL: world.base, extraHTTPHeaders: { Cookie: cookie } });
  try {
    expect((await replay.get('/api/v1/me')).status()).toBe(200);
    const current = page.getByRole('table', { name: 'Sessions' }).locator('tbody tr').filter({ hasText: 'this session' });
    await current.getByRole('button', { name: /^Sign out: end this session/ }).click();
    await expect(current).toContainText('This ends the session you are using now.');
    await expect(current.getByRole('button', { name: 'Yes, sign out' })).toBeFocused();
    const ended = page.waitForResponse((r) => r.url().includes('/api/v1/me/sessions/') && r.request().method() === 'DELETE');
    // the answer clears the aidc_signed_in hint: the portal knows it is signed out
    // without asking GET /me (a 401, a console error, an audit event)
    const asked = [];
    page.on('request', (r) => { if (new URL(r.url()).pathname === '/api/v1/me') asked.push(r.url()); });
    await current.getByRole('button', { name: 'Yes, sign out' }).click();
    expect((await ended).status()).toBe(204);
    // the portal's answer to a session that ended: the login page, the header signed out
    await expect(page.locator('#login-form')).toBeVisible();
    await expect(page.locator('#toast')).toHaveText('Your session has ended. Please sign in again.');
    await expect(page.locator('#logout')).toBeHidden();
    expect((await replay.get('/api/v1/me')).status()).toBe(401);
    expect(asked).toEqual([]);
  } finally {
    await replay.dispose();
  }
});

test('a user changes the password: every other session ends, this one goes on', async ({ page, playwright, request }) => {
  // A user of this test's own: the seeded ones keep world.password for the other specs.
  const stamp = Date.now().toString(36);
  const user = `pw-${stamp}`;
  const newPassword = `Changed-pass-${stamp}`;
  const admin = await token(request, 'admin', world.admin_password);
  const made = await request.post('/api/v1/users',
    { headers: bearer(admin), data: { username: user, password: world.password } });
  expect(made.status(), await made.text()).toBe(201);

  // a second session of the user's, from "another computer" (a User-Agent of its own)
  const ua = `Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0 aidc-e2e/${stamp}`;
  const other = await playwright.request.newContext({ baseURL: world.base, userAgent: ua });
  try {
    const tok = await token(other, user);
    expect((await other.get('/api/v1/me', { headers: bearer(tok) })).status()).toBe(200);

    await login(page, user);
    await visit(page, '#/tokens', null);
    const rows = page.getByRole('table', { name: 'Sessions' }).locator('tbody tr');
    await expect(rows).toHaveCount(2);
    await expect(rows.filter({ has: page.getByTitle(ua, { exact: true }) })).toHaveCount(1);

    // the form, after the sessions: labelled fields a password manager understands
    await expect(page.getByRole('heading', { level: 2, name: 'Password', exact: true })).toBeVisible();
    const form = page.locator('form').filter({ has: page.locator('input[name="new_password"]') });
    const current = form.getByLabel('Current password');
    const fresh = form.getByLabel('New password', { exact: true });
    const repeat = form.getByLabel('Repeat new password');
    await expect(current).toHaveAttribute('autocomplete', 'current-password');
    await expect(fresh).toHaveAttribute('autocomplete', 'new-password');
    await expect(repeat).toHaveAttribute('type', 'password');
    await expect(fresh).toHaveAccessibleDescription(/At least 10 characters/);
    await expect(page.getByText('signs out every other session of yours')).toBeVisible();
    const change = form.getByRole('button', { name: 'Change password' });
    const sent = [];
    page.on('request', (r) => { if (r.url().endsWith('/api/v1/me/password')) sent.push(r.method()); });

    // the repeat does not match: said at that field, focused, nothing sent
    await current.fill(world.password);
    await fresh.fill(newPassword);
    await repeat.fill(`${newPassword}x`);
    await change.click();
    await expect(form.locator('[data-field="new_password_repeat"] .field-error'))
      .toHaveText('Does not match the new password.');
    await expect(repeat).toBeFocused();
    await expect(repeat).toHaveAttribute('aria-invalid', 'true');
    await expect(repeat).toHaveAccessibleDescription('Does not match the new password.');
    expect(sent).toEqual([]);

    // a wrong current password: the server's message at that field, focused
    allowHttp(page, 400, '/api/v1/me/password');
    await current.fill('Not-my-password-1');
    await repeat.fill(newPassword);
    const refused = page.waitForResponse((r) => r.url().endsWith('/api/v1/me/password'));
    await change.click();
    expect((await refused).status()).toBe(400);
    await expect(form.locator('[data-field="current_password"] .field-error')).toHaveText('is not the current password');
    await expect(current).toBeFocused();
    await expect(current).toHaveAttribute('aria-invalid', 'true');
    await expect(form.locator('[data-field="new_password_repeat"] .field-error')).toHaveText('');
    await expect(repeat).not.toHaveAttribute('aria-invalid');
    expect(sent).toEqual(['PUT']);
    await checkA11y(page);

    // the right one: changed, the form emptied, the list down to this session
    await current.fill(world.password);
    const changed = page.waitForResponse((r) => r.url().endsWith('/api/v1/me/password'));
    await change.click();
    expect((await changed).status()).toBe(200);
    await expect(page.getByRole('status').filter({ hasText: 'Password changed. Every other session has been signed out.' }))
      .toBeVisible();
    await expect(page.getByRole('heading', { level: 2, name: 'Password', exact: true })).toBeFocused();
    for (const input of [current, fresh, repeat]) await expect(input).toHaveValue('');
    await expect(form.locator('[aria-invalid]')).toHaveCount(0);
    await expect(rows).toHaveCount(1);
    await expect(rows.filter({ hasText: 'this session' })).toHaveCount(1);
    await shot(page, 'tokens-password-changed');
    await checkA11y(page);

    // the other session is over; this browser goes on in its new one
    expect((await other.get('/api/v1/me', { headers: bearer(tok) })).status()).toBe(401);
    await page.reload();
    await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
    await expect(page.getByRole('heading', { level: 1, name: 'API tokens' })).toBeVisible();
    await expect(page.locator('#logout')).toBeVisible();
    await expect(rows).toHaveCount(1);

    // the new password signs in, the old one no longer does
    const apiLogin = (password) => request.post('/api/v1/auth/login', { data: { username: user, password } });
    expect((await apiLogin(world.password)).status()).toBe(401);
    expect((await apiLogin(newPassword)).status()).toBe(200);
  } finally {
    await other.dispose();
  }
});
