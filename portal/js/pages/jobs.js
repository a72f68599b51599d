// jobs.js - the tenant's jobs as a history, like sacct: filters kept in the hash
// (#/jobs?state=&project=&user=&name=&gpu_type=&exit_code=&from=&to=&ended_from=&ended_to=
// &sort=&order=) so a link keeps them, "load more" with the API's cursor, each row's
// wait and run time, a CSV export of every page, and the rows refreshed every 5 s in
// place (the filters keep focus and input). Also the helpers the job pages share:
// what a state or a reason means in plain words, how long something took.
import { api, tpath } from '../api.js';
import { t, fmtTime, fmtNum } from '../i18n.js';
import { h, clear, table, badge, field, alertBox, errorText, download, toast } from '../ui.js';
import { canSubmit, tenantRole, ownJobsOnly } from '../roles.js';
import { arrayProgress } from './jobarray.js';

export const STATES = ['queued', 'admitted', 'pending', 'running', 'succeeded', 'failed', 'cancelled', 'preempted'];
export const FINISHED = ['succeeded', 'failed', 'cancelled'];
export const REFRESH_MS = 5000;
const PAGE = 50;
const CSV_PAGE = 1000;
const CSV_MAX = 100000; // rows of one export: beyond that, narrow the filters
export const SORTS = ['submitted', 'started', 'ended', 'wait', 'runtime'];
const GPU_TYPE_RE = /^[a-z0-9][a-z0-9._-]{0,31}$/;
const DAY_RE = /^\d{4}-\d\d-\d\d$/;
const USER_RE = /^[a-z][a-z0-9._-]{0,62}$/;
// a tenant's or project's slug, a job's id: what a link (#/jobs/:tenant/:id) may name
export const SLUG_RE = /^[a-z][a-z0-9-]{1,62}$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// the page of a job
export const jobHref = (tenant, id) => `#/jobs/${encodeURIComponent(tenant)}/${encodeURIComponent(id)}`;

export const isFinished = (job) => FINISHED.includes(job.state);

// "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h"; wholeSeconds: the times it comes from
// have no fraction (the local executor's), so 0 means "under a second", not zero
export function durationText(seconds, wholeSeconds = true) {
  if (seconds === null || seconds === undefined) return '—';
  if (!wholeSeconds && seconds < 10) {
    const tenths = Math.round(Math.max(0, seconds) * 10) / 10;
    return tenths ? t('jobs.dur.s', { s: fmtNum(tenths, 1) }) : t('jobs.dur.under', { s: fmtNum(0.1, 1) });
  }
  const s = Math.max(0, Math.round(seconds));
  if (s === 0) return t('jobs.dur.under', { s: 1 });
  if (s < 60) return t('jobs.dur.s', { s });
  if (s < 3600) return t('jobs.dur.ms', { m: Math.floor(s / 60), s: s % 60 });
  if (s < 86400) return t('jobs.dur.hm', { h: Math.floor(s / 3600), m: Math.floor((s % 3600) / 60) });
  return t('jobs.dur.dh', { d: Math.floor(s / 86400), h: Math.floor((s % 86400) / 3600) });
}

// a day of the date input (the reader's own midnight) as the API's RFC 3339 instant;
// next: the midnight after it (an inclusive "to" day)
function dayStart(day, next = false) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d + (next ? 1 : 0)).toISOString();
}

// "2 × a100" / "CPU only"; with nodes: "2 × a100 × 3 nodes"
export function gpuText(r) {
  if (!r) return '—';
  const base = r.gpus > 0 ? `${r.gpus} × ${r.gpu_type || '?'}` : t('jobs.cpu_only');
  return r.nodes > 1 ? t('jobs.per_node', { what: base, n: r.nodes }) : base;
}

// "gpu:a100" -> "a100 GPUs"; "cpu" -> "CPU cores"; "memory_gib" -> "memory"
export function resourceText(what) {
  if (!what) return '';
  if (what.startsWith('gpu:')) return t('jobs.res.gpu', { type: what.slice(4) });
  if (what === 'cpu') return t('jobs.res.cpu');
  if (what === 'memory_gib') return t('jobs.res.memory');
  if (what === 'jobs') return t('jobs.res.jobs');
  return what;
}

// what the server writes into the history, in the reader's language
const EVENTS = {
  started: 'jobs.ev.started',
  'within quota': 'jobs.ev.within_quota',
  'borrowing idle GPUs (preemptible)': 'jobs.ev.borrowing',
  'handed to the cluster': 'jobs.ev.handed',
  'preemption requested': 'jobs.ev.preemption_requested',
  'requeued after preemption': 'jobs.ev.requeued_preemption',
  'requeued by the cluster': 'jobs.ev.requeued_cluster',
  'requeued: preempted before it started': 'jobs.ev.requeued_early',
  cancelled: 'jobs.ev.cancelled',
};

// The scheduler's reason in plain words (the raw reason stays visible elsewhere).
export function reasonText(reason) {
  if (!reason) return '';
  let m = /^preemption requested by job (\S+) of tenant (\S+)/.exec(reason);
  if (m) return t('jobs.why.preempting', { job: m[1].slice(0, 8), tenant: m[2] });
  m = /^preempted by job (\S+) of tenant (\S+)/.exec(reason);
  if (m) return t('jobs.why.preempted_by', { job: m[1].slice(0, 8), tenant: m[2] });
  m = /^cancelled by (\S+)/.exec(reason);
  if (m) return t('jobs.why.cancelled_by', { user: m[1] });
  m = /^cancel requested by (\S+)/.exec(reason);
  if (m) return t('jobs.why.cancel_requested', { user: m[1] });
  m = /^exit code (-?\d+)$/.exec(reason);
  if (m) return t('jobs.why.exit_code', { code: m[1] });
  if (reason.startsWith('time limit')) return t('jobs.why.time_limit');
  if (reason === 'out of memory') return t('jobs.why.oom');
  m = /^pulling image (.+)$/.exec(reason);
  if (m) return t('jobs.why.pulling', { image: m[1] });
  m = /^image pull failed: (.+)$/.exec(reason);
  if (m) return t('jobs.why.pull_failed', { why: m[1] });
  m = /^cannot run (.+)$/.exec(reason);
  if (m) return t('jobs.why.cannot_run', { what: m[1] });
  m = /^the sandbox could not start: (.+)$/.exec(reason);
  if (m) return t('jobs.why.sandbox_failed', { why: m[1] });
  if (reason in EVENTS) return t(EVENTS[reason]);
  m = /^(quota|project-quota|capacity|reclaim|starvation-hold):(.+)$/.exec(reason);
  if (m) return t(`jobs.why.${m[1].replace(/-/g, '_')}`, { what: resourceText(m[2]) });
  m = /^budget:project:(.+)$/.exec(reason);
  if (m) return t('jobs.why.budget_project', { project: m[1] });
  if (reason === 'budget:tenant') return t('jobs.why.budget');
  if (reason === 'allocation:expired') return t('jobs.why.allocation_expired');
  if (reason === 'allocation:gpu_hours') return t('jobs.why.allocation_gpu_hours');
  m = /^dependency(_failed)?:(\S+)$/.exec(reason);
  if (m) return t(m[1] ? 'jobs.why.dependency_failed' : 'jobs.why.dependency', { job: m[2].slice(0, 8) });
  if (reason === 'array:max_parallel') return t('jobs.why.array_max_parallel');
  if (reason === 'array') return t('jobs.why.array');
  const known = ['budget', 'tenant-suspended', 'cluster-down', 'no-cluster-fits', 'preempted',
    'backend-unavailable', 'submitted'];
  if (known.includes(reason)) return t(`jobs.why.${reason.replace(/-/g, '_')}`);
  return reason;
}

// Who may do what with a job (mirrors api/jobs.c sees_all and the routes' roles).
export function mayManage(me, tenant, job) {
  if (me.roles.includes('platform_admin')) return true;
  const role = tenantRole(me, tenant);
  return role === 'tenant_admin' || (role === 'member' && job.user === me.username);
}

function stateCell(j) {
  const parts = [badge(j.state)];
  if (j.preemptible && !isFinished(j)) parts.push(' ', h('span', { class: 'badge' }, t('jobs.borrowed')));
  if (j.preemption_count > 0) parts.push(' ', h('span', { class: 'badge' }, t('jobs.preempted_n', { n: j.preemption_count })));
  if (j.array) parts.push(' ', h('span', { class: 'badge' }, arrayProgress(j)));
  return h('span', {}, parts); // one box: phones' folded cells would stretch a lone badge
}

function reasonCell(j) {
  if (j.state === 'queued' && j.queue_position)
    return [t('jobs.queue_pos', { n: j.queue_position }), j.reason ? ` · ${reasonText(j.reason)}` : ''];
  return j.reason ? reasonText(j.reason) : '—';
}

function jobsTable(rows, caption) {
  return table([
    { label: t('job.name'), render: (j) => h('a', { href: jobHref(j.tenant, j.id) }, j.name || j.id.slice(0, 8)) },
    { label: t('job.state'), render: stateCell },
    { label: t('job.project'), key: 'project' },
    { label: t('job.user'), key: 'user' },
    { label: t('job.gpus'), render: (j) => gpuText(j.resources) },
    { label: t('job.reason'), render: reasonCell },
    { label: t('job.submitted'), render: (j) => fmtTime(j.submitted_at) },
    { label: t('jobs.waited'), render: (j) => durationText(j.wait_seconds) },
    { label: t('jobs.ran'), render: (j) => durationText(j.run_seconds) },
    { label: t('jobs.p.exit_code'), render: (j) => (j.exit_code === null || j.exit_code === undefined ? '—' : String(j.exit_code)) },
  ], rows, { caption, empty: 'jobs.empty' });
}

// Swap the table for a new one; keep the focused link (by href) and the wrapper
// when only the rows changed.
function swapTable(slot, next) {
  const old = slot.firstElementChild;
  const focused = document.activeElement && slot.contains(document.activeElement)
    ? document.activeElement.getAttribute('href') : null;
  const oldBody = old && old.querySelector('tbody');
  const newBody = next.querySelector && next.querySelector('tbody');
  if (oldBody && newBody) oldBody.replaceWith(newBody);
  else clear(slot, next);
  if (focused) {
    const again = [...slot.querySelectorAll('a')].find((a) => a.getAttribute('href') === focused);
    if (again) again.focus({ preventScroll: true });
  }
}

// the history's filters beyond state, project and user: hash key -> whether a value is usable
const MORE_OK = {
  name: (v) => v.length <= 200 && !/[\x00-\x1f\x7f]/.test(v),
  gpu_type: (v) => GPU_TYPE_RE.test(v),
  exit_code: (v) => /^-?\d{1,9}$/.test(v),
  from: (v) => DAY_RE.test(v),
  to: (v) => DAY_RE.test(v),
  ended_from: (v) => DAY_RE.test(v),
  ended_to: (v) => DAY_RE.test(v),
  sort: (v) => SORTS.includes(v),
  order: (v) => v === 'asc' || v === 'desc',
};
const MORE = Object.keys(MORE_OK);

// the filters as the API's query
function apiQuery(f) {
  const q = {
    state: f.state || undefined, project: f.project || undefined, user: f.user || undefined,
    name: f.name || undefined, gpu_type: f.gpu_type || undefined, exit_code: f.exit_code || undefined,
    sort: f.sort && f.sort !== 'submitted' ? f.sort : undefined,
    order: f.order === 'asc' ? 'asc' : undefined,
  };
  if (f.from) q.submitted_from = dayStart(f.from);
  if (f.to) q.submitted_to = dayStart(f.to, true);
  if (f.ended_from) q.ended_from = dayStart(f.ended_from);
  if (f.ended_to) q.ended_to = dayStart(f.ended_to, true);
  return q;
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  const q = ctx.query;
  const member = tenantRole(ctx.me, tenant) === 'member';
  // a member of a tenant that does not share jobs reads only its own: no one
  // else to filter for
  const ownOnly = ownJobsOnly(ctx.me, tenant);
  // members default to their own jobs (their dashboard's view); an explicit
  // "user=" in the link (empty) means everyone's
  const filters = {
    state: q.get('state') || '',
    project: q.get('project') || '',
    user: ownOnly ? ctx.me.username : q.has('user') ? q.get('user') : (member ? ctx.me.username : ''),
  };
  for (const k of MORE) filters[k] = q.get(k) || '';
  // a hand-edited link must not make the list fail: drop what the API would refuse
  if (!STATES.includes(filters.state)) filters.state = '';
  if (!SLUG_RE.test(filters.project)) filters.project = '';
  if (filters.user && !USER_RE.test(filters.user)) filters.user = '';
  for (const k of MORE) if (!MORE_OK[k](filters[k])) filters[k] = '';

  const [projects, members] = await Promise.all([
    api.all(tpath(tenant, 'projects')),
    api.all(tpath(tenant, 'members')),
  ]);

  const stateField = field('state', 'job.state', { kind: 'select',
    options: [['', t('jobs.any_state')], ...STATES.map((s) => [s, t(`state.${s}`)])] });
  const projectField = field('project', 'job.project', { kind: 'select',
    options: [['', t('jobs.any_project')], ...projects.map((p) => [p.slug, p.name && p.name !== p.slug ? `${p.slug} (${p.name})` : p.slug])] });
  const usersList = h('datalist', { id: 'jobs-users' }, members.map((m) => h('option', { value: m.username })));
  const userField = field('user', 'job.user', { list: 'jobs-users', autocomplete: 'off', spellcheck: 'false',
    autocapitalize: 'none', placeholder: t('jobs.everyone'), hint: t('jobs.user_hint') });
  if (ownOnly) userField.hidden = true;
  const more = {
    name: field('name', 'jobs.hf.name', { maxlength: 200, autocomplete: 'off', spellcheck: 'false', hint: t('jobs.hf.name_hint') }),
    gpu_type: field('gpu_type', 'jobs.hf.gpu_type', { maxlength: 32, autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none' }),
    exit_code: field('exit_code', 'jobs.p.exit_code', { inputmode: 'numeric', autocomplete: 'off' }),
    from: field('from', 'jobs.hf.from', { type: 'date' }),
    to: field('to', 'jobs.hf.to', { type: 'date' }),
    ended_from: field('ended_from', 'jobs.hf.ended_from', { type: 'date' }),
    ended_to: field('ended_to', 'jobs.hf.ended_to', { type: 'date' }),
    sort: field('sort', 'jobs.hf.sort', { kind: 'select', options: SORTS.map((k) => [k, t(`jobs.sort.${k}`)]) }),
    order: field('order', 'jobs.hf.order', { kind: 'select', options: [['desc', t('jobs.order.desc')], ['asc', t('jobs.order.asc')]] }),
  };
  const moreBox = h('details', { class: 'more-filters', open: MORE.some((k) => filters[k] && !(k === 'sort' && filters[k] === 'submitted') && !(k === 'order' && filters[k] === 'desc')) || undefined },
    h('summary', {}, t('jobs.more_filters')),
    h('div', { class: 'filters' }, ...MORE.map((k) => more[k])));
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': t('jobs.filters'), novalidate: true },
    stateField, projectField, userField, usersList, moreBox,
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, t('jobs.apply')),
      member && !ownOnly ? h('button', { type: 'button', class: 'secondary', onclick: () => setUser(ctx.me.username) }, t('jobs.only_mine')) : null,
      ownOnly ? null : h('button', { type: 'button', class: 'secondary', onclick: () => setUser('') }, t('jobs.everyones'))));
  const F = form.elements;
  F.state.value = filters.state;
  F.project.value = filters.project;
  F.user.value = filters.user;
  for (const k of MORE) F[k].value = filters[k] || (k === 'sort' ? 'submitted' : k === 'order' ? 'desc' : '');

  const summary = h('p', { class: 'lead' });
  const tableSlot = h('div', {});
  const status = h('div', {});
  const moreRows = h('button', { type: 'button', class: 'secondary', hidden: true }, t('app.more'));
  const csvButton = h('button', { type: 'button', class: 'secondary' }, t('jobs.export_csv'));
  const actions = h('div', { class: 'actions' }, moreRows, csvButton);

  ctx.main.append(
    h('div', { class: 'page-head' },
      h('h1', {}, t('jobs.title'), ' · ', tenant),
      canSubmit(ctx.me, tenant) ? h('a', { class: 'button', href: '#/jobs/new' }, t('dash.submit')) : null),
    h('p', { class: 'lead' }, t(ownOnly ? 'jobs.lead_own' : 'jobs.lead')),
    h('section', { class: 'card', 'aria-label': t('jobs.title') }, form, summary, status, tableSlot, actions));

  let rows = [];
  let cursor = null;
  let seq = 0;     // answers of older filter choices (and of refreshes overtaken) are dropped
  let moreSeq = 0; // the "load more" in flight; a filter change drops its answer
  let moreBusy = false; // the refresh pauses meanwhile (its answer would lose the added rows)
  let shown = '';  // what the table shows, to touch the DOM only on a change

  const query = (extra) => ({ ...apiQuery(filters), ...extra });

  function summaryText() {
    const parts = [];
    if (filters.state) parts.push(t(`state.${filters.state}`));
    if (filters.project) parts.push(t('jobs.of_project', { p: filters.project }));
    parts.push(filters.user ? t('jobs.of_user', { u: filters.user }) : t('jobs.of_everyone'));
    if (filters.name) parts.push(t('jobs.of_name', { n: filters.name }));
    if (filters.gpu_type) parts.push(filters.gpu_type);
    if (filters.exit_code) parts.push(t('jobs.why.exit_code', { code: filters.exit_code }));
    if (filters.from || filters.to) parts.push(t('jobs.submitted_between', { from: filters.from || '…', to: filters.to || '…' }));
    if (filters.ended_from || filters.ended_to) parts.push(t('jobs.ended_between', { from: filters.ended_from || '…', to: filters.ended_to || '…' }));
    if (filters.sort && filters.sort !== 'submitted') parts.push(t('jobs.sorted_by', { by: t(`jobs.sort.${filters.sort}`) }));
    return t('jobs.showing', { what: parts.join(', ') });
  }

  function draw() {
    const sig = JSON.stringify([rows, !!cursor]);
    moreRows.hidden = !cursor;
    const said = summaryText();
    if (summary.textContent !== said) summary.textContent = said;
    if (sig === shown) return;
    shown = sig;
    swapTable(tableSlot, jobsTable(rows, t('jobs.title')));
  }

  async function load({ keep = false } = {}) {
    const mine = ++seq;
    const limit = keep ? Math.min(1000, Math.max(PAGE, rows.length)) : PAGE;
    try {
      const page = await api.get(tpath(tenant, 'jobs'), query({ limit }));
      if (mine !== seq || !ctx.isCurrent()) return;
      rows = page.items;
      cursor = page.next_cursor;
      clear(status);
      draw();
    } catch (err) {
      if (mine !== seq || !ctx.isCurrent()) return;
      if (keep) clear(status, alertBox(t('jobs.refresh_failed', { msg: errorText(err) })));
      else throw err;
    }
  }

  // The next page below the rows shown. A refresh in flight (with the old number of
  // rows) is dropped and the next ones wait, so they cannot take the added rows away.
  // The button stays focusable while it loads (aria-disabled, not disabled: Chromium
  // drops focus from a disabled button); when it disappears (nothing more), focus goes
  // to the first added row.
  async function loadMore() {
    if (!cursor || moreBusy) return;
    const mine = ++moreSeq;
    moreBusy = true;
    seq++;
    moreRows.setAttribute('aria-disabled', 'true');
    try {
      const page = await api.get(tpath(tenant, 'jobs'), query({ limit: PAGE, cursor }));
      if (mine !== moreSeq || !ctx.isCurrent()) return;
      const have = new Set(rows.map((r) => r.id));
      const added = page.items.filter((r) => !have.has(r.id));
      rows = rows.concat(added);
      cursor = page.next_cursor;
      clear(status);
      const hadFocus = document.activeElement === moreRows;
      draw();
      if (hadFocus && moreRows.hidden) {
        const links = [...tableSlot.querySelectorAll('tbody a')];
        const href = added.length ? jobHref(added[0].tenant, added[0].id) : null;
        const to = links.find((a) => a.getAttribute('href') === href) || links[links.length - 1];
        if (to) to.focus();
      }
    } catch (err) {
      if (mine === moreSeq && ctx.isCurrent()) clear(status, alertBox(err));
    } finally {
      if (mine === moreSeq) {
        moreBusy = false;
        moreRows.removeAttribute('aria-disabled');
      }
    }
  }

  function writeHash() {
    const qs = new URLSearchParams();
    if (filters.state) qs.set('state', filters.state);
    if (filters.project) qs.set('project', filters.project);
    // members: the default is their own jobs, so "everyone" must be said
    if (filters.user || member) qs.set('user', filters.user);
    for (const k of MORE) if (filters[k]) qs.set(k, filters[k]);
    const s = qs.toString();
    history.replaceState(null, '', `#/jobs${s ? `?${s}` : ''}`);
  }

  async function apply() {
    const user = F.user.value.trim().toLowerCase();
    const slot = userField.querySelector('.field-error');
    if (user && !USER_RE.test(user)) {
      slot.textContent = t('jobs.bad_user');
      F.user.setAttribute('aria-invalid', 'true');
      return;
    }
    slot.textContent = '';
    F.user.removeAttribute('aria-invalid');
    filters.state = F.state.value;
    filters.project = F.project.value;
    filters.user = user;
    for (const k of MORE) {
      const v = F[k].value.trim();
      filters[k] = MORE_OK[k](v) ? v : '';
    }
    if (filters.sort === 'submitted') filters.sort = '';
    if (filters.order === 'desc') filters.order = '';
    writeHash();
    // the cursor and a "load more" in flight belong to the old choice
    moreSeq++;
    moreBusy = false;
    moreRows.removeAttribute('aria-disabled');
    cursor = null;
    moreRows.hidden = true;
    try {
      await load();
    } catch (err) {
      clear(status, alertBox(err));
    }
  }

  // Every page of the filtered history as one CSV file (the API's pages, header once).
  async function exportCsv() {
    if (csvButton.getAttribute('aria-disabled')) return;
    csvButton.setAttribute('aria-disabled', 'true');
    const label = csvButton.textContent;
    let text = '';
    let rows = 0;
    let next = null;
    try {
      do {
        const res = await api.text(tpath(tenant, 'jobs'), query({ limit: CSV_PAGE, cursor: next || undefined, format: 'csv' }));
        const body = res.text;
        const lines = body.split('\r\n').filter((l) => l !== '');
        text += next ? body.slice(body.indexOf('\r\n') + 2) : body;
        rows += Math.max(0, lines.length - 1);
        next = res.next;
        csvButton.textContent = t('jobs.exporting', { n: rows });
      } while (next && rows < CSV_MAX && ctx.isCurrent());
      if (!ctx.isCurrent()) return;
      download(`jobs-${tenant}.csv`, text, 'text/csv');
      toast(t(next ? 'jobs.exported_capped' : 'jobs.exported', { n: rows }));
    } catch (err) {
      toast(errorText(err));
    } finally {
      csvButton.textContent = label;
      csvButton.removeAttribute('aria-disabled');
    }
  }

  function setUser(u) {
    F.user.value = u;
    apply();
  }

  form.addEventListener('submit', (ev) => { ev.preventDefault(); apply(); });
  F.state.addEventListener('change', apply);
  F.project.addEventListener('change', apply);
  F.user.addEventListener('change', apply);
  for (const k of ['sort', 'order', 'from', 'to', 'ended_from', 'ended_to']) F[k].addEventListener('change', apply);
  moreRows.addEventListener('click', loadMore);
  csvButton.addEventListener('click', exportCsv);

  await load();

  const timer = setInterval(() => {
    if (document.hidden || !ctx.isCurrent() || moreBusy) return;
    load({ keep: true });
  }, REFRESH_MS);
  ctx.onCleanup(() => clearInterval(timer));
}
