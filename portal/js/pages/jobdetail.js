// jobdetail.js - one job: what is happening in plain words (queue place, why it
// waits, borrowed GPUs, who preempted it), its properties, its state history,
// its output (tail, stdout/stderr, followed while it runs), its output files (stdout,
// stderr and its work folder, to download) and cancel (with a confirmation). Refreshed every 5 s until the job has ended; each part is
// redrawn only when its data changed, so focus and scroll stay where they are.
import { api, tpath } from '../api.js';
import { t, fmtTime, fmtNum } from '../i18n.js';
import { h, clear, badge, field, alertBox, errorText, toast } from '../ui.js';
import { canSubmit } from '../roles.js';
import { isFinished, gpuText, reasonText, mayManage, REFRESH_MS, SLUG_RE, UUID_RE, jobHref, durationText } from './jobs.js';
import { fileList } from '../filelist.js';
import { loadTasks, tasksView, relationLines } from './jobarray.js';
import { efficiencyView } from '../efficiency.js';

const TAILS = [100, 1000, 10000];

// t(key) with {placeholders} filled by text or by elements (a link inside a sentence)
function fill(key, vars) {
  return t(key).split(/(\{\w+\})/).map((part) => {
    const m = /^\{(\w+)\}$/.exec(part);
    return m && m[1] in vars ? vars[m[1]] : part;
  });
}

const secondsBetween = (a, b) => (new Date(b || Date.now()) - new Date(a)) / 1000;
// RFC 3339 with a fraction of a second ("…T09:20:47.412Z")
const hasFraction = (ts) => /T\d\d:\d\d:\d\d\.\d/.test(ts || '');

// The preemptions of a job, from its events (newest last): who, when, how long it ran.
function preemptions(events) {
  return events.filter((e) => e.to === 'preempted').map((e) => {
    const d = e.details || {};
    const m = /^preempted by job (\S+) of tenant (\S+)/.exec(e.reason || '') || [];
    return { ts: e.ts, job: d.preempted_by_job || m[1] || null, tenant: d.preempted_by_tenant || m[2] || null,
      ran: d.ran_seconds };
  });
}

// "preemption requested by job X of tenant Y": being preempted right now (an
// ended job keeps stop_requested, but nothing is being stopped any more)
function pendingPreemption(job) {
  if (job.stop_requested !== 'preempt' || isFinished(job)) return null;
  const m = /^preemption requested by job (\S+) of tenant (\S+)/.exec(job.reason || '');
  return m ? { job: m[1], tenant: m[2] } : { job: null, tenant: null };
}

// A link that cannot name a job (a mistyped or hand-made #/jobs/:tenant/:id): said
// here, without asking the server.
function noSuchJob(ctx) {
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('jobs.no_such'))),
    alertBox(t('jobs.no_such_explain')),
    h('div', { class: 'actions' }, h('a', { class: 'button secondary', href: '#/jobs' }, t('jobs.back'))));
}

export async function render(ctx) {
  const tenant = ctx.params.tenant;
  const id = ctx.params.id;
  if (!SLUG_RE.test(tenant || '') || !UUID_RE.test(id || '')) return noSuchJob(ctx);
  const jobPath = tpath(tenant, 'jobs', id);

  let [job, events] = await Promise.all([
    api.get(jobPath),
    api.all(`${jobPath}/events`),
  ]);
  let tasks = await loadTasks(tenant, job);
  const manage = mayManage(ctx.me, tenant, job);

  // link to a job when it is in this tenant (another tenant's jobs are not ours to read)
  const jobRef = (jid, jtenant) => {
    if (!jid) return t('jobs.unknown_job');
    const label = jid.slice(0, 8);
    return jtenant === tenant ? h('a', { href: jobHref(tenant, jid) }, label)
      : h('code', { title: jid }, label);
  };

  // --- parts (each redrawn only on a change) ---------------------------------
  const title = h('h1', {});
  const stateSlot = h('p', { id: 'job-state' });
  const statusSlot = h('div', {});
  const preemptSlot = h('div', {});
  const propsSlot = h('div', {});
  const effSlot = h('div', {});
  const arraySlot = h('div', {});
  const relSlot = h('div', {});
  const timelineSlot = h('div', {});
  const actionMsg = h('div', {});
  const drawn = {};
  const changed = (part, data) => {
    const sig = JSON.stringify(data);
    if (drawn[part] === sig) return false;
    drawn[part] = sig;
    return true;
  };

  function drawHead() {
    if (!changed('head', [job.name, job.state, job.preemptible, job.stop_requested])) return;
    clear(title, job.name || id.slice(0, 8));
    const extra = [];
    // an ended job shows how it ended, nothing else (stop_requested stays on it)
    const going = !isFinished(job);
    if (job.preemptible && going) extra.push(' ', h('span', { class: 'badge' }, t('jobs.borrowed')));
    if (job.stop_requested === 'cancel' && going) extra.push(' ', h('span', { class: 'badge' }, t('jobs.cancelling')));
    if (job.stop_requested === 'preempt' && going) extra.push(' ', h('span', { class: 'badge state-preempted' }, t('jobs.being_preempted')));
    clear(stateSlot, t('jobs.state_line'), ' ', badge(job.state), extra);
  }

  function statusLines() {
    const out = [];
    const s = job.state;
    if (s === 'queued') {
      out.push(h('p', { class: 'big' }, t('jobs.st.queued')));
      if (job.queue_position) out.push(h('p', {}, t('jobs.st.position', { n: job.queue_position, type: job.resources.gpu_type || t('jobs.cpu_only') })));
      if (job.reason) out.push(h('p', {}, t('jobs.st.why'), ' ', reasonText(job.reason), ' ', h('code', {}, job.reason)));
      out.push(h('p', {}, job.estimated_start ? t('jobs.st.estimate', { ts: fmtTime(job.estimated_start) }) : t('jobs.st.no_estimate')));
    } else if (s === 'admitted') {
      out.push(h('p', { class: 'big' }, t('jobs.st.admitted', { cluster: job.cluster || '?' })));
      if (job.reason) out.push(h('p', {}, reasonText(job.reason)));
    } else if (s === 'pending') {
      out.push(h('p', { class: 'big' }, t('jobs.st.pending', { cluster: job.cluster || '?' })));
      if (job.reason) out.push(h('p', {}, reasonText(job.reason)));
    } else if (s === 'running') {
      out.push(h('p', { class: 'big' }, t('jobs.st.running', { cluster: job.cluster || '?' })));
      if (job.started_at) out.push(h('p', {}, t('jobs.st.running_since', { ts: fmtTime(job.started_at) })));
    } else if (s === 'succeeded') {
      out.push(h('p', { class: 'big' }, t('jobs.st.succeeded')));
    } else if (s === 'failed') {
      out.push(h('p', { class: 'big' }, t('jobs.st.failed')));
      if (job.reason) out.push(h('p', {}, t('jobs.st.why'), ' ', reasonText(job.reason)));
    } else if (s === 'cancelled') {
      out.push(h('p', { class: 'big' }, t('jobs.st.cancelled')));
      // "cancelled" would only repeat the line above; "cancelled by ..." says more
      if (job.reason && job.reason !== 'cancelled') out.push(h('p', {}, reasonText(job.reason)));
    } else if (s === 'preempted') {
      out.push(h('p', { class: 'big' }, t('jobs.st.preempted')));
    }
    if (isFinished(job)) {
      if (job.exit_code !== null && job.exit_code !== undefined) out.push(h('p', {}, t('jobs.st.exit', { code: job.exit_code })));
      if (job.started_at && job.finished_at) {
        const d = durationText(secondsBetween(job.started_at, job.finished_at),
          !hasFraction(job.started_at) || !hasFraction(job.finished_at));
        out.push(h('p', {}, t('jobs.st.ran', { d, ts: fmtTime(job.finished_at) })));
      }
    } else {
      if (job.preemptible)
        out.push(h('p', { class: 'note' }, h('strong', {}, t('jobs.borrowed_title')), ' ', t('jobs.borrowed_explain')));
      if (job.stop_requested === 'cancel') out.push(h('p', { class: 'note' }, t('jobs.st.cancelling')));
    }
    return out;
  }

  function drawStatus() {
    // the running time ticks, so "running" redraws only when the job changed
    if (!changed('status', job)) return;
    clear(statusSlot, statusLines());
  }

  function drawPreemption() {
    const past = preemptions(events);
    const now = pendingPreemption(job);
    if (!changed('preempt', [past, now, job.preemption_count, job.state])) return;
    if (!past.length && !now && !job.preemption_count) return clear(preemptSlot);
    const items = [];
    if (now)
      items.push(h('p', { class: 'alert' }, fill('jobs.pre.now', { job: jobRef(now.job, now.tenant), tenant: now.tenant || '?' })));
    const last = past[past.length - 1];
    if (last && !now)
      items.push(h('p', { class: 'alert' }, fill('jobs.pre.headline', { tenant: last.tenant || '?' })));
    if (past.length)
      items.push(h('ul', {}, past.map((p) => h('li', {}, fill(p.ran === undefined || p.ran === null ? 'jobs.pre.item_short' : 'jobs.pre.item',
        { ts: fmtTime(p.ts), job: jobRef(p.job, p.tenant), tenant: p.tenant || '?', d: durationText(p.ran || 0) })))));
    items.push(h('p', { class: 'note' }, t('jobs.pre.explain')));
    if (job.state === 'queued' && past.length) items.push(h('p', {}, t('jobs.pre.requeued')));
    const hid = 'job-preempt-h';
    clear(preemptSlot, h('section', { class: 'card', 'aria-labelledby': hid },
      h('h2', { id: hid }, job.preemption_count
        ? t('jobs.pre.title_n', { n: job.preemption_count }) : t('jobs.pre.title_now')),
      items));
  }

  function drawProps() {
    if (!changed('props', job)) return;
    const r = job.resources || {};
    const row = (key, value) => (value === null || value === undefined || value === '' ? null
      : [h('dt', {}, t(key)), h('dd', {}, value)]);
    const env = Object.entries(job.env || {});
    clear(propsSlot, h('dl', { class: 'props' },
      row('jobs.p.id', h('code', {}, job.id)),
      row('job.project', job.project),
      row('job.user', job.user),
      row('jobs.p.priority', t(`jobs.prio.${job.priority}`)),
      row('job.gpus', gpuText(r)),
      row('jobs.p.cpus', String(r.cpus)),
      row('jobs.p.memory', t('jobs.p.gib', { n: r.memory_gib })),
      row('jobs.p.time_limit', t('jobs.p.minutes', { n: r.time_limit_minutes })),
      row('jobs.p.preemptible', t(job.preemptible ? 'jobs.p.preemptible_yes' : 'app.no')),
      row('jobs.p.preemption_count', String(job.preemption_count || 0)),
      row('jobs.p.cluster', job.cluster),
      row('jobs.p.gpu_indexes', job.gpu_indexes && job.gpu_indexes.length ? job.gpu_indexes.join(', ') : null),
      row('jobs.p.backend_id', job.backend_job_id),
      row('jobs.p.image', job.image ? [job.image, job.image_digest ? [' ', h('code', { title: job.image_digest }, job.image_digest.slice(0, 19))] : null] : t('jobs.p.no_image')),
      row('job.submitted', fmtTime(job.submitted_at)),
      row('jobs.p.admitted', job.admitted_at ? fmtTime(job.admitted_at) : null),
      row('jobs.p.started', job.started_at ? fmtTime(job.started_at) : null),
      row('jobs.p.finished', job.finished_at ? fmtTime(job.finished_at) : null),
      row('jobs.p.exit_code', job.exit_code === null || job.exit_code === undefined ? null : String(job.exit_code)),
      row('jobs.p.script', job.script ? h('pre', { class: 'example' }, job.script) : null),
      row('jobs.p.command', job.command ? h('pre', { class: 'example' }, JSON.stringify(job.command)) : null),
      row('jobs.p.env', env.length ? h('ul', {}, env.map(([k, v]) => h('li', {}, h('code', {}, k), ' = ', v))) : null)));
  }

  function drawTimeline() {
    if (!changed('timeline', events)) return;
    if (!events.length) return clear(timelineSlot, h('p', { class: 'empty' }, t('app.none')));
    clear(timelineSlot, h('ol', { class: 'timeline' }, events.map((e) => h('li', {},
      h('time', { datetime: e.ts }, fmtTime(e.ts)), ' — ',
      e.from && e.from !== e.to ? [badge(e.from), ' → '] : null, badge(e.to),
      e.reason ? [' ', reasonText(e.reason),
        reasonText(e.reason) !== e.reason && !/\s/.test(e.reason) ? [' (', h('code', {}, e.reason), ')'] : null] : null))));
  }

  // --- actions: cancel (confirmed first), submit a copy ------------------------
  const cancelBtn = h('button', { type: 'button', class: 'danger' }, t('jobs.cancel'));
  // focus lands on "keep": Enter or Space right after "Cancel job" must not cancel
  const keepBtn = h('button', { type: 'button', class: 'secondary', onclick: () => hideConfirm(true) }, t('jobs.cancel_no'));
  const confirmBox = h('div', { class: 'note', role: 'group', 'aria-labelledby': 'job-cancel-q', hidden: true },
    h('p', { id: 'job-cancel-q' }, t('jobs.cancel_q')),
    h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'danger', onclick: doCancel }, t('jobs.cancel_yes')),
      keepBtn));
  cancelBtn.addEventListener('click', () => {
    confirmBox.hidden = false;
    cancelBtn.hidden = true;
    keepBtn.focus();
  });
  function hideConfirm(focusBack) {
    confirmBox.hidden = true;
    cancelBtn.hidden = !manage || isFinished(job);
    if (focusBack && !cancelBtn.hidden) cancelBtn.focus();
  }
  async function doCancel() {
    for (const b of confirmBox.querySelectorAll('button')) b.disabled = true;
    let answer = null;
    let failure = null;
    try {
      answer = await api.post(`${jobPath}/cancel`);
    } catch (err) {
      failure = err;
    }
    if (!ctx.isCurrent()) return; // the user left meanwhile: this page is gone
    for (const b of confirmBox.querySelectorAll('button')) b.disabled = false;
    if (answer) {
      job = answer;
      gen++; // a refresh in flight may have read the job before the cancel
      toast(t('jobs.cancel_sent'));
      cancelSent = true;
      drawAll();
    } else {
      clear(actionMsg, alertBox(failure.status === 409 ? t('jobs.cancel_409') : errorText(failure)));
    }
    hideConfirm(false);
    if (running) await running;
    await refresh();
    if (ctx.isCurrent()) title.focus();
  }
  const copyLink = canSubmit(ctx.me, tenant) && tenant === ctx.tenant
    ? h('a', { class: 'button secondary', href: `#/jobs/new?copy=${encodeURIComponent(id)}` }, t('jobs.copy')) : null;
  const actions = h('div', { class: 'actions' }, cancelBtn, copyLink,
    h('a', { class: 'button secondary', href: '#/jobs' }, t('jobs.back')));
  const drawActions = () => { if (confirmBox.hidden) cancelBtn.hidden = !manage || isFinished(job); };
  // after "cancel": "requested" while it stops, then how it ended (a job may finish
  // on its own before the cancel reaches it)
  let cancelSent = false;
  function drawCancelNote() {
    if (!cancelSent) return;
    const key = !isFinished(job) ? 'jobs.cancel_sent' : job.state === 'cancelled' ? 'jobs.cancel_done' : null;
    if (!changed('cancelNote', key)) return;
    clear(actionMsg, key ? h('p', { class: 'note' }, t(key)) : null);
  }

  // --- logs ------------------------------------------------------------------
  const logPre = h('pre', { class: 'log', tabindex: '0', role: 'region', 'aria-label': t('jobs.log.region') });
  const logNote = h('p', { class: 'hint' });
  const streamF = field('stream', 'jobs.log.stream', { kind: 'select', options: [['stdout', 'stdout'], ['stderr', 'stderr']] });
  const tailF = field('tail', 'jobs.log.tail', { kind: 'select', options: TAILS.map((n) => [String(n), t('jobs.log.lines', { n })]) });
  const follow = h('input', { type: 'checkbox', id: 'job-log-follow', checked: !isFinished(job) });
  const logRefresh = h('button', { type: 'button', class: 'secondary' }, t('app.refresh'));
  const logControls = h('form', { class: 'filters', 'aria-label': t('jobs.log.controls') },
    streamF, tailF,
    h('div', { class: 'field' }, h('label', { for: 'job-log-follow' }, follow, ' ', t('jobs.log.follow'))),
    h('div', { class: 'actions' }, logRefresh));
  logControls.addEventListener('submit', (ev) => ev.preventDefault());
  // a failed job's story (a traceback) is on stderr, its stdout often empty: show
  // stderr first, unless the reader picked a stream
  let streamPicked = false;
  const failedFirst = () => {
    if (job.state === 'failed' && !streamPicked) logControls.elements.stream.value = 'stderr';
  };
  failedFirst();
  let logText = null;
  let logSeq = 0;

  // No output to read: not placed on a cluster (queued, or requeued after a preemption).
  function logsUnavailable() {
    if (!manage) return t('jobs.log.not_yours');
    if (!job.cluster) return job.preemption_count ? t('jobs.log.requeued') : t('jobs.log.not_placed');
    return null;
  }

  async function loadLogs() {
    const why = logsUnavailable();
    logControls.hidden = !!why;
    if (why) {
      logText = null;
      logPre.hidden = true;
      logPre.textContent = '';
      logNote.textContent = why;
      return;
    }
    const mine = ++logSeq;
    const stuck = logPre.scrollTop + logPre.clientHeight >= logPre.scrollHeight - 8;
    try {
      const { text } = await api.text(`${jobPath}/logs`,
        { stream: logControls.elements.stream.value, tail: logControls.elements.tail.value }, 'text/plain');
      if (mine !== logSeq || !ctx.isCurrent()) return;
      logPre.hidden = false;
      logNote.textContent = text ? '' : t('jobs.log.empty');
      if (text !== logText) {
        logText = text;
        logPre.textContent = text;
        if (stuck) logPre.scrollTop = logPre.scrollHeight;
      }
    } catch (err) {
      if (mine !== logSeq || !ctx.isCurrent()) return;
      logNote.textContent = t('jobs.log.failed', { msg: errorText(err) });
    }
  }
  logRefresh.addEventListener('click', loadLogs);
  logControls.elements.stream.addEventListener('change', () => { streamPicked = true; logText = null; loadLogs(); });
  logControls.elements.tail.addEventListener('change', loadLogs);

  // --- output files: stdout, stderr and the work folder, whole, to download ----
  // (the job's owner and the tenant's admins; folders open in place, read-only)
  const outSlot = h('div', {});
  const outList = manage ? fileList({ base: `${jobPath}/files`, rootLabel: t('jobs.out.root'),
    emptyRoot: 'jobs.out.none', isCurrent: ctx.isCurrent }) : null;
  const outRefresh = h('button', { type: 'button', class: 'secondary', hidden: !manage,
    onclick: () => refreshOutputs() }, t('app.refresh'));
  async function loadOutputs() {
    if (!manage) return clear(outSlot, h('p', { class: 'hint' }, t('jobs.out.not_yours')));
    try {
      await outList.load('');
      clear(outSlot, outList.el);
    } catch (err) {
      // a cluster whose outputs aidc cannot read (Slurm, Kubernetes): said in words
      clear(outSlot, h('p', { class: 'hint' }, t('jobs.out.failed', { msg: errorText(err) })));
    }
  }
  // the folder shown again (the list stays where the reader went), or the first try again
  const refreshOutputs = () => (outList && outList.el.isConnected ? outList.reload() : loadOutputs());

  // --- page ------------------------------------------------------------------
  const sec = (hid, key, ...children) => h('section', { class: 'card', 'aria-labelledby': hid },
    h('h2', { id: hid }, t(key)), ...children);
  ctx.main.append(
    h('div', { class: 'page-head' }, title, actions),
    stateSlot,
    confirmBox,
    actionMsg,
    preemptSlot,
    sec('job-status-h', 'jobs.status', statusSlot, relSlot),
    job.array ? sec('job-array-h', 'jobs.arr.title', arraySlot) : null,
    sec('job-eff-h', 'eff.title', effSlot),
    h('div', { class: 'grid', style: { marginBottom: '1rem' } },
      sec('job-props-h', 'jobs.props', propsSlot),
      sec('job-tl-h', 'jobs.timeline', timelineSlot)),
    sec('job-log-h', 'jobs.log.title', logControls, logNote, logPre),
    sec('job-out-h', 'jobs.out.title',
      h('div', { class: 'toolbar' }, h('p', { class: 'hint' }, t('jobs.out.lead')), h('div', { class: 'push' }, outRefresh)),
      outSlot));

  function drawArray() {
    if (!changed('array', [job.array_tasks, tasks, job.depends_on, job.array_parent])) return;
    clear(relSlot, relationLines(tenant, job));
    if (job.array) clear(arraySlot, tasksView(tenant, job, tasks));
  }

  function drawAll() {
    drawHead();
    drawArray();
    clear(effSlot, efficiencyView(job));
    drawStatus();
    drawPreemption();
    drawProps();
    drawTimeline();
    drawActions();
    drawCancelNote();
  }
  drawAll();
  await Promise.all([loadLogs(), loadOutputs()]);

  let wasFinished = isFinished(job);
  // One refresh at a time (the job, its history, then maybe 10,000 lines of output can
  // take longer than the interval): a tick while one runs is skipped. gen drops an
  // answer read before the job changed here (a cancel), so no older state comes back.
  let running = null;
  let gen = 0;
  function refresh() {
    if (!running) running = refreshOnce().finally(() => { running = null; });
    return running;
  }
  async function refreshOnce() {
    const mine = gen;
    try {
      const [j, ev] = await Promise.all([api.get(jobPath), api.all(`${jobPath}/events`)]);
      const tk = await loadTasks(tenant, j);
      if (!ctx.isCurrent() || mine !== gen) return;
      job = j;
      events = ev;
      tasks = tk;
      drawAll();
    } catch (err) {
      if (ctx.isCurrent() && mine === gen) clear(actionMsg, alertBox(t('jobs.refresh_failed', { msg: errorText(err) })));
      return;
    }
    const done = isFinished(job);
    if (done && !wasFinished) failedFirst();
    // follow the output while it runs, and read it once more when it has ended
    if (follow.checked || (done && !wasFinished)) await loadLogs();
    // what it left behind, once it has ended
    if (done && !wasFinished && manage && ctx.isCurrent()) await refreshOutputs();
    if (!ctx.isCurrent()) return;
    if (done && !wasFinished) follow.checked = false;
    wasFinished = done;
  }

  const timer = setInterval(() => {
    if (document.hidden || !ctx.isCurrent()) return;
    if (isFinished(job) && wasFinished) return; // nothing changes any more
    if (running) return; // the last one is still going
    refresh();
  }, REFRESH_MS);
  ctx.onCleanup(() => clearInterval(timer));
}
