// layout.spec.js - the header fits: for the role with the most entries (a platform
// admin) and for finance and auditors, in English and Chinese, at 1280 px it is one
// row of one-line items, no taller than a one-row header; at 390 px the navigation folds behind
// the menu and what stays in the header is one row too. Measured from bounding boxes
// (a wrapped label has more than one line box). Also the Chinese job list: no column
// heading broken one character a line, the project filter wide enough for its names.
const { test, expect, world, login, visit, shot } = require('../fixtures');

const LANGS = [['en', 'en-US', 'Sign out'], ['zh', 'zh-CN', '退出登录']];
const ROLES = [['admin', () => world.admin_password], ['fiona'], ['audrey']];
// a header of one row: buttons and selects are ~40 px tall, plus its padding
const ONE_ROW = 60;

// The header as the browser laid it out: its box and, for each visible item, its box
// and how many line boxes its text takes.
function measure(page) {
  return page.evaluate(() => {
    const lineCount = (el) => {
      const r = document.createRange();
      r.selectNodeContents(el);
      return new Set([...r.getClientRects()].filter((b) => b.width > 0 && b.height > 0)
        .map((b) => Math.round(b.top))).size;
    };
    const header = document.querySelector('header.top');
    const items = [...header.querySelectorAll('.brand, #menu, #nav a, #tenant-pick, #who, #lang, #logout')]
      .filter((el) => el.getClientRects().length && el.getBoundingClientRect().width > 0)
      .map((el) => {
        const b = el.getBoundingClientRect();
        return { name: el.id || el.className || el.textContent, text: el.textContent,
          top: b.top, bottom: b.bottom, left: b.left, right: b.right, width: b.width, height: b.height,
          lines: el.tagName === 'SELECT' ? 1 : lineCount(el) };
      });
    const hb = header.getBoundingClientRect();
    return { height: hb.height, width: window.innerWidth, items,
      overflow: header.scrollWidth > header.clientWidth || document.documentElement.scrollWidth > window.innerWidth };
  });
}

function expectOneRow(m, what) {
  expect(m.overflow, `${what}: nothing wider than the screen`).toBe(false);
  expect(m.height, `${what}: header height`).toBeLessThanOrEqual(ONE_ROW);
  for (const it of m.items) {
    expect(it.lines, `${what}: "${it.text}" (${it.name}) on one line`).toBe(1);
    expect(it.right, `${what}: "${it.text}" inside the screen`).toBeLessThanOrEqual(m.width);
  }
  const tops = m.items.map((it) => it.top + it.height / 2);
  expect(Math.max(...tops) - Math.min(...tops), `${what}: every item on one row`).toBeLessThan(12);
}

for (const [code, locale, signOut] of LANGS) {
  test.describe(`header (${code})`, () => {
    test.use({ locale });

    for (const [user, password] of ROLES) {
      test(`${user}'s header is one row at 1280 px and at 390 px`, async ({ page }) => {
        await page.setViewportSize({ width: 1280, height: 800 });
        await login(page, user, password && password());
        await expect(page.locator('#logout')).toHaveText(signOut);
        await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
        const pages = user === 'admin' ? ['#/dashboard', '#/jobs', '#/platform'] : [null];
        for (const hash of pages) {
          if (hash) await visit(page, hash, null);
          expectOneRow(await measure(page), `${user}, ${code}, 1280 px, ${hash || 'home'}`);
        }
        if (user === 'admin') {
          // every entry a platform admin has is in the row (none hidden to make room)
          await visit(page, '#/dashboard', `header-${user}-${code}-1280`);
          await expect(page.locator('#nav a')).toHaveCount(9);
          for (const a of await page.locator('#nav a').all()) await expect(a).toBeVisible();
          await expect(page.locator('#tenant-pick')).toBeVisible();
        } else {
          await visit(page, new URL(page.url()).hash, `header-${user}-${code}-1280`);
        }

        // a phone: brand, menu, language and sign-out in one row; the rest in the menu
        await page.setViewportSize({ width: 390, height: 844 });
        await visit(page, user === 'admin' ? '#/dashboard' : new URL(page.url()).hash, `header-${user}-${code}-390`);
        await expect(page.locator('#menu')).toBeVisible();
        await expect(page.locator('#nav')).toBeHidden();
        await expect(page.locator('#logout')).toBeVisible();
        expectOneRow(await measure(page), `${user}, ${code}, 390 px`);
        await page.locator('#menu').click();
        await expect(page.locator('#nav')).toBeVisible();
        if (user === 'admin') await expect(page.locator('#tenant-pick')).toBeVisible();
        const open = await measure(page);
        expect(open.overflow, `${user}, ${code}, 390 px, menu open: nothing wider than the screen`).toBe(false);
        for (const it of open.items)
          expect(it.lines, `${user}, ${code}, 390 px, menu open: "${it.text}" on one line`).toBe(1);
        await visit(page, new URL(page.url()).hash, null); // axe with the menu open
        await page.screenshot({ path: test.info().outputPath(`header-${user}-${code}-390-open.png`) });
      });
    }
  });
}

// A busy tenant, answered by the test: short user names beside long reasons and job
// names squeeze the narrow columns; a project with a long Chinese name.
async function busyTenant(page) {
  const jobs = ['li', 'tom', 'bob'].map((user, i) => ({
    id: `00000000-0000-4000-8000-00000000000${i}`, tenant: 'physics', state: 'queued', queue_position: i + 1,
    name: `lattice-sweep-beta-${i}-with-a-rather-long-descriptive-name`, project: 'lattice', user,
    reason: 'quota:gpu:a100', resources: { gpus: 2, gpu_type: 'a100', cpus: 8, memory_gib: 64, nodes: 1 },
    submitted_at: new Date(Date.now() - i * 60_000).toISOString(), preemptible: false, preemption_count: 0,
  }));
  const projects = [
    { slug: 'qcd', name: 'QCD simulations' },
    { slug: 'lattice', name: '格点规范场论大体积模拟与数据分析' },
  ];
  await page.route((u) => u.pathname === '/api/v1/tenants/physics/jobs',
    (route) => route.fulfill({ json: { items: jobs, next_cursor: null } }));
  await page.route((u) => u.pathname === '/api/v1/tenants/physics/projects',
    (route) => route.fulfill({ json: { items: projects, next_cursor: null } }));
}

// How wide the widest option of a select is, and how much text the select shows.
function selectFit(locator) {
  return locator.evaluate((sel) => {
    const c = document.createElement('canvas').getContext('2d');
    const cs = getComputedStyle(sel);
    c.font = `${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
    const widest = Math.max(...[...sel.options].map((o) => c.measureText(o.text).width));
    const inner = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    return { widest, inner, names: [...sel.options].map((o) => o.text) };
  });
}

test.describe('job list (zh)', () => {
  test.use({ locale: 'zh-CN' });

  test('column headings stay whole', async ({ page }) => {
    await busyTenant(page);
    await login(page, 'alice');
    await visit(page, '#/jobs?user=', 'jobs-list-zh-1280');
    const heads = await page.locator('table thead th').evaluateAll((ths) => ths.map((th) => {
      const r = document.createRange();
      r.selectNodeContents(th);
      return { text: th.textContent,
        lines: new Set([...r.getClientRects()].filter((b) => b.width > 0).map((b) => Math.round(b.top))).size };
    }));
    expect(heads.map((x) => x.text)).toContain('用户');
    for (const x of heads) expect(x.lines, `column heading "${x.text}" on one line`).toBe(1);
  });

  test('the project selects show whole names', async ({ page }) => {
    await busyTenant(page);
    await login(page, 'alice');
    for (const width of [1400, 1280]) {
      await page.setViewportSize({ width, height: 800 });
      for (const [hash, name] of [['#/jobs?user=', 'filter'], ['#/jobs/new', 'submit']]) {
        await visit(page, hash, `project-${name}-zh-${width}`);
        const fit = await selectFit(page.locator('main').getByLabel('项目', { exact: true }));
        expect(fit.names).toContain('lattice (格点规范场论大体积模拟与数据分析)');
        // Chromium draws the arrow inside the padding box: keep room for it
        expect(fit.widest + 16, `the project ${name} at ${width} px (${JSON.stringify(fit)})`)
          .toBeLessThanOrEqual(fit.inner);
      }
    }
  });
});
