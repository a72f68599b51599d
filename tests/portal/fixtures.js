// fixtures.js - what every spec imports instead of @playwright/test:
//   const { test, expect, world, login, visit, allowHttp, shot, checkA11y } = require('../fixtures');
//
// - world: the seeded world (global-setup.js, world.c): base URL, passwords, users, ...
//   Also a fixture: test('x', async ({ page, world }) => ...).
// - page: fails the test at its end on any console error, page error, failed request or
//   HTTP status >= 400 that the test did not expect with allowHttp(). A portal that logs
//   errors or calls endpoints that fail is broken even when the visible text looks right.
// - login(page, username, password = world.password): through the login form.
// - visit(page, '#/jobs', 'jobs-list'): go there, wait until #main is no longer busy,
//   full-page screenshot (name.png) and axe check.
// - shot(page, name), checkA11y(page): the two halves of visit().
const base = require('@playwright/test');
const fs = require('fs');

const { expect } = base;

let cached;
function readWorld() {
  if (!cached) {
    const file = process.env.AIDC_WORLD_FILE;
    if (!file) throw new Error('AIDC_WORLD_FILE is not set: run through run-e2e.sh / playwright.config.js');
    cached = JSON.parse(fs.readFileSync(file, 'utf8'));
  }
  return cached;
}
// Read lazily: test files are loaded (to list their tests) before global setup has run.
const world = new Proxy({}, {
  get: (_, k) => readWorld()[k],
  has: (_, k) => k in readWorld(),
  ownKeys: () => Reflect.ownKeys(readWorld()),
  getOwnPropertyDescriptor: (_, k) => Reflect.getOwnPropertyDescriptor(readWorld(), k),
});

// What each page may fail with: [{ status, url }], status a number or 'failed' (requestfailed).
const allowed = new WeakMap();

/**
 * Expect HTTP status (e.g. 401) from requests whose URL contains urlSubstring, in this
 * test: neither the response nor Chromium's console error about it fails the test.
 * allowHttp(page, 'failed', url) allows a request that never got an answer (e.g. one
 * the portal aborts on purpose).
 */
function allowHttp(page, status, urlSubstring) {
  if (!allowed.has(page)) allowed.set(page, []);
  allowed.get(page).push({ status, url: urlSubstring });
}

function isAllowed(page, status, url) {
  return (allowed.get(page) || []).some((a) => a.status === status && url.includes(a.url));
}

// The status Chromium names in "Failed to load resource: the server responded with a status of 404 (...)"
const LOAD_FAILED = /^Failed to load resource: the server responded with a status of (\d+)/;
// ... and its words for a request that got no answer ("net::ERR_FAILED"): allowHttp(page, 'failed', url)
const NO_ANSWER = /^Failed to load resource: net::ERR_/;

const test = base.test.extend({
  // eslint-disable-next-line no-empty-pattern
  world: [async ({}, use) => { await use(readWorld()); }, { scope: 'worker' }],
  baseURL: async ({ world: w }, use) => { await use(w.base); },

  page: async ({ page }, use) => {
    const seen = []; // { kind, status?, url, text }
    page.on('console', (msg) => {
      if (msg.type() !== 'error') return;
      const m = msg.text().match(LOAD_FAILED);
      seen.push({ kind: 'console error', status: m ? Number(m[1]) : NO_ANSWER.test(msg.text()) ? 'failed' : undefined,
                  url: msg.location().url || '', text: msg.text() });
    });
    page.on('pageerror', (err) => {
      seen.push({ kind: 'page error', url: page.url(), text: err.stack || String(err) });
    });
    page.on('requestfailed', (req) => {
      seen.push({ kind: 'request failed', status: 'failed', url: req.url(),
                  text: `${req.method()} ${req.url()}: ${req.failure()?.errorText}` });
    });
    page.on('response', (res) => {
      if (res.status() >= 400)
        seen.push({ kind: 'HTTP error', status: res.status(), url: res.url(),
                    text: `${res.request().method()} ${res.url()} -> ${res.status()} ${res.statusText()}` });
    });

    await use(page);

    // judged at the end, so allowHttp() may come before or after what it allows
    const bad = seen.filter((s) => s.status === undefined || !isAllowed(page, s.status, s.url));
    if (bad.length) {
      const list = bad.map((s) => `  - ${s.kind}: ${s.text}`).join('\n');
      throw new Error(`the page reported ${bad.length} problem(s) this test did not allow ` +
                      `(allowHttp(page, status, urlSubstring) for expected ones):\n${list}`);
    }
  },
});

/** Log in through the form; resolves once the signed-in header (#logout) shows. */
async function login(page, username, password = world.password) {
  await page.goto('/#/login');
  await page.locator('#username').fill(username);
  await page.locator('#password').fill(password);
  await page.locator('#login-form [type="submit"]').click();
  // #logout, not #nav: below 720 px the navigation folds behind the menu button
  await expect(page.locator('#logout')).toBeVisible();
}

/**
 * Go to hash (e.g. '#/jobs'), wait until the page is rendered (#main aria-busy="false"),
 * take a full-page screenshot name.png and run the accessibility check.
 */
async function visit(page, hash, name) {
  const want = '#' + hash.replace(/^\/?#?/, '');
  const origin = new URL(world.base).origin;
  const here = page.url().startsWith('http') ? new URL(page.url()) : null;
  if (!here || here.origin !== origin) {
    await page.goto('/' + want);
  } else if (here.hash !== want) {
    // same document: wait past the portal's own hashchange handler, which marks #main busy,
    // so the wait below does not see the previous page's aria-busy="false"
    await page.evaluate((h) => new Promise((resolve) => {
      window.addEventListener('hashchange', () => setTimeout(resolve, 0), { once: true });
      window.location.hash = h;
    }), want);
  }
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  if (name) await shot(page, name);
  await checkA11y(page);
}

/** Full-page screenshot into this test's output folder, attached to the report. */
async function shot(page, name) {
  const file = test.info().outputPath(`${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  await test.info().attach(name, { path: file, contentType: 'image/png' });
}

let axeSource;
/**
 * axe-core over the page (WCAG 2 A and AA rules): fails on serious or critical
 * violations, naming rule, help and the first elements. Injected with page.evaluate,
 * which the portal's CSP (no inline script) does not block, unlike addScriptTag.
 */
async function checkA11y(page) {
  axeSource ??= fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  // an element half way through a transition (the toast fading in or out) has the
  // contrast of neither end: axe would judge a moment, not the page (a CI flake)
  await page.waitForFunction(() => document.getAnimations().every((a) => a.playState !== 'running'),
    null, { timeout: 2000 }).catch(() => {});
  const violations = await page.evaluate(async () => {
    const r = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa'] } });
    return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, helpUrl: v.helpUrl,
                                      targets: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) }));
  });
  const bad = violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  if (bad.length) {
    const list = bad.map((v) => `  - ${v.id} (${v.impact}): ${v.help}\n      at ${v.targets.join(' | ')}`).join('\n');
    throw new Error(`accessibility (axe, WCAG 2 A/AA) on ${page.url()}:\n${list}`);
  }
}

module.exports = { test, expect, world, login, visit, allowHttp, shot, checkA11y };
