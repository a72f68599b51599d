// capacity.js - the cluster view (#/capacity; docs/efficiency.md): per GPU type a bar
// of GPUs in use and free, the queued demand and the earliest start of a 1- and an
// 8-GPU job (GET /capacity: sums over every tenant, for anyone signed in); for
// platform admins the nodes and every tenant's jobs idling on their GPUs, for a
// tenant's admins that tenant's idle jobs.
import { api, tpath } from '../api.js';
import { t, fmtTime, fmtNum } from '../i18n.js';
import { h, table, section } from '../ui.js';
import { platformAdmin, tenantAdmin } from '../roles.js';

const pct = (n, total) => (total > 0 ? Math.max(0, Math.min(100, (100 * n) / total)) : 0);

function startText(ts) {
  if (!ts) return t('cap.never');
  return new Date(ts).getTime() <= Date.now() + 60000 ? t('cap.now') : fmtTime(ts);
}

function typeCard(it) {
  const line = t('cap.line', { in_use: it.in_use, total: it.total, free: it.free });
  const s = it.earliest_start || {};
  return h('div', { class: 'quota capacity-type', 'data-gpu-type': it.gpu_type },
    h('div', { class: 'quota-head' }, h('strong', {}, it.gpu_type), h('span', {}, line)),
    h('div', { class: 'bar', role: 'img', 'aria-label': `${it.gpu_type}: ${line}` },
      h('span', { class: 'bar-used', style: { width: `${pct(it.in_use, it.total)}%` } })),
    h('div', { class: 'legend' },
      h('span', { class: 'key key-used' }, t('cap.in_use')),
      h('span', { class: 'key key-free' }, t('cap.free'))),
    h('dl', { class: 'props' },
      h('dt', {}, t('cap.queued')), h('dd', {}, t('cap.queued_n', { n: it.queued_gpus })),
      h('dt', {}, t('cap.start1')), h('dd', { class: 'start-1' }, startText(s['1'])),
      h('dt', {}, t('cap.start8')), h('dd', { class: 'start-8' }, startText(s['8']))));
}

function idleTable(rows, withTenant) {
  const cols = [
    { label: t('job.name'), render: (j) => h('a', { href: `#/jobs/${j.tenant}/${j.id}` }, j.name) },
    { label: t('job.user'), key: 'user' },
    { label: t('job.gpus'), render: (j) => `${j.gpus} × ${j.gpu_type}` },
    { label: t('cap.idle_since'), render: (j) => fmtTime(j.idle_since) },
    { label: t('cap.util_max'), render: (j) => `${fmtNum(j.gpu_util_max, 1)} %` },
  ];
  if (withTenant) cols.splice(1, 0, { label: t('cap.tenant'), key: 'tenant' });
  return table(cols, rows, { caption: t('cap.idle'), empty: 'cap.idle_none' });
}

export async function render(ctx) {
  const admin = platformAdmin(ctx.me);
  const tadmin = !admin && ctx.tenant && tenantAdmin(ctx.me, ctx.tenant);
  const [cap, nodes, idle] = await Promise.all([
    api.get('capacity'),
    admin ? api.get('capacity/nodes') : null,
    admin ? api.all('efficiency/idle') : tadmin ? api.all(tpath(ctx.tenant, 'efficiency/idle')) : null,
  ]);
  const items = cap.items || [];
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('cap.title'))),
    h('p', { class: 'lead' }, t('cap.lead')),
    section('cap.by_type', items.length ? items.map(typeCard) : h('p', { class: 'empty' }, t('cap.none'))));
  if (idle) ctx.main.append(section('cap.idle', h('p', { class: 'hint' }, t('cap.idle_lead')), idleTable(idle, admin)));
  if (nodes) {
    ctx.main.append(section('cap.nodes', table([
      { label: t('cap.cluster'), key: 'cluster' },
      { label: t('cap.node'), key: 'node' },
      { label: t('cap.gpu_type'), render: (n) => n.gpu_type || '—' },
      { label: t('cap.gpus'), key: 'gpus' },
      { label: t('cap.usable'), render: (n) => t(n.usable ? 'cap.usable_yes' : 'cap.usable_no') },
      { label: t('cap.jobs'), render: (n) => (n.jobs === null ? '—' : String(n.jobs)) },
      { label: t('cap.gpus_in_use'), render: (n) => (n.gpus_in_use === null ? '—' : String(n.gpus_in_use)) },
    ], nodes.items || [], { caption: t('cap.nodes') })));
  }
}
