// allocations.js - a tenant's allocation requests (#/allocations; docs/allocations.md):
// the "Request resources" form for tenant admins and projects' PIs (Renew fills it
// from an earlier request and shows that one's usage), then the requests, newest
// first, each with what was asked, granted and used (a bar), and its comment thread.
// Also what the platform admins' review queue (platform/allocations.js) shares.
import { api, tpath, idempotency } from '../api.js';
import { t, fmtNum } from '../i18n.js';
import { h, clear, field, badge, handleSubmit, toast, alertBox } from '../ui.js';
import { tenantRole, platformAdmin } from '../roles.js';
import { quotaBar } from './dashboard.js';

const DAY = 86400000;
const iso = (ms) => new Date(ms).toISOString().slice(0, 10);
const num = (v) => (v === null || v === undefined ? null : Number(v));

export const periodText = (r) => t('alloc.period', { from: r.starts_on, to: r.ends_on });

// "2 × gpu:a100, 5000 GPU-hours, 100 GiB" for asked (r) or granted (r.approved)
export function amountsText(a) {
  if (!a) return '—';
  const parts = Object.entries(a.resources || {}).map(([k, v]) => `${fmtNum(v.limit)} × ${k}`);
  if (num(a.gpu_hours) !== null) parts.push(t('alloc.hours', { n: fmtNum(a.gpu_hours) }));
  if (num(a.storage_gib) !== null) parts.push(t('alloc.gib', { n: fmtNum(a.storage_gib) }));
  return parts.join(', ') || '—';
}

// The GPU-hours used within the period against those granted (or asked), as a bar.
export function usageBar(r) {
  const used = (r.usage && r.usage.gpu_hours_used) || 0;
  const granted = num((r.approved || r).gpu_hours);
  const line = granted === null ? t('alloc.usage_open', { used: fmtNum(used) })
    : t('alloc.usage_line', { used: fmtNum(used), granted: fmtNum(granted) });
  return quotaBar(periodText(r), { used, limit: granted, guaranteed: 0, borrowed: 0 }, line, false);
}

export function stateBadges(r) {
  return h('span', {}, badge(r.state),
    r.expires_in_days !== null && r.expires_in_days !== undefined
      ? [' ', h('span', { class: 'badge' }, t('alloc.expires_in', { n: r.expires_in_days }))] : null);
}

// The thread of request r (read with its comments) and a form to add one.
export function thread(r, onChange) {
  const list = (r.comments || []).length
    ? h('ol', { class: 'thread' }, r.comments.map((c) => h('li', {},
      h('strong', {}, c.author), c.kind === 'needs_info' ? [' ', h('em', {}, t('alloc.asked_info'))] : null,
      ': ', c.text)))
    : h('p', { class: 'hint' }, t('alloc.no_comments'));
  const text = field('text', 'alloc.comment', { kind: 'textarea', maxlength: 8000, required: true });
  const form = handleSubmit(h('form', { class: 'stack', novalidate: true }, text,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'secondary' }, t('alloc.comment_send')))),
  async (f) => {
    const out = await api.post(`allocation-requests/${encodeURIComponent(r.id)}/comments`,
      { text: f.elements.text.value });
    await onChange(out);
  });
  return h('div', {}, list, form);
}

function may(me, tenant, project) {
  return platformAdmin(me) || tenantRole(me, tenant) === 'tenant_admin' || project.pi === me.username;
}

function gpuTypes(clusters) {
  const out = new Set();
  for (const c of clusters)
    for (const res of Object.keys(c.inventory || {})) if (res.startsWith('gpu:')) out.add(res.slice(4));
  return [...out].sort();
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  const [projects, clusters] = await Promise.all([
    api.all(tpath(tenant, 'projects')), api.all('clusters').catch(() => []),
  ]);
  const mine = projects.filter((p) => may(ctx.me, tenant, p));
  const types = gpuTypes(clusters);
  const status = h('div', { role: 'status' });
  const listSlot = h('div', {});
  const newKey = idempotency();
  let renews = null;

  const form = h('form', { class: 'stack', novalidate: true, 'aria-labelledby': 'alloc-form-title' },
    h('p', { class: 'hint', id: 'alloc-renewing', hidden: true }),
    field('project', 'alloc.project', { kind: 'select', options: mine.map((p) => [p.slug, p.name || p.slug]) }),
    h('div', { class: 'form-grid' },
      field('gpu_type', 'alloc.gpu_type', { kind: 'select', options: [['', '—'], ...types.map((x) => [x, x])] }),
      field('gpu_count', 'alloc.gpu_count', { type: 'number', min: 0, step: 1 })),
    h('div', { class: 'form-grid' },
      field('gpu_hours', 'alloc.gpu_hours', { type: 'number', min: 0 }),
      field('storage_gib', 'alloc.storage_gib', { type: 'number', min: 0 })),
    h('div', { class: 'form-grid' },
      field('starts_on', 'alloc.starts_on', { type: 'date', required: true }),
      field('ends_on', 'alloc.ends_on', { type: 'date', required: true })),
    field('justification', 'alloc.justification', { kind: 'textarea', maxlength: 8000, required: true }),
    field('funding_ref', 'alloc.funding_ref', { maxlength: 200 }),
    h('div', { class: 'actions' }, h('button', { type: 'submit' }, t('alloc.submit'))));
  const el = form.elements;
  el.starts_on.value = iso(Date.now());
  el.ends_on.value = iso(Date.now() + 180 * DAY);

  handleSubmit(form, async () => {
    const body = { project: el.project.value, starts_on: el.starts_on.value, ends_on: el.ends_on.value,
      justification: el.justification.value.trim() };
    if (el.gpu_type.value && el.gpu_count.value !== '')
      body.resources = { [`gpu:${el.gpu_type.value}`]: { limit: Number(el.gpu_count.value) } };
    if (el.gpu_hours.value !== '') body.gpu_hours = Number(el.gpu_hours.value);
    if (el.storage_gib.value !== '') body.storage_gib = Number(el.storage_gib.value);
    if (el.funding_ref.value.trim()) body.funding_ref = el.funding_ref.value.trim();
    if (renews) body.renews = renews;
    await api.post(tpath(tenant, 'allocation-requests'), body, undefined, newKey(body));
    toast(t('alloc.sent'));
    renews = null;
    form.querySelector('#alloc-renewing').hidden = true;
    await load();
  });

  // Copy request r into the form: the same amounts, the next period of the same length.
  function renew(r) {
    const a = r.approved || r;
    const gpu = Object.entries(a.resources || {}).find(([k]) => k.startsWith('gpu:'));
    el.project.value = r.project;
    el.gpu_type.value = gpu ? gpu[0].slice(4) : '';
    el.gpu_count.value = gpu ? gpu[1].limit : '';
    el.gpu_hours.value = num(a.gpu_hours) ?? '';
    el.storage_gib.value = num(a.storage_gib) ?? '';
    const len = Date.parse(r.ends_on) - Date.parse(r.starts_on);
    const start = Math.max(Date.parse(r.ends_on) + DAY, Date.parse(iso(Date.now())));
    el.starts_on.value = iso(start);
    el.ends_on.value = iso(start + len);
    el.justification.value = r.justification;
    el.funding_ref.value = r.funding_ref || '';
    renews = r.id;
    const note = form.querySelector('#alloc-renewing');
    note.textContent = t('alloc.renewing', { period: periodText(r),
      used: fmtNum((r.usage && r.usage.gpu_hours_used) || 0), granted: fmtNum(num(a.gpu_hours) ?? 0) });
    note.hidden = false;
    el.project.focus();
  }

  function card(r) {
    const headId = `alloc-${r.id}`;
    const project = projects.find((p) => p.slug === r.project);
    const canRenew = ['approved', 'expired'].includes(r.state) && project && may(ctx.me, tenant, project);
    const detail = h('div', {});
    const details = h('details', {}, h('summary', {}, t('alloc.thread')), detail);
    details.addEventListener('toggle', async () => {
      if (!details.open) return;
      const full = await api.get(tpath(tenant, 'allocation-requests', r.id));
      clear(detail,
        h('dl', { class: 'props' },
          h('dt', {}, t('alloc.justification_label')), h('dd', {}, full.justification),
          full.funding_ref ? [h('dt', {}, t('alloc.funding_ref')), h('dd', {}, full.funding_ref)] : null,
          full.reason ? [h('dt', {}, t('alloc.reason_label')), h('dd', {}, full.reason)] : null),
        thread(full, async () => { details.open = false; await load(); }));
    });
    return h('article', { class: 'card', 'aria-labelledby': headId },
      h('h3', { id: headId }, `${r.project} · ${periodText(r)} `, stateBadges(r)),
      h('dl', { class: 'props' },
        h('dt', {}, t('alloc.col.asked')), h('dd', {}, amountsText(r)),
        h('dt', {}, t('alloc.col.granted')), h('dd', {}, amountsText(r.approved)),
        h('dt', {}, t('alloc.col.by')), h('dd', {}, r.requested_by || '—')),
      usageBar(r),
      canRenew ? h('div', { class: 'actions' }, h('button', { type: 'button', class: 'secondary',
        'aria-label': t('alloc.renew_named', { project: r.project, period: periodText(r) }),
        onclick: () => renew(r) }, t('alloc.renew'))) : null,
      details);
  }

  async function load() {
    try {
      const items = await api.all(tpath(tenant, 'allocation-requests'), {}, 500);
      if (!ctx.isCurrent()) return;
      clear(status);
      clear(listSlot, items.length ? items.map(card) : h('p', {}, t('app.none')));
    } catch (err) {
      clear(status, alertBox(err));
    }
  }

  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('alloc.title'), ' · ', tenant)),
    h('p', { class: 'lead' }, t('alloc.lead')),
    h('section', { class: 'card' }, h('h2', { id: 'alloc-form-title' }, t('alloc.form_title')),
      mine.length ? form : h('p', {}, t('alloc.no_project'))),
    h('section', { 'aria-labelledby': 'alloc-history' },
      h('h2', { id: 'alloc-history' }, t('alloc.history')), status, listSlot));
  await load();
}
