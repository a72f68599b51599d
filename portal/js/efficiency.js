// efficiency.js - a job's efficiency summary (seff-like) for its page: GPU
// utilization and memory (from the cluster's DCGM metrics), CPU and memory
// efficiency (from the job's cgroup at its end), with a bar each and a hint
// where it held much more than it used (docs/efficiency.md).
import { t, fmtNum } from './i18n.js';
import { h } from './ui.js';

const pct = (x) => Math.max(0, Math.min(100, x));
const known = (v) => v !== null && v !== undefined;

function bar(label, percent, line) {
  return h('div', { class: 'quota' },
    h('div', { class: 'quota-head' }, h('strong', {}, label), h('span', {}, line)),
    h('div', { class: 'bar', role: 'img', 'aria-label': `${label}: ${line}` },
      h('span', { class: 'bar-used', style: { width: `${pct(percent)}%` } })));
}

const unknown = (label) => h('div', { class: 'quota' },
  h('div', { class: 'quota-head' }, h('strong', {}, label), h('span', { class: 'hint' }, t('eff.unknown'))));

export function efficiencyView(job) {
  const e = job.efficiency || {};
  const r = job.resources || {};
  const out = [];
  const hints = [];
  if (r.gpus) {
    if (known(e.gpu_util_avg)) {
      out.push(bar(t('eff.gpu_util'), e.gpu_util_avg,
        t('eff.gpu_util_line', { avg: fmtNum(e.gpu_util_avg, 1), peak: fmtNum(e.gpu_util_peak, 1) })));
      if (e.gpu_util_avg < 10) hints.push('eff.hint_gpu');
    } else out.push(unknown(t('eff.gpu_util')));
    out.push(known(e.gpu_mem_peak_gib)
      ? h('p', {}, h('strong', {}, t('eff.gpu_mem')), ' ', t('eff.gib', { n: fmtNum(e.gpu_mem_peak_gib, 1) }))
      : unknown(t('eff.gpu_mem')));
  }
  if (known(e.cpu_efficiency)) {
    const p = e.cpu_efficiency * 100;
    out.push(bar(t('eff.cpu'), p, t('eff.cpu_line', { pct: fmtNum(p, 0), cpus: (r.cpus || 1) * (r.nodes || 1) })));
    if (e.cpu_efficiency < 0.3 && (r.cpus || 1) > 1) hints.push('eff.hint_cpu');
  } else out.push(unknown(t('eff.cpu')));
  if (known(e.mem_efficiency)) {
    const p = e.mem_efficiency * 100;
    out.push(bar(t('eff.mem'), p, t('eff.mem_line', {
      peak: fmtNum(e.mem_peak_gib, 2), req: (r.memory_gib || 0) * (r.nodes || 1), pct: fmtNum(p, 0),
    })));
    if (e.mem_efficiency < 0.25 && (r.memory_gib || 0) > 4) hints.push('eff.hint_mem');
  } else out.push(unknown(t('eff.mem')));
  if (!Object.values(e).some(known)) out.push(h('p', { class: 'hint' }, t('eff.none_yet')));
  for (const k of hints) out.push(h('p', { class: 'note' }, t(k)));
  return h('div', { class: 'efficiency' }, out);
}
