// smoke.spec.js - what every other spec relies on: aidcd serves the portal's files with
// the right types, caching and security headers, and the login page works (errors,
// language switch, throttling), is accessible and renders.
const http = require('http');
const { test, expect, world, allowHttp, visit } = require('../fixtures');

// script-src (or default-src, its fallback) must not allow inline or eval'd script
function checkCsp(url, headers) {
  const csp = headers['content-security-policy'];
  expect(csp, `Content-Security-Policy of ${url}`).toBeTruthy();
  const directives = Object.fromEntries(csp.split(';').map((d) => d.trim().split(/\s+/))
    .filter((d) => d[0]).map(([name, ...values]) => [name, values]));
  const script = directives['script-src'] || directives['default-src'];
  expect(script, `script-src or default-src in the CSP of ${url}: ${csp}`).toBeTruthy();
  expect(script, `CSP of ${url}`).not.toContain("'unsafe-inline'");
  expect(script, `CSP of ${url}`).not.toContain("'unsafe-eval'");
  expect(headers['x-content-type-options'], `X-Content-Type-Options of ${url}`).toBe('nosniff');
}

// a request with its path exactly as written (Playwright's client would normalize "..")
function rawGet(path) {
  const { hostname, port } = new URL(world.base);
  return new Promise((resolve, reject) => {
    http.get({ hostname, port, path }, (res) => { res.resume(); res.on('end', () => resolve(res)); })
      .on('error', reject);
  });
}

test.describe('served files', () => {
  test('types, caching and security headers', async ({ request }) => {
    const get = async (path, type, headers) => {
      const res = await request.get(path, { headers });
      expect(res.status(), `GET ${path}`).toBe(200);
      expect(res.headers()['content-type'], `Content-Type of ${path}`).toContain(type);
      checkCsp(path, res.headers());
      return res;
    };
    for (const path of ['/', '/index.html']) {
      const res = await get(path, 'text/html');
      expect(await res.text()).toContain('<script type="module"');
    }
    await get('/js/app.js', 'text/javascript');
    await get('/style.css', 'text/css');
    const vendor = await get('/vendor/uplot-1.6.32/uPlot.iife.min.js', 'text/javascript');
    expect(vendor.headers()['cache-control']).toContain('immutable');

    // the index is revalidated on every load (a new portal is never hidden by a cache)
    const index = await get('/index.html', 'text/html');
    expect(index.headers()['cache-control']).toBe('no-cache');
    const etag = index.headers().etag;
    expect(etag, 'ETag of /index.html').toBeTruthy();
    const again = await request.get('/index.html', { headers: { 'If-None-Match': etag } });
    expect(again.status(), 'GET /index.html If-None-Match').toBe(304);
  });

  test('missing assets and paths outside the portal are 404, client routes get the index', async ({ request }) => {
    const nope = await request.get('/js/nope.js');
    expect(nope.status()).toBe(404);
    checkCsp('/js/nope.js', nope.headers());
    // encoded slashes survive the client's URL parser (which would resolve "..", "%2e%2e"
    // and ".%2e" away); the server decodes them into ".." segments, which it refuses
    for (const path of ['/%2e%2e%2fetc%2fpasswd', '/js/..%2f..%2f..%2fetc%2fpasswd', '/%2e%2e%5cetc%5cpasswd']) {
      const res = await request.get(path);
      expect(res.status(), `GET ${path}`).toBe(404);
      expect(await res.text()).not.toContain('root:');
    }
    // sent as written: "..", and dot files (.git) are never served
    for (const path of ['/../etc/passwd', '/js/../../etc/passwd', '/vendor/../../../../etc/passwd', '/.git/config'])
      expect((await rawGet(path)).statusCode, `GET ${path} (raw)`).toBe(404);
    // routes live in the hash, and a reload of an extension-less path gets the index too
    for (const path of ['/#/jobs', '/jobs/7f3e']) {
      const res = await request.get(path);
      expect(res.status(), `GET ${path}`).toBe(200);
      expect(res.headers()['content-type'], `Content-Type of ${path}`).toContain('text/html');
      checkCsp(path, res.headers());
    }
  });
});

// signed out, the portal asks nothing (GET /me would answer 401): any 401 here fails
test.describe('login page', () => {
  test('renders, is accessible', async ({ page }) => {
    await visit(page, '#/login', 'login');
    await expect(page.locator('#login-form')).toBeVisible();
    await expect(page.locator('#nav')).toBeHidden();
  });

  test('bad credentials show an error', async ({ page }) => {
    allowHttp(page, 401, '/api/v1/auth/login');
    await page.goto('/#/login');
    // a user of its own: its failures count against no seeded user's throttle
    await page.locator('#username').fill('smoke-nobody');
    await page.locator('#password').fill('wrong-password-1');
    const answer = page.waitForResponse((r) => r.url().includes('/api/v1/auth/login'));
    await page.locator('#login-form [type="submit"]').click();
    expect((await answer).status()).toBe(401);
    await expect(page.locator('#login-error')).toBeVisible();
    await expect(page.locator('#login-error')).not.toBeEmpty();
    await expect(page.locator('#nav')).toBeHidden();
  });

  test('the language switch toggles English and Chinese', async ({ page }) => {
    await page.goto('/#/login');
    const html = page.locator('html');
    const title = page.locator('[data-i18n="login.title"], #login-form h2').first();
    await expect(html).toHaveAttribute('lang', 'en');
    await expect(title).not.toBeEmpty();
    const english = await title.textContent();
    await page.locator('#lang').click();
    await expect(html).toHaveAttribute('lang', 'zh-CN');
    await expect(title).not.toHaveText(english);
    await page.locator('#lang').click();
    await expect(html).toHaveAttribute('lang', 'en');
    await expect(title).toHaveText(english);
  });

  test('repeated failures are throttled with a message', async ({ page }) => {
    allowHttp(page, 401, '/api/v1/auth/login');
    allowHttp(page, 429, '/api/v1/auth/login');
    await page.goto('/#/login');
    const submit = async () => {
      await page.locator('#username').fill('smoke-throttled'); // throttled by user name
      await page.locator('#password').fill('wrong-password-1');
      const answer = page.waitForResponse((r) => r.url().includes('/api/v1/auth/login'));
      await page.locator('#login-form [type="submit"]').click();
      return (await answer).status();
    };
    // AIDC_LOGIN_MAX_FAILURES (world.c) failures are answered 401, the next one 429
    for (let i = 0; i < world.login_max_failures; i++) expect(await submit(), `attempt ${i + 1}`).toBe(401);
    await expect(page.locator('#login-error')).not.toBeEmpty();
    const refused = (await page.locator('#login-error').textContent()).trim();
    expect(await submit(), 'the attempt after the limit').toBe(429);
    await expect(page.locator('#login-error')).toBeVisible();
    // not the bad-credentials message: the user learns to wait, not to retype
    await expect(page.locator('#login-error')).not.toHaveText(refused);
    await expect(page.locator('#login-error')).not.toBeEmpty();
  });
});
