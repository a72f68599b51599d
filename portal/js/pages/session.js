// session.js - one interactive session, the page to connect to it (#/sessions/<id>): its
// way from the queue (place, reason, estimate) through "starting" to "ready", said in a
// live region as it moves; once ready, "Open" (its owner's): POST open gives a single-use
// link on the sessions origin, and the browser goes there (the app's origin sets its own
// cookie and shows the app). #/sessions/<id>?open=1 (where "New notebook" and the list's
// Open lead) does that by itself as soon as the session is ready. Stop (confirmed first)
// and +60 min here too; an ended session says why and links to its job (the logs).
// Polled every 2 s until ready, then every 10 s, not at all once ended.
import { api, tpath } from '../api.js';
import { t, fmtTime, fmtNum } from '../i18n.js';
import { h, clear, badge, alertBox, errorText, toast } from '../ui.js';
import { UUID_RE, jobHref, mayManage } from './jobs.js';
import { sessionHref, appText, sessionName, isOwner, isEnded, sessionGpus, whyText, extend, stop } from './sessions.js';

const FAST_MS = 2000;  // while it starts: the user waits for this page
const SLOW_MS = 10000; // ready: only the idle clock and the end change
const STEPS = ['queued', 'starting', 'ready'];

function noSuchSession(ctx) {
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('sess.no_such'))),
    alertBox(t('sess.no_such_explain')),
    h('div', { class: 'actions' }, h('a', { class: 'button secondary', href: '#/sessions' }, t('sess.back'))));
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  const id = ctx.params.id;
  if (!UUID_RE.test(id || '')) return noSuchSession(ctx);
  const path = tpath(tenant, 'sessions', id);
  let s = await api.get(path);
  let autoOpen = ctx.query.get('open') === '1';
  const owner = isOwner(ctx.me, s);
  const manage = mayManage(ctx.me, tenant, s);

  // one refresh at a time; gen drops an answer read before an action here changed s
  let running = null;
  let gen = 0;
  let last = 0;
  let refreshFailed = false;
  const drawn = {};
  const changed = (part, data) => {
    const sig = JSON.stringify(data);
    if (drawn[part] === sig) return false;
    drawn[part] = sig;
    return true;
  };

  // --- parts -----------------------------------------------------------------------
  const title = h('h1', {}, t('sess.page_title', { app: appText(s.app), project: s.project }));
  const stateLine = h('p', { id: 'session-state' });
  const steps = h('ol', { class: 'steps', 'aria-label': t('sess.progress') });
  // what is happening, in words: read out when it changes
  const statusSlot = h('div', { id: 'session-status', role: 'status', 'aria-live': 'polite' });
  const actionMsg = h('div', { 'aria-live': 'polite' });
  let stopNote = null; // the note Stop left in actionMsg
  const propsSlot = h('div', {});

  const openBtn = h('button', { type: 'button', class: 'primary', hidden: true }, t('sess.open'));
  const extendBtn = h('button', { type: 'button', class: 'secondary', hidden: true }, t('sess.extend'));
  const stopBtn = h('button', { type: 'button', class: 'danger', hidden: true }, t('sess.stop'));
  const jobLink = s.job && s.job.id ? h('a', { class: 'button secondary', href: jobHref(tenant, s.job.id) }, t('sess.job_link')) : null;
  const keepBtn = h('button', { type: 'button', class: 'secondary', onclick: () => hideConfirm(true) }, t('sess.stop_no'));
  const yesBtn = h('button', { type: 'button', class: 'danger', onclick: () => doStop() }, t('sess.stop_yes'));
  const confirmBox = h('div', { class: 'note', role: 'group', 'aria-labelledby': 'session-stop-q', hidden: true },
    h('p', { id: 'session-stop-q' }, t('sess.stop_q')),
    h('div', { class: 'actions' }, yesBtn, keepBtn));
  const dontOpen = h('button', { type: 'button', class: 'link' }, t('sess.dont_open'));
  const openNote = h('p', { class: 'note', hidden: true }, t('sess.will_open'), ' ', dontOpen);

  function drawHead() {
    if (!changed('head', s.state)) return;
    clear(stateLine, t('jobs.state_line'), ' ', badge(s.state));
  }

  function drawSteps() {
    if (!changed('steps', s.state)) return;
    steps.hidden = isEnded(s); // the status below says how it ended
    const at = STEPS.indexOf(s.state); // -1 once ended: no step is "now"
    clear(steps, STEPS.map((step, i) => {
      const label = t(`sess.step.${step}`);
      const done = at > i || (s.state === 'ready' && i === at);
      const now = i === at && s.state !== 'ready';
      const sr = done ? t('sess.step_done', { step: label }) : now ? t('sess.step_now', { step: label }) : label;
      return h('li', { class: done ? 'done' : now ? 'now' : null, 'aria-current': now ? 'step' : null },
        h('span', { 'aria-hidden': 'true' }, label), h('span', { class: 'sr-only' }, sr));
    }));
  }

  function statusLines() {
    const j = s.job || {};
    if (s.state === 'queued') {
      const why = whyText(s.reason || j.reason);
      return [
        h('p', { class: 'big' }, t('sess.st.queued')),
        j.queue_position ? h('p', {}, t('sess.st.position', { n: j.queue_position })) : null,
        why ? h('p', {}, t('sess.st.why'), ' ', why) : null,
        j.estimated_start ? h('p', {}, t('sess.st.estimate', { ts: fmtTime(j.estimated_start) })) : null,
      ];
    }
    if (s.state === 'starting') return [h('p', { class: 'big' }, t('sess.st.starting'))];
    if (s.state === 'ready') return [h('p', { class: 'big' }, t('sess.st.ready')),
      owner ? null : h('p', {}, t('sess.only_owner'))];
    return [
      h('p', { class: 'big' }, t('sess.st.ended')),
      s.reason ? h('p', {}, t('sess.st.ended_why', { why: whyText(s.reason) })) : null,
      jobLink ? h('p', {}, h('a', { href: jobLink.getAttribute('href') }, t('sess.st.logs'))) : null,
    ];
  }

  function drawStatus() {
    const j = s.job || {};
    if (!changed('status', [s.state, s.reason, j.reason, j.queue_position, j.estimated_start])) return;
    clear(statusSlot, statusLines());
  }

  function drawProps() {
    if (!changed('props', s)) return;
    const j = s.job || {};
    const r = j.resources || {};
    const row = (key, value) => (value === null || value === undefined || value === '' ? null
      : [h('dt', {}, t(key)), h('dd', {}, value)]);
    clear(propsSlot, h('dl', { class: 'props' },
      row('sess.p.id', h('code', {}, s.id)),
      row('sess.f.app', appText(s.app)),
      row('job.project', s.project),
      row('job.user', s.user),
      row('job.gpus', sessionGpus(s)),
      row('jobs.p.cpus', r.cpus === undefined ? null : String(r.cpus)),
      row('jobs.p.memory', r.memory_gib === undefined ? null : t('jobs.p.gib', { n: fmtNum(r.memory_gib) })),
      row('jobs.p.image', j.image || s.image || null),
      row('sess.p.created', s.created_at ? fmtTime(s.created_at) : null),
      row('sess.p.ready', s.ready_at ? fmtTime(s.ready_at) : null),
      row('sess.p.activity', s.last_activity_at ? fmtTime(s.last_activity_at) : null),
      row('sess.p.idle', s.idle_minutes ? t('jobs.p.minutes', { n: s.idle_minutes }) : null),
      row('sess.p.expires', !isEnded(s) && s.expires_at ? fmtTime(s.expires_at) : null),
      row('jobs.p.finished', isEnded(s) && j.finished_at ? fmtTime(j.finished_at) : null)));
  }

  function drawActions() {
    openBtn.hidden = !(s.state === 'ready' && owner);
    const going = !isEnded(s) && manage;
    extendBtn.hidden = !going;
    if (confirmBox.hidden) stopBtn.hidden = !going;
    else if (!going) hideConfirm(false);
    openNote.hidden = !(autoOpen && owner && !isEnded(s));
  }

  function drawAll() {
    // "Stopping the session." is over once it has ended (the status says why)
    if (stopNote && isEnded(s) && actionMsg.contains(stopNote)) clear(actionMsg);
    drawHead();
    drawSteps();
    drawStatus();
    drawProps();
    drawActions();
  }

  // --- open: a single-use link on the sessions origin, followed at once ------------
  let opening = false;
  async function doOpen() {
    if (opening) return;
    opening = true;
    openBtn.disabled = true;
    clear(actionMsg, h('p', { class: 'hint' }, t('sess.opening')));
    try {
      const { url } = await api.post(`${path}/open`);
      if (!ctx.isCurrent()) return;
      // same tab: the app replaces the portal. Back returns to this page without
      // ?open=1, which would otherwise send the user straight back to the app.
      history.replaceState(null, '', sessionHref(id));
      window.location.assign(url);
    } catch (err) {
      if (!ctx.isCurrent()) return;
      clear(actionMsg, alertBox(t('sess.open_failed', { msg: errorText(err) })));
      opening = false;
      openBtn.disabled = false;
    }
  }
  openBtn.addEventListener('click', () => {
    autoOpen = false; // opened by hand: no second open from the poll
    doOpen();
  });
  dontOpen.addEventListener('click', () => {
    autoOpen = false;
    history.replaceState(null, '', sessionHref(id));
    drawActions();
    title.focus();
  });
  function maybeOpen() {
    if (autoOpen && owner && s.state === 'ready' && !opening) {
      autoOpen = false;
      drawActions();
      doOpen();
    }
  }
  // back from the app, the browser may show this page as it was left ("Opening…")
  const onShow = (ev) => {
    if (!ev.persisted || !ctx.isCurrent()) return;
    opening = false;
    openBtn.disabled = false;
    clear(actionMsg);
    refresh();
  };
  window.addEventListener('pageshow', onShow);
  ctx.onCleanup(() => window.removeEventListener('pageshow', onShow));

  // --- stop (confirmed first) and extend ------------------------------------------
  stopBtn.addEventListener('click', () => {
    confirmBox.hidden = false;
    stopBtn.hidden = true;
    keepBtn.focus(); // Enter right after "Stop" must not stop it
  });
  function hideConfirm(focusBack) {
    confirmBox.hidden = true;
    stopBtn.hidden = isEnded(s) || !manage;
    if (focusBack && !stopBtn.hidden) stopBtn.focus();
  }
  async function doStop() {
    yesBtn.disabled = true;
    keepBtn.disabled = true;
    try {
      const answer = await stop(tenant, id);
      if (!ctx.isCurrent()) return;
      if (answer && answer.id) s = answer;
      gen++;
      autoOpen = false;
      toast(t('sess.stop_sent'));
      stopNote = h('p', { class: 'note' }, t('sess.stop_sent'));
      clear(actionMsg, stopNote);
    } catch (err) {
      if (!ctx.isCurrent()) return;
      clear(actionMsg, alertBox(errorText(err)));
    } finally {
      yesBtn.disabled = false;
      keepBtn.disabled = false;
    }
    hideConfirm(false);
    drawAll();
    title.focus();
    refresh();
  }
  extendBtn.addEventListener('click', async () => {
    extendBtn.disabled = true;
    try {
      const answer = await extend(tenant, id);
      if (!ctx.isCurrent()) return;
      s = answer;
      gen++;
      clear(actionMsg, h('p', { class: 'note' }, t('sess.extended', { ts: fmtTime(s.expires_at) })));
      drawAll();
    } catch (err) {
      if (ctx.isCurrent()) clear(actionMsg, alertBox(errorText(err)));
    } finally {
      extendBtn.disabled = false;
    }
  });

  // --- page --------------------------------------------------------------------------
  const sec = (hid, key, ...children) => h('section', { class: 'card', 'aria-labelledby': hid },
    h('h2', { id: hid }, t(key)), ...children);
  ctx.main.append(
    h('div', { class: 'page-head' }, title,
      h('div', { class: 'actions' }, openBtn, extendBtn, stopBtn, jobLink,
        h('a', { class: 'button secondary', href: '#/sessions' }, t('sess.back')))),
    h('p', { class: 'hint' }, sessionName(s)),
    stateLine,
    confirmBox,
    openNote,
    actionMsg,
    sec('session-progress-h', 'sess.progress', steps, statusSlot),
    sec('session-props-h', 'sess.props', propsSlot));
  drawAll();
  // already ready: open once the page is shown (the router shows it when render ends)
  setTimeout(() => { if (ctx.isCurrent()) maybeOpen(); }, 0);

  function refresh() {
    if (!running) running = refreshOnce().finally(() => { running = null; });
    return running;
  }
  async function refreshOnce() {
    const mine = gen;
    last = Date.now();
    try {
      const next = await api.get(path);
      if (!ctx.isCurrent() || mine !== gen) return;
      s = next;
      if (refreshFailed) clear(actionMsg);
      refreshFailed = false;
      drawAll();
      maybeOpen();
    } catch (err) {
      if (!ctx.isCurrent() || mine !== gen) return;
      refreshFailed = true;
      clear(actionMsg, alertBox(t('sess.refresh_failed', { msg: errorText(err) })));
    }
  }
  const timer = setInterval(() => {
    if (document.hidden || !ctx.isCurrent() || running || isEnded(s)) return;
    if (s.state === 'ready' && Date.now() - last < SLOW_MS) return;
    refresh();
  }, FAST_MS);
  ctx.onCleanup(() => clearInterval(timer));
}
