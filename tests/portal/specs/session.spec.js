// session.spec.js - signed out, the portal asks the server nothing it would refuse:
// no GET /me (whose 401 was a console error and an "auth.me denied" audit event per
// visit) unless the aidc_signed_in hint that login sets is there; logout and a
// session that ended elsewhere leave it signed out quietly. After sign-in each role
// lands on its own home page, and the header's tenant picker shows only on pages
// about a tenant, in English and Chinese.
const { test, expect, world, login, visit, allowHttp } = require('../fixtures');
const { token, bearer } = require('../apicalls');

const HINT = 'aidc_signed_in';
const UA = `aidc-portal-signed-out-${Date.now()}`;

// The "auth.me denied" audit events written for requests of this browser (its user agent).
async function meDenied(request) {
  const tok = await token(request, 'audrey');
  const res = await request.get('/api/v1/audit/events', { headers: bearer(tok),
    params: { action: 'auth.me', outcome: 'denied', limit: 200 } });
  expect(res.status()).toBe(200);
  return (await res.json()).items.filter((e) => e.user_agent === UA);
}

// Every request to GET /api/v1/me the page makes from now on.
function meRequests(page) {
  const seen = [];
  page.on('request', (req) => { if (new URL(req.url()).pathname === '/api/v1/me') seen.push(req.url()); });
  return seen;
}

test.describe('signed out', () => {
  test.use({ userAgent: UA });

  test('a visit makes no console error, no failed request and no audit event', async ({ page, request, playwright }) => {
    const problems = [];
    page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
    page.on('requestfailed', (r) => problems.push(`failed: ${r.url()}`));
    page.on('response', (r) => { if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`); });
    const asked = meRequests(page);

    for (const path of ['/', '/#/jobs', '/#/dashboard', '/#/platform']) {
      await page.goto(path);
      await expect(page.locator('#login-form')).toBeVisible();
      await expect(page).toHaveURL(/#\/login$/);
    }
    await page.reload();
    await expect(page.locator('#login-form')).toBeVisible();
    await visit(page, '#/login', 'signed-out');
    expect(asked, 'GET /me while signed out').toEqual([]);
    expect(problems).toEqual([]);
    expect(await meDenied(request), 'auth.me denied events of this visit').toEqual([]);

    // the same question asked without a session is audited: the check above would see it
    // (a context of its own: `request` holds audrey's session cookie by now)
    const anonymous = await playwright.request.newContext({ baseURL: world.base });
    const probe = await anonymous.get('/api/v1/me', { headers: { 'User-Agent': UA } });
    expect(probe.status()).toBe(401);
    await anonymous.dispose();
    await expect.poll(async () => (await meDenied(request)).length).toBe(1);
  });
});

test('login sets the hint, sign-out clears it, and the next visit asks nothing', async ({ page, context }) => {
  await login(page, 'alice');
  await visit(page, '#/tokens', null); // settled: nothing in flight when it signs out
  const cookies = Object.fromEntries((await context.cookies()).map((c) => [c.name, c]));
  expect(cookies[HINT], 'the hint cookie').toBeTruthy();
  expect(cookies[HINT].value).toBe('1');
  expect(cookies[HINT].httpOnly).toBe(false); // the portal reads it
  expect(cookies[HINT].sameSite).toBe('Strict');
  expect(cookies[HINT].path).toBe('/');
  expect(cookies.aidc_session.httpOnly).toBe(true); // the session itself stays out of reach
  expect(Math.abs(cookies[HINT].expires - cookies.aidc_session.expires)).toBeLessThan(5);

  await page.locator('#logout').click();
  await expect(page.locator('#login-form')).toBeVisible();
  expect((await context.cookies()).map((c) => c.name)).not.toContain(HINT);
  const asked = meRequests(page);
  await page.reload();
  await visit(page, '#/jobs', null);
  await expect(page.locator('#login-form')).toBeVisible();
  expect(asked).toEqual([]);
});

test('a session ended elsewhere: one refused question, then signed out quietly', async ({ page, context }) => {
  await login(page, 'alice');
  await visit(page, '#/tokens', null); // settled: nothing in flight at the reload
  // the session cookie is gone (expired, or ended on another device), the hint remains
  await context.clearCookies({ name: 'aidc_session' });
  allowHttp(page, 401, '/api/v1/me');
  const asked = meRequests(page);
  await page.reload();
  await expect(page.locator('#login-form')).toBeVisible();
  expect(asked).toHaveLength(1);
  expect((await context.cookies()).map((c) => c.name)).not.toContain(HINT);
  await page.reload();
  await expect(page.locator('#login-form')).toBeVisible();
  expect(asked).toHaveLength(1);
});

// Where each role lands, and the pages on which the header shows a tenant picker
// (the user sees more than one tenant there) or none.
const HOMES = [
  { user: 'admin', password: () => world.admin_password, home: '#/platform', h1: ['Platform admin', '平台管理'],
    picker: ['#/dashboard', '#/jobs', '#/usage', '#/tenant'], none: ['#/platform', '#/finance', '#/audit', '#/tokens'] },
  { user: 'fiona', home: '#/finance', h1: ['Finance', '财务'], picker: ['#/usage'], none: ['#/finance', '#/tokens'] },
  { user: 'audrey', home: '#/audit', h1: ['Audit', '审计'], picker: [], none: ['#/audit', '#/tokens'] },
  { user: 'tom', home: '#/dashboard', h1: ['Dashboard · physics', '总览 · physics'], picker: [], none: ['#/jobs', '#/tokens'] },
];

for (const [i, locale] of ['en-US', 'zh-CN'].entries()) {
  test.describe(`home pages (${locale})`, () => {
    test.use({ locale });

    for (const r of HOMES) {
      test(`${r.user} lands on ${r.home}; the tenant picker only where it has a purpose`, async ({ page }) => {
        await login(page, r.user, r.password ? r.password() : undefined);
        await expect(page).toHaveURL(new RegExp(`${r.home}$`));
        await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
        await expect(page.getByRole('heading', { level: 1 })).toHaveText(r.h1[i]);
        await visit(page, r.home, `home-${r.user}-${locale}`);
        await expect(page.locator('#tenant-pick')).toBeHidden();
        await expect(page.locator('.brand')).toHaveAttribute('href', r.home);
        for (const hash of r.none) {
          await visit(page, hash, null);
          await expect(page.locator('#tenant-pick'), `no tenant picker on ${hash}`).toBeHidden();
        }
        for (const hash of r.picker) {
          await visit(page, hash, null);
          await expect(page.locator('#tenant-pick'), `the tenant picker on ${hash}`).toBeVisible();
        }
      });
    }
  });
}
