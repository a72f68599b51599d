// jobs.js - the tenant's jobs: filters kept in the hash (#/jobs?state=&project=&user=)
// so a link keeps them, "load more" with the API's cursor, and the rows refreshed
// every 5 s in place (the filters keep focus and input). Also the helpers the job
// pages share: what a state or a reason means in plain words.
import { api, tpath } from '../api.js';
import { t, fmtTime } from '../i18n.js';
import { h, clear, table, badge, field, alertBox, errorText } from '../ui.js';
import { canSubmit, tenantRole, ownJobsOnly } from '../roles.js';

export const STATES = ['queued', 'admitted', 'pending', 'running', 'succeeded', 'failed', 'cancelled', 'preempted'];
export const FINISHED = ['succeeded', 'failed', 'cancelled'];
export const REFRESH_MS = 5000;
const PAGE = 50;
const USER_RE = /^[a-z][a-z0-9._-]{0,62}$/;
// a tenant's or project's slug, a job's id: what a link (#/jobs/:tenant/:id) may name
export const SLUG_RE = /^[a-z][a-z0-9-]{1,62}$/;
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

// the page of a job
export const jobHref = (tenant, id) => `#/jobs/${encodeURIComponent(tenant)}/${encodeURIComponent(id)}`;

export const isFinished = (job) => FINISHED.includes(job.state);

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
  // a hand-edited link must not make the list fail: drop what the API would refuse
  if (!STATES.includes(filters.state)) filters.state = '';
  if (!SLUG_RE.test(filters.project)) filters.project = '';
  if (filters.user && !USER_RE.test(filters.user)) filters.user = '';

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
  const form = h('form', { class: 'filters', role: 'search', 'aria-label': t('jobs.filters'), novalidate: true },
    stateField, projectField, userField, usersList,
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, t('jobs.apply')),
      member && !ownOnly ? h('button', { type: 'button', class: 'secondary', onclick: () => setUser(ctx.me.username) }, t('jobs.only_mine')) : null,
      ownOnly ? null : h('button', { type: 'button', class: 'secondary', onclick: () => setUser('') }, t('jobs.everyones'))));
  const F = form.elements;
  F.state.value = filters.state;
  F.project.value = filters.project;
  F.user.value = filters.user;

  const summary = h('p', { class: 'lead' });
  const tableSlot = h('div', {});
  const status = h('div', {});
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('app.more'));
  const actions = h('div', { class: 'actions' }, more);

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

  const query = (extra) => ({
    state: filters.state || undefined, project: filters.project || undefined,
    user: filters.user || undefined, ...extra,
  });

  function summaryText() {
    const parts = [];
    if (filters.state) parts.push(t(`state.${filters.state}`));
    if (filters.project) parts.push(t('jobs.of_project', { p: filters.project }));
    parts.push(filters.user ? t('jobs.of_user', { u: filters.user }) : t('jobs.of_everyone'));
    return t('jobs.showing', { what: parts.join(', ') });
  }

  function draw() {
    const sig = JSON.stringify([rows, !!cursor]);
    more.hidden = !cursor;
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
    more.setAttribute('aria-disabled', 'true');
    try {
      const page = await api.get(tpath(tenant, 'jobs'), query({ limit: PAGE, cursor }));
      if (mine !== moreSeq || !ctx.isCurrent()) return;
      const have = new Set(rows.map((r) => r.id));
      const added = page.items.filter((r) => !have.has(r.id));
      rows = rows.concat(added);
      cursor = page.next_cursor;
      clear(status);
      const hadFocus = document.activeElement === more;
      draw();
      if (hadFocus && more.hidden) {
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
        more.removeAttribute('aria-disabled');
      }
    }
  }

  function writeHash() {
    const qs = new URLSearchParams();
    if (filters.state) qs.set('state', filters.state);
    if (filters.project) qs.set('project', filters.project);
    // members: the default is their own jobs, so "everyone" must be said
    if (filters.user || member) qs.set('user', filters.user);
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
    writeHash();
    // the cursor and a "load more" in flight belong to the old choice
    moreSeq++;
    moreBusy = false;
    more.removeAttribute('aria-disabled');
    cursor = null;
    more.hidden = true;
    try {
      await load();
    } catch (err) {
      clear(status, alertBox(err));
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
  more.addEventListener('click', loadMore);

  await load();

  const timer = setInterval(() => {
    if (document.hidden || !ctx.isCurrent() || moreBusy) return;
    load({ keep: true });
  }, REFRESH_MS);
  ctx.onCleanup(() => clearInterval(timer));
}
