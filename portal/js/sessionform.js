// sessionform.js - "New notebook": one click starts a Jupyter session in the project the
// user picks (remembered per tenant in this browser), with the server's defaults; "More
// options" (closed at first) holds the app (a notebook, or a web app with the command
// that starts it), image from the catalog, GPUs and their type, time limit, idle minutes
// and mounts. Only what the user changed there is sent, so the server's defaults stay the
// defaults. Controls are named after the API's fields: the server's messages land next
// to them (a field inside "More options" opens it). On 201 the session's page opens in
// its ?open=1 mode, which opens the app as soon as it is ready.
import { api, tpath, idempotency } from './api.js';
import { t } from './i18n.js';
import { h, field, showErrors, clearErrors, toast } from './ui.js';

const projectKey = (tenant) => `aidc.session_project.${tenant}`;
// where the form starts (the API's defaults): what still reads so is not sent
const START = { gpus: '0', time_limit_minutes: '240', idle_minutes: '60' };

// 'sh -c "a b"' -> ['sh', '-c', 'a b']: words split at blanks, quotes (' or ") keep
// blanks, a backslash outside single quotes keeps the next character. null: a quote is
// not closed.
export function splitArgs(text) {
  const out = [];
  let cur = null;
  let quote = null;
  const s = String(text || '');
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      if (c === quote) quote = null;
      else if (c === '\\' && quote === '"' && i + 1 < s.length) cur += s[++i];
      else cur += c;
    } else if (/\s/.test(c)) {
      if (cur !== null) out.push(cur);
      cur = null;
    } else if (c === '"' || c === "'") {
      quote = c;
      cur = cur || '';
    } else if (c === '\\' && i + 1 < s.length) {
      cur = (cur || '') + s[++i];
    } else cur = (cur || '') + c;
  }
  if (quote) return null;
  if (cur !== null) out.push(cur);
  return out;
}

// integers as numbers; anything else as typed, so the server names the problem
function num(v) {
  const s = String(v ?? '').trim();
  return /^-?\d+$/.test(s) ? Number(s) : s;
}

// command[0] -> command, mounts[1].space -> mounts: the form has one place for each
function mapErrors(err) {
  const byField = new Map();
  const rest = [];
  for (const e of err.errors || []) {
    const f = (e.field || '').replace(/[[.].*$/, '');
    if (!f) rest.push(e);
    else byField.set(f, byField.has(f) ? `${byField.get(f)} · ${e.message}` : e.message);
  }
  return { status: err.status, message: err.message, retryAfter: err.retryAfter,
    errors: [...[...byField].map(([f, message]) => ({ field: f, message })), ...rest] };
}

function gpuTypes(clusters, quota) {
  const types = new Set();
  for (const c of clusters)
    for (const res of Object.keys(c.inventory || {})) if (res.startsWith('gpu:')) types.add(res.slice(4));
  for (const res of Object.keys((quota && quota.resources) || {})) if (res.startsWith('gpu:')) types.add(res.slice(4));
  return [...types].sort();
}

// The card with the button and the form; ctx as a page's.
export async function newSessionCard(ctx) {
  const tenant = ctx.tenant;
  const [projects, images, clusters, quota] = await Promise.all([
    api.all(tpath(tenant, 'projects')),
    api.get('images', { tenant, limit: 1000 }).then((p) => p.items).catch(() => []),
    api.all('clusters').catch(() => []),
    api.get(tpath(tenant, 'quota')).catch(() => null),
  ]);

  const projectF = field('project', 'job.project', { kind: 'select',
    options: projects.map((p) => [p.slug, p.name && p.name !== p.slug ? `${p.slug} (${p.name})` : p.slug]) });
  const submit = h('button', { type: 'submit', class: 'primary' }, t('sess.new'));

  const appF = field('app', 'sess.f.app', { kind: 'select',
    options: [['jupyter', t('sess.app.jupyter')], ['web', t('sess.app.web')]] });
  const commandF = field('command', 'sess.f.command', { autocomplete: 'off', spellcheck: 'false',
    autocapitalize: 'none', placeholder: 'sh -c \'python3 -m http.server $PORT\'', hint: t('sess.f.command_hint') });
  const imagesList = h('datalist', { id: 'session-images' },
    images.map((img) => h('option', { value: `${img.repository}:${img.tag}` })));
  const imageF = field('image', 'sess.f.image', { list: 'session-images', autocomplete: 'off', spellcheck: 'false',
    autocapitalize: 'none', hint: t('sess.f.image_hint') });
  const gpuTypeF = field('gpu_type', 'jobs.f.gpu_type', { kind: 'select',
    options: [['', t('jobs.f.no_gpu')], ...gpuTypes(clusters, quota).map((g) => [g, g])] });
  const gpusF = field('gpus', 'jobs.f.gpus', { type: 'number', min: 0, max: 64, step: 1, value: START.gpus, inputmode: 'numeric' });
  const timeF = field('time_limit_minutes', 'sess.f.time', { type: 'number', min: 1, step: 1, value: START.time_limit_minutes,
    inputmode: 'numeric', hint: t('sess.f.time_hint') });
  const idleF = field('idle_minutes', 'sess.f.idle', { type: 'number', min: 1, step: 1, value: START.idle_minutes,
    inputmode: 'numeric', hint: t('sess.f.idle_hint') });
  const check = (name, key, vars) => h('label', {},
    h('input', { type: 'checkbox', name, value: 'yes', checked: true }), ' ', t(key, vars));
  const mountsF = h('fieldset', { class: 'field', dataset: { field: 'mounts' }, 'aria-describedby': 'session-mounts-err' },
    h('legend', {}, t('sess.f.mounts')),
    h('div', { class: 'checks inline' },
      check('mount_project', 'sess.f.mount_project'), ' ',
      check('mount_home', 'sess.f.mount_home', { user: ctx.me.username })),
    h('span', { id: 'session-mounts-err', class: 'field-error', role: 'alert' }));
  // checked: the defaults the form starts from (a reset or the server's defaults)
  for (const c of mountsF.querySelectorAll('input')) c.defaultChecked = true;

  const options = h('details', { class: 'options' },
    h('summary', {}, t('sess.more')),
    h('div', { class: 'form-grid' },
      appF, h('div', { class: 'wide' }, commandF),
      h('div', { class: 'wide' }, imageF, imagesList),
      gpuTypeF, gpusF, timeF, idleF,
      h('div', { class: 'wide' }, mountsF)));

  const form = h('form', { id: 'session-form', novalidate: true },
    h('div', { class: 'toolbar' }, projectF, h('div', { class: 'actions' }, submit)),
    options,
    h('p', { class: 'form-error', role: 'alert' }));
  const F = form.elements;

  const saved = localStorage.getItem(projectKey(tenant));
  if (projects.some((p) => p.slug === saved)) F.project.value = saved;
  F.project.addEventListener('change', () => localStorage.setItem(projectKey(tenant), F.project.value));

  function drawApp() {
    const web = F.app.value === 'web';
    commandF.hidden = !web;
    submit.textContent = t(web ? 'sess.new_web' : 'sess.new');
  }
  F.app.addEventListener('change', drawApp);
  F.gpu_type.addEventListener('change', () => {
    if (F.gpu_type.value && F.gpus.value === '0') F.gpus.value = '1';
    if (!F.gpu_type.value) F.gpus.value = '0';
  });
  drawApp();
  if (!projects.length) {
    submit.disabled = true;
    form.prepend(h('p', { class: 'alert', role: 'alert' }, t('sess.no_projects')));
  }

  // only what differs from where the form started (the server's defaults)
  function body() {
    const b = { project: F.project.value, app: F.app.value };
    if (F.image.value.trim()) b.image = F.image.value.trim();
    if (F.gpu_type.value) b.gpu_type = F.gpu_type.value;
    for (const [name, start] of Object.entries(START))
      if (F[name].value.trim() !== start || (name === 'gpus' && b.gpu_type)) b[name] = num(F[name].value);
    if (F.mount_project.checked !== F.mount_project.defaultChecked || F.mount_home.checked !== F.mount_home.defaultChecked) {
      b.mounts = [];
      if (F.mount_project.checked) b.mounts.push({ space: 'project' });
      if (F.mount_home.checked) b.mounts.push({ space: 'home' });
    }
    if (b.app === 'web') {
      const args = splitArgs(F.command.value);
      if (args === null) return { error: { field: 'command', message: t('sess.f.command_quote') } };
      if (args.length) b.command = args;
    }
    return { body: b };
  }

  const idemKey = idempotency();
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const { body: b, error } = body();
    if (error) {
      options.open = true;
      showErrors(form, { errors: [error], message: t('app.form_errors') });
      return;
    }
    localStorage.setItem(projectKey(tenant), b.project);
    submit.disabled = true;
    try {
      const s = await api.post(tpath(tenant, 'sessions'), b, undefined, idemKey(b));
      toast(t('sess.started'));
      // the user may have gone elsewhere meanwhile: do not pull them back
      if (ctx.isCurrent()) ctx.go(`#/sessions/${encodeURIComponent(s.id)}?open=1`);
    } catch (err) {
      if (!ctx.isCurrent()) return;
      const mapped = mapErrors(err);
      // a message for a field inside "More options" must be seen
      if (mapped.errors.some((e) => e.field && e.field !== 'project' && options.querySelector(`[data-field="${e.field}"]`)))
        options.open = true;
      showErrors(form, mapped);
    } finally {
      submit.disabled = false;
    }
  });

  const hid = 'session-new-h';
  return h('section', { class: 'card', 'aria-labelledby': hid },
    h('h2', { id: hid }, t('sess.new_title')),
    h('p', { class: 'hint' }, t('sess.new_lead')),
    form);
}
