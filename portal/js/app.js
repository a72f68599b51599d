// app.js - the portal's shell: session, tenant choice, role-aware navigation
// and a hash router that loads one ES module per page (js/pages/NAME.js).
// A page module exports render(ctx); see docs/portal.md for ctx.
import { api, ApiError, whenUnauthorized, signedIn } from './api.js';
import { t, apply, toggle, lang } from './i18n.js';
import { h, clear, alertBox, toast } from './ui.js';
import * as roles from './roles.js';
import { forgetAll as forgetUploads } from './upload.js';

// path pattern, page module, nav label (if in the menu), who may open it, and
// whether the page is about the tenant chosen in the header (only then the picker shows)
const ROUTES = [
  { path: 'login', page: 'login', title: 'login.title', public: true },
  { path: 'dashboard', page: 'dashboard', nav: 'nav.dashboard', allow: roles.tenantReader, tenant: true },
  { path: 'jobs', page: 'jobs', nav: 'nav.jobs', allow: roles.tenantReader, tenant: true },
  { path: 'jobs/new', page: 'jobsubmit', title: 'dash.submit', allow: roles.canSubmit, tenant: true },
  { path: 'jobs/template', page: 'templaterun', title: 'tpl.run.title', allow: roles.canSubmit, tenant: true },
  { path: 'jobs/:tenant/:id', page: 'jobdetail', title: 'nav.jobs', allow: roles.tenantReader },
  { path: 'sessions', page: 'sessions', nav: 'nav.sessions', allow: roles.usesSessions, tenant: true },
  { path: 'sessions/:id', page: 'session', title: 'nav.sessions', allow: roles.usesSessions },
  { path: 'files', page: 'files', nav: 'nav.files', allow: roles.usesFiles, tenant: true },
  { path: 'images', page: 'images', nav: 'nav.images', allow: roles.tenantReader, tenant: true },
  { path: 'usage', page: 'usage', nav: 'nav.usage', allow: roles.usageReader, tenant: true },
  // the tenant's own people (platform admins review in #/platform?tab=allocations)
  { path: 'allocations', page: 'allocations', nav: 'nav.allocations', allow: (me, tenant) => !!roles.tenantRole(me, tenant), tenant: true },
  { path: 'tenant', page: 'tenantadmin', nav: 'nav.tenant', allow: roles.tenantAdmin, tenant: true },
  // a tenant admin's job templates: linked from the submit page (the header has no room left)
  { path: 'templates', page: 'templates', title: 'nav.templates', allow: roles.tenantAdmin, tenant: true },
  { path: 'platform', page: 'platform', nav: 'nav.platform', allow: roles.platformAdmin },
  { path: 'finance', page: 'finance', nav: 'nav.finance', allow: roles.finance },
  { path: 'audit', page: 'audit', nav: 'nav.audit', allow: roles.auditor },
  // platform admins reach it from the platform page's clusters tab (their header is full)
  { path: 'capacity', page: 'capacity', nav: 'nav.capacity', allow: roles.anyone, navHide: roles.platformAdmin },
  { path: 'tokens', page: 'tokens', nav: 'nav.tokens', allow: roles.anyone },
  // the user's own settings, linked from #/tokens (the header has no room for more entries)
  { path: 'notifications', page: 'notifications', title: 'nav.notifications', allow: roles.anyone },
];

const main = document.getElementById('main');
const header = document.querySelector('header.top');
const panel = document.getElementById('menu-panel');
const session = { me: null, tenant: null, tenants: [] };
let cleanups = [];
let renderSeq = 0;

function parseHash() {
  // "#main" and other in-page anchors are not routes (see the click handler below)
  const raw = location.hash.startsWith('#/') ? location.hash.slice(2) : '';
  const [path, qs] = raw.split('?');
  const parts = path.split('/').filter(Boolean).map(decodeURIComponent);
  for (const r of ROUTES) {
    const pat = r.path.split('/');
    if (pat.length !== parts.length) continue;
    const params = {};
    if (pat.every((p, i) => (p.startsWith(':') ? ((params[p.slice(1)] = parts[i]), true) : p === parts[i])))
      return { route: r, params, query: new URLSearchParams(qs || '') };
  }
  return { route: null, params: {}, query: new URLSearchParams(qs || ''), empty: parts.length === 0 };
}

export function go(hash) {
  if (location.hash === hash) render();
  else location.hash = hash;
}

async function loadSession() {
  // no hint: the server ended the session (logout, this session ended on the tokens
  // page) or there never was one; GET /me could only answer 401
  if (!signedIn()) {
    sessionEnded();
    throw new ApiError(401, { title: 'Unauthorized' });
  }
  session.me = await api.get('me');
  const mine = session.me.memberships.map((m) => m.tenant);
  let all = mine;
  if (roles.seesAllTenants(session.me)) {
    const list = await api.all('tenants').catch(() => []);
    all = [...new Set([...mine, ...list.map((x) => x.slug)])];
  }
  session.tenants = all;
  const saved = localStorage.getItem('aidc.tenant');
  session.tenant = all.includes(saved) ? saved : (mine[0] || all[0] || null);
}

function dropSession() {
  forgetUploads(); // they were the signed-out user's
  session.me = null;
  session.tenant = null;
  session.tenants = [];
}

// One row when it fits; else (a phone, a narrow window) the menu button and the
// folded panel. Measured rather than guessed by width: the entries depend on the
// roles and the language.
function fitHeader() {
  header.classList.remove('compact');
  header.classList.toggle('compact', header.scrollWidth > header.clientWidth);
}

function closeMenu() {
  panel.classList.remove('open');
  document.getElementById('menu').setAttribute('aria-expanded', 'false');
}

function drawShell(route) {
  const me = session.me;
  const nav = document.getElementById('nav');
  const pick = document.getElementById('tenant-pick');
  const who = document.getElementById('who');
  document.getElementById('logout').hidden = !me;
  document.getElementById('menu').hidden = !me;
  document.getElementById('brand').setAttribute('href', me ? roles.home(me, session.tenant) : '#/login');
  nav.hidden = !me;
  pick.hidden = !me || !(route && route.tenant) || session.tenants.length < 2;
  who.textContent = me ? (me.display_name || me.username) : '';
  who.title = who.textContent; // shortened with an ellipsis when long
  const langButton = document.getElementById('lang');
  langButton.textContent = lang() === 'en' ? '中文' : 'English';
  langButton.setAttribute('lang', lang() === 'en' ? 'zh-CN' : 'en');
  langButton.setAttribute('aria-label', lang() === 'en' ? '切换到中文' : 'Switch to English');
  if (me) {
    clear(nav, h('ul', {}, ROUTES.filter((r) => r.nav && r.allow(me, session.tenant) && !(r.navHide && r.navHide(me))).map((r) =>
      h('li', {}, h('a', { href: `#/${r.path}`, 'aria-current': r === route ? 'page' : null }, t(r.nav))))));
    clear(pick, session.tenants.map((s) => h('option', { value: s, selected: s === session.tenant }, s)));
  }
  fitHeader();
}

async function render() {
  const seq = ++renderSeq;
  for (const fn of cleanups.splice(0)) fn();
  const { route, params, query, empty } = parseHash();
  if (!session.me && !(route && route.public)) {
    try {
      await loadSession();
    } catch (err) {
      if (err.status === 401) return go('#/login');
      // the server is down or overloaded: the session may well be valid
      main.setAttribute('aria-busy', 'false');
      return clear(main, alertBox(t('app.error', { msg: err.message })),
        h('button', { type: 'button', onclick: () => render() }, t('app.retry')));
    }
  }
  if (empty || (route && route.public && session.me)) return go(roles.home(session.me, session.tenant));
  drawShell(route);
  main.setAttribute('aria-busy', 'true');
  closeMenu();
  clear(main, h('p', { class: 'loading' }, t('app.loading')));
  document.title = `${t((route && (route.nav || route.title)) || 'app.not_found')} · aidc`;
  const ctx = {
    main: h('div', { class: 'page' }),
    me: session.me,
    tenant: session.tenant,
    role: session.me ? roles.tenantRole(session.me, session.tenant) : null,
    params, query, go,
    // registered after the user left (a late answer): nothing will call it, so now
    onCleanup: (fn) => (seq === renderSeq ? cleanups.push(fn) : fn()),
    isCurrent: () => seq === renderSeq,
    reloadSession: async () => {
      await loadSession();
      drawShell(route);
      return { me: session.me, tenant: session.tenant };
    },
  };
  try {
    if (!route) throw Object.assign(new Error(t('app.not_found')), { status: 404 });
    if (!route.public && !route.allow(session.me, session.tenant))
      throw Object.assign(new Error(t(session.tenant ? 'app.forbidden' : 'app.no_tenant')), { status: 403 });
    const mod = await import(`./pages/${route.page}.js`);
    await mod.render(ctx);
  } catch (err) {
    if (seq !== renderSeq) return;
    if (err.status === 401) return;  // whenUnauthorized below takes over
    clear(ctx.main, alertBox(err.status === 403 || err.status === 404 ? err.message
      : t('app.error', { msg: err.message })));
  }
  if (seq !== renderSeq) return;
  clear(main, ctx.main);
  main.setAttribute('aria-busy', 'false');
  const heading = main.querySelector('h1');
  if (heading) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: true });
  }
}

function sessionEnded() {
  if (!session.me) return;
  dropSession();
  toast(t('app.session_ended'));
  go('#/login');
}
whenUnauthorized(sessionEnded);

document.getElementById('lang').addEventListener('click', () => {
  toggle();
  render();
});
document.getElementById('logout').addEventListener('click', async () => {
  try {
    await api.post('auth/logout');
  } catch (err) {
    // 401: the session had ended anyway; anything else: the cookie may still be
    // valid, so do not pretend the user is signed out (a shared machine)
    if (err.status !== 401) return toast(t('app.logout_failed', { msg: err.message }));
  }
  dropSession();
  go('#/login?signed_out=1');
});
// In-page anchors (the skip link, tables of contents) move focus to their
// target instead of changing the route.
document.addEventListener('click', (ev) => {
  if (ev.defaultPrevented) return; // a page handled its own anchor
  const a = ev.target.closest && ev.target.closest('a[href^="#"]');
  const href = a && a.getAttribute('href');
  if (!href || href.startsWith('#/') || href === '#') return;
  const target = document.getElementById(decodeURIComponent(href.slice(1)));
  if (!target) return;
  ev.preventDefault();
  if (!target.hasAttribute('tabindex')) target.setAttribute('tabindex', '-1');
  target.focus();
  target.scrollIntoView({ block: 'start' });
});
document.getElementById('tenant-pick').addEventListener('change', (ev) => {
  session.tenant = ev.target.value;
  localStorage.setItem('aidc.tenant', session.tenant);
  render();
});
document.getElementById('menu').addEventListener('click', (ev) => {
  const open = panel.classList.toggle('open');
  ev.target.setAttribute('aria-expanded', String(open));
});
window.addEventListener('resize', fitHeader);
document.fonts.ready.then(fitHeader);
window.addEventListener('hashchange', render);
window.addEventListener('aidc:session', async () => { await loadSession(); render(); });

apply();
render();
