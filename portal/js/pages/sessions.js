// sessions.js - the tenant's interactive sessions (notebooks, web apps): "New notebook"
// on top (sessionform.js), then the list with Open (the owner's, once ready), Stop (after
// a confirmation in the row) and +60 min (a refusal is said in the row). The rows refresh
// every 5 s in place like the jobs list: the focused control keeps its focus, rows added
// with "Load more" stay, an open confirmation or a message stays with its row. Also the
// helpers the session's own page (session.js) shares.
import { api, tpath } from '../api.js';
import { t, has, fmtTime } from '../i18n.js';
import { h, clear, table, badge, field, alertBox, errorText, toast } from '../ui.js';
import { gpuText, reasonText, mayManage, REFRESH_MS } from './jobs.js';
import { newSessionCard } from '../sessionform.js';

export const STATES = ['queued', 'starting', 'ready', 'ended'];
const PAGE = 50;
const EXTEND_MINUTES = 60;

// the page of a session; open: it opens the app as soon as it is ready
export const sessionHref = (id, open) => `#/sessions/${encodeURIComponent(id)}${open ? '?open=1' : ''}`;
export const appText = (app) => (has(`sess.app.${app}`) ? t(`sess.app.${app}`) : String(app || '?'));
// a session has no name of its own: its app and the start of its id
export const sessionName = (s) => t('sess.link', { app: appText(s.app), id: String(s.id).slice(0, 8) });
export const isOwner = (me, s) => s.user === me.username;
export const isEnded = (s) => s.state === 'ended';
export const sessionGpus = (s) => gpuText((s.job && s.job.resources) || { gpus: s.gpus || 0, gpu_type: s.gpu_type });

// Why a session waits or ended, in plain words: its own reasons, else its job's
// (the scheduler's, jobs.js); the server's words where neither knows them.
export function whyText(reason) {
  if (!reason) return '';
  let m = /^idle for (\d+) minutes?$/.exec(reason);
  if (m) return t('sess.why.idle', { n: m[1] });
  m = /^stopped by (\S+)$/.exec(reason);
  if (m) return t('sess.why.stopped_by', { user: m[1] });
  if (/^time limit/.test(reason)) return t('sess.why.time_limit');
  m = /^the app did not answer on its port within (\d+) ?s$/.exec(reason);
  if (m) return t('sess.why.no_answer', { s: m[1] });
  return reasonText(reason);
}

// The queue's words for a waiting session: its place and why it waits.
export function queueText(s) {
  const j = s.job || {};
  const why = whyText(s.reason || j.reason);
  const parts = [];
  if (j.queue_position) parts.push(t('jobs.queue_pos', { n: j.queue_position }));
  if (why) parts.push(why);
  return parts.join(' · ');
}

// Ask the server to add minutes; the answer (the session) or an ApiError.
export const extend = (tenant, id) => api.post(`${tpath(tenant, 'sessions', id)}/extend`, { minutes: EXTEND_MINUTES });
export const stop = (tenant, id) => api.post(`${tpath(tenant, 'sessions', id)}/stop`);

// Swap the table for a new one; the focused control (by its data-focus key) keeps
// the focus when only the rows changed.
function swapTable(slot, next) {
  const had = document.activeElement && slot.contains(document.activeElement)
    ? document.activeElement.dataset.focus : null;
  const oldBody = slot.querySelector('tbody');
  const newBody = next.querySelector && next.querySelector('tbody');
  if (oldBody && newBody) oldBody.replaceWith(newBody);
  else clear(slot, next);
  if (had) {
    const again = slot.querySelector(`[data-focus="${CSS.escape(had)}"]`);
    if (again) again.focus({ preventScroll: true });
  }
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  let stateFilter = STATES.includes(ctx.query.get('state')) ? ctx.query.get('state') : '';

  const card = await newSessionCard(ctx);

  const stateF = field('state', 'job.state', { kind: 'select',
    options: [['', t('sess.any_state')], ...STATES.map((s) => [s, t(`state.${s}`)])] });
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': t('sess.filters'), novalidate: true }, stateF);
  filters.elements.state.value = stateFilter;
  const status = h('div', {});
  const tableSlot = h('div', {});
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('app.more'));

  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('sess.title'), ' · ', tenant)),
    h('p', { class: 'lead' }, t('sess.lead')),
    card,
    h('section', { class: 'card', 'aria-label': t('sess.title') },
      filters, status, tableSlot, h('div', { class: 'actions' }, more)));

  let rows = [];
  let cursor = null;
  let seq = 0;
  let moreSeq = 0;
  let moreBusy = false;
  let shown = '';
  // what each row shows besides its session: {confirm, msg, busy}, kept across refreshes
  const ui = new Map();
  const uiOf = (id) => ui.get(id) || {};
  const setUi = (id, patch) => ui.set(id, { ...uiOf(id), ...patch });

  function actionsCell(s) {
    const u = uiOf(s.id);
    const name = sessionName(s);
    const out = [];
    if (u.confirm) {
      const qid = `sess-stop-q-${s.id}`;
      out.push(h('div', { role: 'group', 'aria-labelledby': qid, class: 'confirm' },
        h('p', { id: qid }, t('sess.stop_q')),
        h('div', { class: 'actions' },
          h('button', { type: 'button', class: 'danger', disabled: !!u.busy, dataset: { focus: `${s.id}:yes` },
            onclick: () => doStop(s) }, t('sess.stop_yes')),
          h('button', { type: 'button', class: 'secondary', dataset: { focus: `${s.id}:no` },
            onclick: () => closeConfirm(s.id) }, t('sess.stop_no')))));
    } else {
      const buttons = [];
      if (s.state === 'ready' && isOwner(ctx.me, s))
        buttons.push(h('a', { class: 'button', href: sessionHref(s.id, true), dataset: { focus: `${s.id}:open` },
          'aria-label': t('sess.open_named', { name }) }, t('sess.open')));
      if (!isEnded(s) && mayManage(ctx.me, tenant, s)) {
        buttons.push(h('button', { type: 'button', class: 'secondary', disabled: !!u.busy, dataset: { focus: `${s.id}:extend` },
          'aria-label': t('sess.extend_named', { name }), onclick: () => doExtend(s) }, t('sess.extend')));
        buttons.push(h('button', { type: 'button', class: 'secondary', dataset: { focus: `${s.id}:stop` },
          'aria-label': t('sess.stop_named', { name }), onclick: () => openConfirm(s.id) }, t('sess.stop')));
      }
      out.push(buttons.length ? h('div', { class: 'actions' }, buttons) : '—');
    }
    if (u.msg) out.push(h('p', { class: u.ok ? 'hint' : 'field-error', role: u.ok ? 'status' : 'alert' }, u.msg));
    return h('div', {}, out);
  }

  function untilCell(s) {
    if (isEnded(s)) {
      const at = (s.job && s.job.finished_at) || s.ended_at;
      return at ? t('sess.ended_at', { ts: fmtTime(at) }) : '—';
    }
    // one box: a phone's folded cell is a grid of label and content
    return h('span', {}, s.expires_at ? t('sess.expires', { ts: fmtTime(s.expires_at) }) : '—',
      s.idle_minutes ? [h('br'), h('small', { class: 'hint' }, t('sess.idle_note', { n: s.idle_minutes }))] : null);
  }

  function reasonCell(s) {
    if (s.state === 'queued') return queueText(s) || '—';
    if (isEnded(s)) return whyText(s.reason) || '—';
    return '—';
  }

  function sessionsTable() {
    return table([
      { label: t('sess.col.session'), render: (s) => h('a', { href: sessionHref(s.id), dataset: { focus: `${s.id}:link` } }, sessionName(s)) },
      { label: t('job.state'), render: (s) => badge(s.state) },
      { label: t('job.project'), key: 'project' },
      { label: t('job.user'), key: 'user' },
      { label: t('job.gpus'), render: sessionGpus },
      { label: t('sess.col.until'), render: untilCell },
      { label: t('job.reason'), render: reasonCell },
      { label: t('app.actions'), render: actionsCell },
    ], rows, { caption: t('sess.title'), empty: stateFilter ? 'sess.empty_filtered' : 'sess.empty' });
  }

  function draw() {
    more.hidden = !cursor;
    const sig = JSON.stringify([rows, [...ui], !!cursor, stateFilter]);
    if (sig === shown) return;
    shown = sig;
    swapTable(tableSlot, sessionsTable());
  }

  // one session changed here (an action's answer): in its row at once
  function put(s) {
    rows = rows.map((r) => (r.id === s.id ? s : r));
    seq++; // a refresh in flight read the list before this change
  }

  const query = (extra) => ({ state: stateFilter || undefined, ...extra });

  async function load({ keep = false } = {}) {
    const mine = ++seq;
    const limit = keep ? Math.min(1000, Math.max(PAGE, rows.length)) : PAGE;
    try {
      const page = await api.get(tpath(tenant, 'sessions'), query({ limit }));
      if (mine !== seq || !ctx.isCurrent()) return;
      // a row's "stopping" or "extended" note is old news once its state moved on
      const before = new Map(rows.map((r) => [r.id, r.state]));
      for (const r of page.items)
        if (before.has(r.id) && before.get(r.id) !== r.state && uiOf(r.id).ok) setUi(r.id, { msg: '' });
      rows = page.items;
      cursor = page.next_cursor;
      clear(status);
      draw();
    } catch (err) {
      if (mine !== seq || !ctx.isCurrent()) return;
      if (keep) clear(status, alertBox(t('sess.refresh_failed', { msg: errorText(err) })));
      else throw err;
    }
  }

  // the next page below the rows shown (as jobs.js: a refresh meanwhile is dropped)
  async function loadMore() {
    if (!cursor || moreBusy) return;
    const mine = ++moreSeq;
    moreBusy = true;
    seq++;
    more.setAttribute('aria-disabled', 'true');
    try {
      const page = await api.get(tpath(tenant, 'sessions'), query({ limit: PAGE, cursor }));
      if (mine !== moreSeq || !ctx.isCurrent()) return;
      const have = new Set(rows.map((r) => r.id));
      const added = page.items.filter((r) => !have.has(r.id));
      rows = rows.concat(added);
      cursor = page.next_cursor;
      clear(status);
      const hadFocus = document.activeElement === more;
      draw();
      if (hadFocus && more.hidden) {
        const to = (added.length && tableSlot.querySelector(`[data-focus="${CSS.escape(`${added[0].id}:link`)}"]`))
          || [...tableSlot.querySelectorAll('tbody a')].pop();
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

  const focusKey = (key) => {
    const el = tableSlot.querySelector(`[data-focus="${CSS.escape(key)}"]`);
    if (el) el.focus();
  };

  function openConfirm(id) {
    setUi(id, { confirm: true, msg: '' });
    draw();
    // "keep" first: Enter right after "Stop" must not stop it
    focusKey(`${id}:no`);
  }

  function closeConfirm(id) {
    setUi(id, { confirm: false });
    draw();
    focusKey(`${id}:stop`);
  }

  async function doStop(s) {
    setUi(s.id, { busy: true });
    draw();
    try {
      const answer = await stop(tenant, s.id);
      if (!ctx.isCurrent()) return;
      if (answer && answer.id) put(answer);
      setUi(s.id, { confirm: false, busy: false, msg: t('sess.stop_sent'), ok: true });
      toast(t('sess.stop_sent'));
      draw();
      focusKey(`${s.id}:link`);
    } catch (err) {
      if (!ctx.isCurrent()) return;
      setUi(s.id, { confirm: false, busy: false, msg: errorText(err), ok: false });
      draw();
      focusKey(`${s.id}:link`);
    }
  }

  async function doExtend(s) {
    setUi(s.id, { busy: true, msg: '' });
    draw();
    try {
      const answer = await extend(tenant, s.id);
      if (!ctx.isCurrent()) return;
      put(answer);
      setUi(s.id, { busy: false, msg: t('sess.extended', { ts: fmtTime(answer.expires_at) }), ok: true });
    } catch (err) {
      if (!ctx.isCurrent()) return;
      setUi(s.id, { busy: false, msg: errorText(err), ok: false });
    }
    draw();
    focusKey(`${s.id}:extend`);
  }

  filters.addEventListener('submit', (ev) => ev.preventDefault());
  filters.elements.state.addEventListener('change', async () => {
    stateFilter = filters.elements.state.value;
    history.replaceState(null, '', `#/sessions${stateFilter ? `?state=${stateFilter}` : ''}`);
    moreSeq++;
    moreBusy = false;
    more.removeAttribute('aria-disabled');
    cursor = null;
    try {
      await load();
    } catch (err) {
      clear(status, alertBox(err));
    }
  });
  more.addEventListener('click', loadMore);

  await load();

  const timer = setInterval(() => {
    if (document.hidden || !ctx.isCurrent() || moreBusy) return;
    load({ keep: true });
  }, REFRESH_MS);
  ctx.onCleanup(() => clearInterval(timer));
}
