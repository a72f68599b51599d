// jobarray.js - a job page's array and dependency parts: an array parent's tasks (their
// counts by state and a table of every task, read from ?array_parent= with the page's
// refresh), a task's line back to its array, and what a job waits for (depends_on).
import { api, tpath } from '../api.js';
import { t } from '../i18n.js';
import { h, table, badge } from '../ui.js';
import { jobHref, reasonText, durationText } from './jobs.js';

const COUNTS = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const TASKS_MAX = 1000; // one page: the API's largest; more is said, not listed

// The tasks of the array parent job (or null for any other job).
export async function loadTasks(tenant, job) {
  if (!job.array) return null;
  const page = await api.get(tpath(tenant, 'jobs'), { array_parent: job.id, sort: 'submitted', order: 'asc', limit: TASKS_MAX });
  return { items: page.items.sort((a, b) => a.array_index - b.array_index), more: !!page.next_cursor };
}

// "3/10 done" of an array parent's counts
export function arrayProgress(job) {
  const c = job.array_tasks || {};
  const done = (c.succeeded || 0) + (c.failed || 0) + (c.cancelled || 0);
  return t('jobs.arr.progress', { done, n: job.array ? job.array.count : 0 });
}

// The card's content for an array parent.
export function tasksView(tenant, job, tasks) {
  const c = job.array_tasks || {};
  const counts = h('p', { class: 'array-counts' },
    t('jobs.arr.lead', { n: job.array.count, m: job.array.max_parallel }), ' ',
    COUNTS.flatMap((s) => (c[s] ? [badge(s === 'running' ? 'running' : s), ` ${c[s]} `] : [])));
  if (!tasks) return [counts];
  return [counts,
    table([
      { label: t('jobs.arr.index'), render: (j) => h('a', { href: jobHref(tenant, j.id) }, `#${j.array_index}`) },
      { label: t('job.state'), render: (j) => badge(j.state) },
      { label: t('job.reason'), render: (j) => (j.reason ? reasonText(j.reason) : '—') },
      { label: t('jobs.waited'), render: (j) => durationText(j.wait_seconds) },
      { label: t('jobs.ran'), render: (j) => durationText(j.run_seconds) },
      { label: t('jobs.p.exit_code'), render: (j) => (j.exit_code === null || j.exit_code === undefined ? '—' : String(j.exit_code)) },
    ], tasks.items, { caption: t('jobs.arr.tasks'), empty: 'jobs.arr.none' }),
    tasks.more ? h('p', { class: 'hint' }, t('jobs.arr.more', { n: TASKS_MAX })) : null];
}

// Lines for the job's details: its array (a task) and what it depends on.
export function relationLines(tenant, job) {
  const out = [];
  if (job.array_parent)
    out.push(h('p', {}, t('jobs.arr.task_of', { i: job.array_index }), ' ',
      h('a', { href: jobHref(tenant, job.array_parent) }, job.array_parent.slice(0, 8))));
  if (job.depends_on && job.depends_on.length)
    out.push(h('p', {}, t('jobs.dep.lead')),
      h('ul', { class: 'deps' }, job.depends_on.map((d) => h('li', {},
        h('a', { href: jobHref(tenant, d.job) }, d.job.slice(0, 8)), ' — ', t(`jobs.dep.${d.condition}`)))));
  return out;
}
