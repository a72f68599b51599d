// jobsubmit.js - submit a job: project, image from the catalog (or typed),
// GPUs with what is free right now and what the tenant's quota allows, CPU,
// memory, time limit, priority, a shell script, environment variables and the storage
// it mounts (its project's space, the user's home, datasets read-only).
// Every control is named after the API's field, so the server's messages land
// next to it; on 201 the job's own page opens. #/jobs/new?copy=ID starts from
// an earlier job of the tenant.
import { api, tpath, idempotency } from '../api.js';
import { t, fmtNum } from '../i18n.js';
import { h, clear, field, showErrors, clearErrors, toast, table } from '../ui.js';
import { UUID_RE, jobHref } from './jobs.js';
import { templateChooser } from '../templatelist.js';

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const RESERVED = (k) => k.startsWith('AIDC_') || k === 'CUDA_VISIBLE_DEVICES' || k === 'NVIDIA_VISIBLE_DEVICES';
const AVAIL_MS = 10000;
const DATASET_RE = /^[a-z][a-z0-9._-]{0,62}$/; // a dataset's name (storage/space.c)

// "imagenet, coco" -> {names, bad}: the names in order, once each; the first that cannot be one
export function parseDatasets(text) {
  const names = [...new Set(String(text || '').split(',').map((s) => s.trim()).filter(Boolean))];
  return { names, bad: names.find((n) => !DATASET_RE.test(n)) || null };
}

// KEY=VALUE lines -> {env, errors: [text]}; blank lines and # comments are skipped
export function parseEnv(text) {
  const env = {};
  const errors = [];
  String(text || '').split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (!line || line.startsWith('#')) return;
    const n = i + 1;
    const eq = line.indexOf('=');
    if (eq < 0) return errors.push(t('jobs.env.no_eq', { n }));
    const rawKey = line.slice(0, eq);
    const key = rawKey.trim();
    // "NAME = value" means value; "NAME=  value" keeps what follows the "="
    let value = raw.slice(raw.indexOf('=') + 1);
    if (rawKey !== key) value = value.trimStart();
    if (!ENV_NAME.test(key)) errors.push(t('jobs.env.bad_name', { n, key: key || '""' }));
    else if (RESERVED(key)) errors.push(t('jobs.env.reserved', { n, key }));
    else if (key in env) errors.push(t('jobs.env.twice', { n, key }));
    else env[key] = value;
  });
  return { env, errors };
}

// "a100" -> {total, allocated} summed over the healthy clusters
function inventory(clusters) {
  const out = {};
  for (const c of clusters)
    for (const [res, v] of Object.entries(c.inventory || {})) {
      if (!res.startsWith('gpu:')) continue;
      const type = res.slice(4);
      const o = out[type] || (out[type] = { total: 0, allocated: 0, down: 0 });
      if (c.healthy === false) o.down += v.total;
      else {
        o.total += v.total;
        o.allocated += v.allocated;
      }
    }
  return out;
}

function imageRef(img) {
  return `${img.repository}:${img.tag}`;
}

function imageLabel(img) {
  const l = img.labels || {};
  const bits = [l.framework, l['org.opencontainers.image.title'], l['org.opencontainers.image.version']]
    .filter(Boolean);
  bits.push(img.visibility === 'public' ? t('jobs.img.public') : t('jobs.img.tenant', { t: img.tenant }));
  return bits.join(' · ');
}

// integers as numbers; anything else as typed, so the server names the problem
function num(v) {
  if (v === undefined || v === '') return undefined;
  return /^-?\d+$/.test(v) ? Number(v) : v;
}

// The server names fields of the API; this form shows command problems at the
// script and env.NAME problems at the env box. Several messages for one field join.
function mapErrors(err) {
  const byField = new Map();
  const rest = [];
  for (const e of err.errors || []) {
    let f = e.field || '';
    let msg = e.message;
    if (f === 'command') f = 'script';
    else if (f.startsWith('env.')) {
      msg = `${f.slice(4)}: ${msg}`;
      f = 'env';
    }
    else if (f.startsWith('mounts')) f = 'mounts';
    if (!f) rest.push(e);
    else byField.set(f, byField.has(f) ? `${byField.get(f)} · ${msg}` : msg);
  }
  const errors = [...[...byField].map(([f, message]) => ({ field: f, message })), ...rest];
  return { status: err.status, errors, message: err.message, retryAfter: err.retryAfter };
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  // ?copy=ID: a job id, or ignored (a hand-edited link must not make the page fail)
  const copyId = UUID_RE.test(ctx.query.get('copy') || '') ? ctx.query.get('copy') : null;
  const [projects, images, clusters, quota, copy] = await Promise.all([
    api.all(tpath(tenant, 'projects')),
    api.get('images', { tenant, limit: 1000 }).then((p) => p.items),
    api.all('clusters'),
    api.get(tpath(tenant, 'quota')),
    copyId ? api.get(tpath(tenant, 'jobs', copyId)).catch(() => null) : null,
  ]);
  let inv = inventory(clusters);
  let res = quota.resources || {};
  const onlyLocal = clusters.length > 0 && clusters.every((c) => c.kind === 'local');

  const gpuTypes = () => [...new Set([
    ...Object.keys(inv),
    ...Object.keys(res).filter((k) => k.startsWith('gpu:')).map((k) => k.slice(4)),
  ])].sort();

  function typeText(type) {
    const i = inv[type];
    const q = res[`gpu:${type}`];
    const free = i ? Math.max(0, i.total - i.allocated) : 0;
    if (!q || !q.limit) return t('jobs.gpu_opt_noquota', { type, free });
    return t('jobs.gpu_opt', { type, free, total: i ? i.total : 0 });
  }

  // --- the form -----------------------------------------------------------
  const nameF = field('name', 'jobs.f.name', { autocomplete: 'off', maxlength: 200,
    placeholder: t('jobs.f.name_ph'), hint: t('jobs.f.name_hint') });
  const projectF = field('project', 'job.project', { kind: 'select',
    options: projects.map((p) => [p.slug, p.name && p.name !== p.slug ? `${p.slug} (${p.name})` : p.slug]) });
  const imagesList = h('datalist', { id: 'jobs-images' },
    images.map((img) => h('option', { value: imageRef(img), label: imageLabel(img) })));
  const imageF = field('image', 'jobs.f.image', { list: 'jobs-images', autocomplete: 'off', spellcheck: 'false',
    autocapitalize: 'none', placeholder: t('jobs.f.image_ph'),
    hint: onlyLocal ? t('jobs.f.image_hint_local') : t('jobs.f.image_hint') });
  const imageInfo = h('div', { class: 'hint', 'aria-live': 'polite' });
  const scriptF = field('script', 'jobs.f.script', { kind: 'textarea', rows: 6, spellcheck: 'false',
    autocapitalize: 'none', placeholder: 'python train.py --epochs 10', hint: t('jobs.f.script_hint') });
  const envF = field('env', 'jobs.f.env', { kind: 'textarea', rows: 3, spellcheck: 'false',
    autocapitalize: 'none', placeholder: 'EPOCHS=10\nWANDB_MODE=offline', hint: t('jobs.f.env_hint') });
  envF.querySelector('.field-error').style.whiteSpace = 'pre-line';

  // storage the job mounts: one group, so the server's mounts[i] problems land in it
  const check = (name, key, vars) => h('label', {}, h('input', { type: 'checkbox', name, value: 'yes' }), ' ', t(key, vars));
  const mountsF = h('fieldset', { class: 'field', dataset: { field: 'mounts' }, 'aria-describedby': 'job-mounts-err' },
    h('legend', {}, t('jobs.f.mounts')),
    h('div', { class: 'checks inline' },
      check('mount_project', 'jobs.f.mount_project'), ' ',
      check('mount_home', 'jobs.f.mount_home', { user: ctx.me.username })),
    h('label', { for: 'job-datasets' }, t('jobs.f.datasets')),
    h('input', { id: 'job-datasets', name: 'datasets', autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none',
      placeholder: 'imagenet, coco', 'aria-describedby': 'job-datasets-hint job-mounts-err' }),
    h('small', { id: 'job-datasets-hint', class: 'hint' }, t('jobs.f.datasets_hint')),
    h('span', { id: 'job-mounts-err', class: 'field-error', role: 'alert' }));

  const gpuTypeF = field('gpu_type', 'jobs.f.gpu_type', { kind: 'select',
    options: [['', t('jobs.f.no_gpu')], ...gpuTypes().map((g) => [g, typeText(g)])] });
  const gpusF = field('gpus', 'jobs.f.gpus', { type: 'number', min: 0, max: 64, step: 1, value: '0',
    inputmode: 'numeric', hint: ' ' });
  const cpusF = field('cpus', 'jobs.f.cpus', { type: 'number', min: 1, step: 1, value: '1', inputmode: 'numeric' });
  const memF = field('memory_gib', 'jobs.f.memory', { type: 'number', min: 1, step: 1, value: '4', inputmode: 'numeric' });
  const timeF = field('time_limit_minutes', 'jobs.f.time', { type: 'number', min: 1, step: 1, value: '60',
    inputmode: 'numeric', hint: t('jobs.f.time_hint') });
  const prioF = field('priority', 'jobs.f.priority', { kind: 'select',
    options: [['normal', t('jobs.prio.normal')], ['high', t('jobs.prio.high')], ['low', t('jobs.prio.low')]],
    hint: t('jobs.f.priority_hint') });
  const gpuHint = gpusF.querySelector('.hint');

  const availSlot = h('div', {});
  const formError = h('p', { class: 'form-error', role: 'alert' });
  const submit = h('button', { type: 'submit' }, t('jobs.submit.button'));

  const whatId = 'jobs-what';
  const resId = 'jobs-res';
  const form = h('form', { id: 'job-form', novalidate: true },
    h('section', { class: 'card', 'aria-labelledby': whatId },
      h('h2', { id: whatId }, t('jobs.submit.what')),
      h('div', { class: 'form-grid' },
        // a grid of their own: two fields share the row (the wide rows below would
        // keep every column of the outer grid, leaving the project names a fifth)
        h('div', { class: 'wide form-grid' }, nameF, projectF),
        h('div', { class: 'wide' }, imageF, imageInfo, imagesList),
        h('div', { class: 'wide' }, scriptF),
        h('div', { class: 'wide' }, envF),
        h('div', { class: 'wide' }, mountsF))),
    h('section', { class: 'card', 'aria-labelledby': resId },
      h('h2', { id: resId }, t('jobs.submit.resources')),
      h('div', { class: 'form-grid' }, gpuTypeF, gpusF, cpusF, memF, timeF, prioF),
      h('h3', {}, t('jobs.avail.title')),
      availSlot,
      h('p', { class: 'note' }, t('jobs.avail.borrow_note'))),
    h('div', { class: 'actions' }, submit,
      h('a', { href: '#/jobs', class: 'button secondary' }, t('app.cancel'))),
    formError);

  const F = form.elements; // form.name would be the form's own name attribute
  if (!projects.length) form.prepend(h('p', { class: 'alert', role: 'alert' }, t('jobs.submit.no_projects')));

  // --- live parts -----------------------------------------------------------
  function drawImageInfo() {
    const ref = F.image.value.trim();
    if (!ref) return clear(imageInfo, onlyLocal ? '' : t('jobs.img.none'));
    const img = images.find((i) => imageRef(i) === ref || `${i.repository}@${i.digest}` === ref);
    if (!img) return clear(imageInfo, t('jobs.img.unknown'));
    const labels = Object.entries(img.labels || {});
    clear(imageInfo,
      h('strong', {}, imageRef(img)), ' — ', imageLabel(img),
      img.size_bytes ? ` · ${fmtNum(img.size_bytes / 2 ** 30, 1)} GiB` : '',
      labels.length ? h('ul', {}, labels.map(([k, v]) => h('li', {}, h('code', {}, k), ' = ', String(v)))) : null);
  }

  function drawGpuHint() {
    const type = F.gpu_type.value;
    if (!type) return (gpuHint.textContent = t('jobs.f.gpus_hint_none'));
    const i = inv[type] || { total: 0, allocated: 0 };
    const q = res[`gpu:${type}`];
    gpuHint.textContent = t('jobs.f.gpus_hint', {
      free: Math.max(0, i.total - i.allocated), total: i.total, type,
      limit: q && q.limit !== null && q.limit !== undefined ? fmtNum(q.limit) : 0,
      guaranteed: q ? fmtNum(q.guaranteed || 0) : 0,
    });
  }

  function drawAvail() {
    const rows = gpuTypes().map((type) => {
      const i = inv[type] || { total: 0, allocated: 0, down: 0 };
      const q = res[`gpu:${type}`] || {};
      return { type, free: Math.max(0, i.total - i.allocated), total: i.total, down: i.down || 0,
        used: q.used || 0, guaranteed: q.guaranteed || 0, limit: q.limit || 0, borrowed: q.borrowed || 0 };
    });
    const tbl = table([
      { label: t('jobs.avail.type'), key: 'type' },
      { label: t('jobs.avail.free'), render: (r) => t('jobs.avail.free_of', { free: r.free, total: r.total }) +
        (r.down ? ` (${t('jobs.avail.down', { n: r.down })})` : '') },
      { label: t('jobs.avail.tenant_used'), render: (r) => fmtNum(r.used) + (r.borrowed ? ` (${t('jobs.avail.borrowed', { n: fmtNum(r.borrowed) })})` : '') },
      { label: t('jobs.avail.guaranteed'), render: (r) => fmtNum(r.guaranteed) },
      { label: t('jobs.avail.limit'), render: (r) => (r.limit ? fmtNum(r.limit) : t('jobs.avail.no_access')) },
    ], rows, { caption: t('jobs.avail.title'), empty: 'jobs.avail.none' });
    const old = availSlot.querySelector('tbody');
    const fresh = tbl.querySelector && tbl.querySelector('tbody');
    if (old && fresh) {
      if (old.textContent !== fresh.textContent) old.replaceWith(fresh);
    } else clear(availSlot, tbl);
  }

  function refreshTypeOptions() {
    for (const o of F.gpu_type.options) if (o.value) o.textContent = typeText(o.value);
  }

  F.image.addEventListener('input', drawImageInfo);
  F.gpu_type.addEventListener('change', () => {
    drawGpuHint();
    if (F.gpu_type.value && F.gpus.value === '0') F.gpus.value = '1';
    if (!F.gpu_type.value) F.gpus.value = '0';
  });

  // --- prefill: a copy of an earlier job, or sensible defaults --------------
  if (copy) {
    const r = copy.resources || {};
    F.name.value = `${copy.name}`;
    if (projects.some((p) => p.slug === copy.project)) F.project.value = copy.project;
    F.image.value = copy.image || '';
    // a command array becomes one shell line, each argument quoted when it needs it
    F.script.value = copy.script || (copy.command || [])
      .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, "'\\''")}'`)).join(' ');
    F.env.value = Object.entries(copy.env || {}).filter(([, v]) => v !== '(hidden)').map(([k, v]) => `${k}=${v}`).join('\n');
    if (r.gpu_type && ![...F.gpu_type.options].some((o) => o.value === r.gpu_type))
      F.gpu_type.append(h('option', { value: r.gpu_type }, r.gpu_type));
    F.gpu_type.value = r.gpu_type || '';
    F.gpus.value = String(r.gpus ?? 0);
    F.cpus.value = String(r.cpus ?? 1);
    F.memory_gib.value = String(r.memory_gib ?? 4);
    F.time_limit_minutes.value = String(r.time_limit_minutes ?? 60);
    F.priority.value = copy.priority || 'normal';
    const mounts = Array.isArray(copy.mounts) ? copy.mounts : [];
    F.mount_project.checked = mounts.some((m) => m.space === 'project');
    F.mount_home.checked = mounts.some((m) => m.space === 'home');
    F.datasets.value = mounts.filter((m) => m.space === 'dataset' && m.name).map((m) => m.name).join(', ');
  }
  drawImageInfo();
  drawGpuHint();
  drawAvail();

  // --- submit -------------------------------------------------------------
  const idemKey = idempotency();
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const v = Object.fromEntries(new FormData(form).entries());
    const { env, errors } = parseEnv(v.env);
    const datasets = parseDatasets(v.datasets);
    const mine = [];
    if (errors.length) mine.push({ field: 'env', message: errors.join('\n') });
    if (datasets.bad) mine.push({ field: 'mounts', message: t('jobs.f.datasets_bad', { name: datasets.bad }) });
    if (mine.length) {
      showErrors(form, { errors: mine, message: t('app.form_errors') });
      return;
    }
    // the job's own project, the submitter's home, datasets read-only
    const mounts = [];
    if (v.mount_project) mounts.push({ space: 'project' });
    if (v.mount_home) mounts.push({ space: 'home' });
    for (const name of datasets.names) mounts.push({ space: 'dataset', name, read_only: true });
    const body = {
      project: v.project,
      name: (v.name || '').trim(),
      image: (v.image || '').trim() || null,
      script: v.script || '',
      gpus: num((v.gpus || '').trim()),
      gpu_type: v.gpu_type || null,
      cpus: num((v.cpus || '').trim()),
      memory_gib: num((v.memory_gib || '').trim()),
      time_limit_minutes: num((v.time_limit_minutes || '').trim()),
      priority: v.priority || 'normal',
      env,
      mounts: mounts.length ? mounts : undefined,
    };
    for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
    submit.disabled = true;
    try {
      const job = await api.post(tpath(tenant, 'jobs'), body, undefined, idemKey(body));
      if (job && job.approval) {
        toast(t('app.approval_pending'));
        return;
      }
      toast(t('jobs.submit.done', { name: job.name }));
      // the user may have gone elsewhere meanwhile: do not pull them back
      if (ctx.isCurrent()) ctx.go(jobHref(job.tenant || tenant, job.id));
    } catch (err) {
      if (!ctx.isCurrent()) return;
      showErrors(form, mapErrors(err));
      // 422: valid, but nothing could ever run it (GPU type, size, quota): say so first
      if (err.status === 422) formError.textContent = `${t('jobs.submit.e422')} ${formError.textContent}`;
    } finally {
      submit.disabled = false;
    }
  });

  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('jobs.submit.title'), ' · ', tenant)),
    h('p', { class: 'lead' }, copy ? t('jobs.submit.lead_copy', { name: copy.name }) : t('jobs.submit.lead')),
    copy ? '' : templateChooser(tenant, ctx.me), // job templates first (docs/templates.md)
    form);

  // what is free changes as jobs start and end: refresh that part only
  const timer = setInterval(async () => {
    if (document.hidden || !ctx.isCurrent()) return;
    try {
      const [cl, qu] = await Promise.all([api.all('clusters'), api.get(tpath(tenant, 'quota'))]);
      if (!ctx.isCurrent()) return;
      inv = inventory(cl);
      res = qu.resources || {};
      drawAvail();
      drawGpuHint();
      refreshTypeOptions();
    } catch {
      // the next round tries again; the form keeps working
    }
  }, AVAIL_MS);
  ctx.onCleanup(() => clearInterval(timer));
}
