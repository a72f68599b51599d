// dashboard.js - the tenant at a glance: quota per GPU type as bars (used up
// to the guarantee, borrowed beyond it, the limit as the bar's end), my
// running and queued jobs, and this month's GPU-hours against the budget.
import { api, tpath } from '../api.js';
import { t, fmtNum, fmtTime } from '../i18n.js';
import { h, section, table, badge } from '../ui.js';
import { canSubmit } from '../roles.js';

function pct(x, of) {
  return of > 0 ? Math.max(0, Math.min(100, (100 * x) / of)) : 0;
}

// line: the words under the bar (default: used / guaranteed / limit / borrowed)
export function quotaBar(name, q, line, legend = true) {
  const limit = q.limit ?? Math.max(q.guaranteed || 0, q.used || 0);
  const borrowed = q.borrowed || 0;
  const own = Math.max(0, (q.used || 0) - borrowed);
  line = line || t('dash.quota_line', {
    used: fmtNum(q.used), guaranteed: fmtNum(q.guaranteed), limit: q.limit === null ? '∞' : fmtNum(q.limit),
    borrowed: fmtNum(borrowed),
  });
  return h('div', { class: 'quota' },
    h('div', { class: 'quota-head' }, h('strong', {}, name), h('span', {}, line)),
    h('div', { class: 'bar', role: 'img', 'aria-label': `${name}: ${line}` },
      h('span', { class: 'bar-used', style: { width: `${pct(own, limit)}%` } }),
      h('span', { class: 'bar-borrowed', style: { width: `${pct(borrowed, limit)}%` } }),
      h('span', { class: 'bar-guarantee', style: { left: `${pct(q.guaranteed || 0, limit)}%` } })),
    legend && h('div', { class: 'legend' },
      h('span', { class: 'key key-used' }, t('dash.used')),
      h('span', { class: 'key key-borrowed' }, t('dash.borrowed')),
      h('span', { class: 'key key-guarantee' }, t('dash.guaranteed'))));
}

export function jobTable(ctx, jobs) {
  return table([
    { label: t('job.name'), render: (j) => h('a', { href: `#/jobs/${ctx.tenant}/${j.id}` }, j.name || j.id.slice(0, 8)) },
    { label: t('job.state'), render: (j) => badge(j.state) },
    { label: t('job.project'), key: 'project' },
    { label: t('job.gpus'), render: (j) => `${j.resources.gpus}${j.resources.gpu_type ? ` × ${j.resources.gpu_type}` : ''}` },
    { label: t('job.reason'), render: (j) => j.reason || '—' },
    { label: t('job.submitted'), render: (j) => fmtTime(j.submitted_at) },
  ], jobs, { caption: t('dash.my_jobs'), empty: 'dash.no_jobs' });
}

export async function render(ctx) {
  // every state of a job not finished yet (the list filters one state at a time)
  const [quota, ...open] = await Promise.all([
    api.get(tpath(ctx.tenant, 'quota')),
    ...['running', 'pending', 'admitted', 'preempted', 'queued'].map((state) =>
      api.get(tpath(ctx.tenant, 'jobs'), { user: ctx.me.username, state, limit: 50 })),
  ]);
  const res = quota.resources || {};
  const gpus = Object.keys(res).filter((k) => k.startsWith('gpu:')).sort();
  const budget = res.gpu_hours_month;
  ctx.main.append(
    h('div', { class: 'page-head' },
      h('h1', {}, t('dash.title'), ' · ', ctx.tenant),
      canSubmit(ctx.me, ctx.tenant) ? h('a', { class: 'button', href: '#/jobs/new' }, t('dash.submit')) : null),
    h('div', { class: 'grid' },
      section('dash.quota', gpus.length ? gpus.map((g) => quotaBar(g, res[g])) : h('p', {}, t('dash.no_quota'))),
      section('dash.month',
        h('p', { class: 'big' }, fmtNum(budget ? budget.used : 0), ' ', t('dash.gpu_hours')),
        budget && budget.limit !== null
          ? quotaBar(t('dash.budget'), { ...budget, guaranteed: 0, borrowed: 0 },
            t('dash.budget_line', { used: fmtNum(budget.used), limit: fmtNum(budget.limit) }), false)
          : h('p', {}, t('dash.no_budget')))),
    section('dash.my_jobs', jobTable(ctx, open.flatMap((page) => page.items))));
}
