// usage.js - what the tenant used: GPU-hours per day stacked by project and by
// GPU type (uPlot bars, stacked here by cumulative sums), totals per resource
// and every report row as a table (the charts' text alternative) with a CSV
// download. Finance and platform admins also see all tenants; platform admins
// the GPU allocation heat map (hour of week x allocation %).
import { api, tpath } from '../api.js';
import { t, fmtNum, lang } from '../i18n.js';
import { h, clear, section, table, field, showErrors, clearErrors, alertBox, download, toast, nextId } from '../ui.js';
import { finance, platformAdmin, tenantReader } from '../roles.js';

// Okabe-Ito: told apart with the common colour-vision deficiencies (yellow left out: too light)
const COLOURS = ['#0072B2', '#E69F00', '#009E73', '#CC79A7', '#56B4E9', '#D55E00', '#000000', '#8C6D31'];
const DAY = 86400;
const UTIL_MAX_DAYS = 93;

const pad = (n) => String(n).padStart(2, '0');
const isoDay = (d) => `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
const parseDay = (s) => (/^\d{4}-\d\d-\d\d$/.test(s || '') ? new Date(`${s}T00:00:00Z`) : null);

export function thisMonth(now = new Date()) {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  return { from: isoDay(from), to: isoDay(now) };
}

export function lastMonth(now = new Date()) {
  const from = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - 1, 1));
  const to = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 0));
  return { from: isoDay(from), to: isoDay(to) };
}

// the API's half-open RFC 3339 range for the days from..to (both included, UTC)
function apiRange(r) {
  const end = new Date(parseDay(r.to).getTime() + DAY * 1000);
  return { from: `${r.from}T00:00:00Z`, to: `${isoDay(end)}T00:00:00Z` };
}

function daysOf(r) {
  const out = [];
  for (let d = parseDay(r.from); d <= parseDay(r.to); d = new Date(d.getTime() + DAY * 1000)) out.push(isoDay(d));
  return out;
}

function unitText(unit) {
  return t(`usage.unit.${unit}`) === `usage.unit.${unit}` ? unit : t(`usage.unit.${unit}`);
}

// Sum quantities of the GPU rows per (day, series key): {keys: [...], byKey: {key: {day: qty}}}
function gpuSeries(rows, keyOf) {
  const byKey = new Map();
  for (const r of rows) {
    if (r.unit !== 'gpu_hour' || !r.key.day) continue;
    const k = keyOf(r);
    if (!byKey.has(k)) byKey.set(k, new Map());
    const m = byKey.get(k);
    m.set(r.key.day, (m.get(r.key.day) || 0) + Number(r.quantity));
  }
  return byKey;
}

// Totals per (group..., resource) over the report's rows.
function totals(rows, groupKeys) {
  const map = new Map();
  for (const r of rows) {
    const id = JSON.stringify([...groupKeys.map((g) => r.key[g]), r.resource]);
    const cur = map.get(id) || { key: Object.fromEntries(groupKeys.map((g) => [g, r.key[g]])), names: r.names || {},
      resource: r.resource, unit: r.unit, quantity: 0 };
    cur.quantity += Number(r.quantity);
    map.set(id, cur);
  }
  return [...map.values()].sort((a, b) => JSON.stringify([...groupKeys.map((g) => a.key[g]), a.resource])
    .localeCompare(JSON.stringify([...groupKeys.map((g) => b.key[g]), b.resource])));
}

/*
 * A stacked bar chart of one quantity per day. uPlot has no stacking: each
 * series is drawn as bars up to the cumulative sum of it and the series
 * before it, the highest first, so the lower ones paint over them.
 */
class StackedChart {
  constructor(titleKey, captionId) {
    this.titleKey = titleKey;
    this.plot = null;
    this.box = h('div', { class: 'chart', role: 'img' });
    this.legend = h('ul', { class: 'legend', style: { flexWrap: 'wrap', listStyle: 'none', padding: '0', margin: '.5rem 0 0' } });
    this.el = h('figure', { class: 'usage-chart', style: { margin: '0 0 1rem' } },
      h('figcaption', { id: captionId }, h('strong', {}, t(titleKey))),
      this.box, this.legend);
    // refit after layout, not inside the observer's callback (no resize loop)
    this.resize = new ResizeObserver(() => requestAnimationFrame(() => this.fit()));
    this.resize.observe(this.box);
  }

  fit() {
    const w = this.box.clientWidth;
    if (this.plot && w > 0 && Math.abs(w - this.plot.width) > 2) this.plot.setSize({ width: w, height: this.height() });
  }

  height() {
    return window.innerWidth < 720 ? 220 : 280;
  }

  // days: ['YYYY-MM-DD'...]; series: [{label, values: [...per day]}]
  draw(days, series, summary) {
    this.destroyPlot();
    clear(this.legend, series.map((s, i) => h('li', { style: { display: 'inline-flex', alignItems: 'center', marginRight: '1rem' } },
      h('span', {
        'aria-hidden': 'true',
        style: { display: 'inline-block', width: '.9rem', height: '.9rem', marginRight: '.35rem', background: COLOURS[i % COLOURS.length], border: '1px solid #1d2330' },
      }),
      h('span', {}, h('span', { class: 'legend-label' }, s.label), ': ',
        h('span', { class: 'legend-value' }, fmtNum(s.values.reduce((a, b) => a + b, 0))),
        ' ', t('usage.gpu_hours')))));
    if (typeof uPlot === 'undefined' || !series.length) {
      clear(this.box, h('p', { class: 'empty' }, series.length ? t('usage.no_chart') : t('usage.no_gpu')));
      this.box.removeAttribute('role');
      this.box.removeAttribute('aria-label');
      this.box.className = '';
      this.box.style.minHeight = '';
      return;
    }
    this.box.setAttribute('role', 'img');
    this.box.className = 'chart';
    this.box.style.minHeight = `${this.height()}px`;  // not .chart's 300 px when the chart is lower
    this.box.setAttribute('aria-label', summary);
    const xs = days.map((d) => parseDay(d).getTime() / 1000);
    const cum = [];
    let run = days.map(() => 0);
    for (const s of series) {
      run = run.map((v, i) => v + s.values[i]);
      // no bar where the series adds nothing (a zero-height bar would still draw its edge)
      cum.push(run.map((v, i) => (s.values[i] > 0 ? v : null)));
    }
    const order = series.map((s, i) => i).reverse();  // the top of the stack first
    const opts = {
      width: Math.max(280, this.box.clientWidth || Math.min(1180, document.documentElement.clientWidth - 80)),
      height: this.height(),
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      scales: {
        x: { time: true, range: (u, min, max) => [min - DAY * 0.6, max + DAY * 0.6] },
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        { stroke: '#1d2330', grid: { stroke: '#e3e7ed' } },
        { stroke: '#1d2330', grid: { stroke: '#e3e7ed' }, label: t('usage.gpu_hours'), size: 56 },
      ],
      series: [{}, ...order.map((i) => ({
        label: series[i].label,
        stroke: COLOURS[i % COLOURS.length],
        fill: COLOURS[i % COLOURS.length],
        width: 1,
        paths: uPlot.paths.bars({ size: [0.7, 48], align: 0 }),
        points: { show: false },
      }))],
    };
    clear(this.box);
    this.plot = new uPlot(opts, [xs, ...order.map((i) => cum[i])], this.box);
  }

  destroyPlot() {
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }

  destroy() {
    this.destroyPlot();
    this.resize.disconnect();
  }
}

function chartSummary(titleKey, r, series) {
  const parts = series.map((s) => `${s.label} ${fmtNum(s.values.reduce((a, b) => a + b, 0))}`);
  const total = series.reduce((a, s) => a + s.values.reduce((x, y) => x + y, 0), 0);
  return t('usage.chart_summary', { title: t(titleKey), from: r.from, to: r.to, parts: parts.join(', ') || '—', total: fmtNum(total) });
}

// Colour of a heat map cell (0..1) and the text colour that reads best on it.
export function heatColour(v) {
  const lo = [247, 251, 255];
  const hi = [8, 48, 107];
  const rgb = lo.map((c, i) => Math.round(c + (hi[i] - c) * Math.max(0, Math.min(1, v))));
  const lin = rgb.map((c) => {
    const s = c / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  const L = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  const ink = (L + 0.05) / 0.05 >= 1.05 / (L + 0.05) ? '#000000' : '#ffffff';
  return { background: `rgb(${rgb.join(',')})`, color: ink };
}

function weekdayNames() {
  // 2024-01-01 was a Monday; the API's rows are isodow 1 (Monday) to 7
  return [...Array(7)].map((_, d) => new Date(Date.UTC(2024, 0, 1 + d))
    .toLocaleDateString(lang(), { weekday: 'short', timeZone: 'UTC' }));
}

// Keep the heat map a grid at any width (style.css folds tables into cards on phones).
const asTable = {
  table: { display: 'table' },
  thead: { display: 'table-header-group', position: 'static', width: 'auto', height: 'auto', overflow: 'visible', clip: 'auto' },
  tbody: { display: 'table-row-group' },
  tr: { display: 'table-row', border: '0', margin: '0' },
  cell: { display: 'table-cell', verticalAlign: 'middle' },
};

function heatTable(util) {
  const days = weekdayNames();
  const hours = [...Array(24).keys()];
  const caption = t('usage.heat_caption');
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption },
    h('table', { class: 'heatmap', style: asTable.table },
      h('caption', {}, caption),
      h('thead', { style: asTable.thead }, h('tr', { style: asTable.tr },
        h('th', { scope: 'col', style: asTable.cell }, t('usage.heat_day')),
        hours.map((hr) => h('th', { scope: 'col', style: { ...asTable.cell, textAlign: 'center' } }, pad(hr))))),
      h('tbody', { style: asTable.tbody }, util.heatmap.utilization.map((row, d) => h('tr', { style: asTable.tr },
        h('th', { scope: 'row', style: asTable.cell }, days[d]),
        row.map((v, hr) => (v === null
          ? h('td', { style: asTable.cell, title: `${days[d]} ${pad(hr)}:00 UTC` }, '–')
          : h('td', {
            style: { ...asTable.cell, ...heatColour(v) },
            title: `${days[d]} ${pad(hr)}:00 UTC: ${fmtNum(v * 100, 1)}%`,
          }, String(Math.round(v * 100))))))))));
}

function heatLegend() {
  return h('ul', { class: 'legend', style: { flexWrap: 'wrap', listStyle: 'none', padding: '0', margin: '.5rem 0 0' } },
    h('li', {}, t('usage.heat_scale')),
    [0, 25, 50, 75, 100].map((p) => h('li', {
      style: { ...heatColour(p / 100), padding: '0 .4rem', border: '1px solid #1d2330' },
    }, `${p}%`)),
    h('li', {}, t('usage.heat_none')));
}

export async function render(ctx) {
  const showTenant = !!ctx.tenant && (tenantReader(ctx.me, ctx.tenant) || finance(ctx.me));
  const showPlatform = finance(ctx.me);
  const showHeat = platformAdmin(ctx.me);
  const charts = [];
  ctx.onCleanup(() => charts.forEach((c) => c.destroy()));

  let range = thisMonth();
  if (parseDay(ctx.query.get('from')) && parseDay(ctx.query.get('to')) && ctx.query.get('from') <= ctx.query.get('to'))
    range = { from: ctx.query.get('from'), to: ctx.query.get('to') };

  // --- the period ---
  const form = h('form', { class: 'filters' },
    field('from', 'usage.from', { type: 'date', value: range.from, required: true }),
    field('to', 'usage.to', { type: 'date', value: range.to, required: true }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, t('usage.show')),
      h('button', { type: 'button', class: 'secondary', onclick: () => pick(thisMonth()) }, t('usage.this_month')),
      h('button', { type: 'button', class: 'secondary', onclick: () => pick(lastMonth()) }, t('usage.last_month'))));
  const fromInput = form.querySelector('[name="from"]');
  const toInput = form.querySelector('[name="to"]');
  const status = h('p', { class: 'hint', role: 'status' });

  function pick(r) {
    fromInput.value = r.from;
    toInput.value = r.to;
    form.requestSubmit();
  }

  // --- the tenant's usage ---
  let tenantSection = null;
  const tenant = {};
  if (showTenant) {
    tenant.byProject = new StackedChart('usage.chart_project', nextId('cap'));
    tenant.byResource = new StackedChart('usage.chart_resource', nextId('cap'));
    charts.push(tenant.byProject, tenant.byResource);
    tenant.totals = h('div', {});
    tenant.rows = h('div', {});
    tenant.csv = h('button', { type: 'button', class: 'secondary' }, t('app.download_csv'));
    tenant.csv.addEventListener('click', () => csv(tenant.csv, tpath(ctx.tenant, 'usage'), 'day,project', `usage-${ctx.tenant}`));
    tenantSection = section('usage.tenant_title',
      h('p', { class: 'hint' }, t('usage.tenant_lead', { tenant: ctx.tenant })),
      h('div', { class: 'grid' }, tenant.byProject.el, tenant.byResource.el),
      h('h3', {}, t('usage.totals')), tenant.totals,
      h('div', { class: 'page-head' }, h('h3', {}, t('usage.rows')), tenant.csv),
      tenant.rows);
    tenantSection.querySelector('h2').append(' · ', ctx.tenant);
  }

  // --- all tenants (finance, platform admins) ---
  let platformSection = null;
  const platform = {};
  if (showPlatform) {
    platform.byTenant = new StackedChart('usage.chart_tenant', nextId('cap'));
    charts.push(platform.byTenant);
    platform.totals = h('div', {});
    platform.csv = h('button', { type: 'button', class: 'secondary' }, t('app.download_csv'));
    platform.csv.addEventListener('click', () => csv(platform.csv, 'usage', 'tenant', 'usage-all-tenants'));
    platformSection = section('usage.platform_title',
      platform.byTenant.el,
      h('div', { class: 'page-head' }, h('h3', {}, t('usage.by_tenant')), platform.csv),
      platform.totals);
  }

  // --- the heat map (platform admins) ---
  let heatSection = null;
  const heat = {};
  if (showHeat) {
    heat.note = h('p', { class: 'hint' });
    heat.body = h('div', {});
    heatSection = section('usage.heat_title', heat.note, heat.body, heatLegend());
  }

  async function csv(button, path, groupBy, stem) {
    button.disabled = true;
    try {
      const q = { ...apiRange(range), group_by: groupBy, format: 'csv' };
      const res = await api.text(path, q);
      download(`${stem}-${range.from}-${range.to}.csv`, res.text, 'text/csv');
    } catch (err) {
      toast(err.message);
    } finally {
      button.disabled = false;
    }
  }

  function drawTenant(report) {
    const days = daysOf(range);
    const projects = gpuSeries(report.rows, (r) => r.key.project);
    const names = {};
    for (const r of report.rows) if (r.names && r.names.project) names[r.key.project] = r.names.project;
    const projSeries = [...projects.keys()].sort().map((p) => ({
      label: names[p] && names[p] !== p ? `${p} (${names[p]})` : p,
      values: days.map((d) => projects.get(p).get(d) || 0),
    }));
    tenant.byProject.draw(days, projSeries, chartSummary('usage.chart_project', range, projSeries));
    const types = gpuSeries(report.rows, (r) => r.resource);
    const typeSeries = [...types.keys()].sort().map((k) => ({ label: k, values: days.map((d) => types.get(k).get(d) || 0) }));
    tenant.byResource.draw(days, typeSeries, chartSummary('usage.chart_resource', range, typeSeries));
    clear(tenant.totals, table([
      { label: t('usage.resource'), render: (r) => r.resource },
      { label: t('usage.quantity'), render: (r) => fmtNum(r.quantity, 3) },
      { label: t('usage.unit'), render: (r) => unitText(r.unit) },
    ], totals(report.rows, []), { caption: t('usage.totals'), empty: 'usage.none' }));
    const rows = [...report.rows].sort((a, b) => (a.key.day + a.key.project + a.resource)
      .localeCompare(b.key.day + b.key.project + b.resource));
    clear(tenant.rows, table([
      { label: t('usage.day'), render: (r) => r.key.day },
      { label: t('job.project'), render: (r) => (r.names && r.names.project && r.names.project !== r.key.project
        ? `${r.key.project} (${r.names.project})` : r.key.project) },
      { label: t('usage.resource'), render: (r) => r.resource },
      { label: t('usage.quantity'), render: (r) => fmtNum(r.quantity, 3) },
      { label: t('usage.unit'), render: (r) => unitText(r.unit) },
    ], rows, { caption: t('usage.rows'), empty: 'usage.none', rowAttrs: (r) => ({ dataset: { day: r.key.day, project: r.key.project, resource: r.resource } }) }));
    tenant.csv.hidden = !rows.length;
  }

  function drawPlatform(report) {
    const days = daysOf(range);
    const tenants = gpuSeries(report.rows, (r) => r.key.tenant);
    const tSeries = [...tenants.keys()].sort().map((k) => ({ label: k, values: days.map((d) => tenants.get(k).get(d) || 0) }));
    platform.byTenant.draw(days, tSeries, chartSummary('usage.chart_tenant', range, tSeries));
    const rows = totals(report.rows, ['tenant']);
    clear(platform.totals, table([
      { label: t('usage.tenant'), render: (r) => (r.names.tenant && r.names.tenant !== r.key.tenant
        ? `${r.key.tenant} (${r.names.tenant})` : r.key.tenant) },
      { label: t('usage.resource'), render: (r) => r.resource },
      { label: t('usage.quantity'), render: (r) => fmtNum(r.quantity, 3) },
      { label: t('usage.unit'), render: (r) => unitText(r.unit) },
    ], rows, { caption: t('usage.by_tenant'), empty: 'usage.none' }));
    platform.csv.hidden = !rows.length;
  }

  function utilRange() {
    const r = apiRange(range);
    const now = Date.now();
    const nextHour = Math.ceil(now / 3600e3) * 3600e3;
    let to = Math.min(Date.parse(r.to), nextHour);
    let from = Math.max(Date.parse(r.from), to - UTIL_MAX_DAYS * DAY * 1000);
    if (to <= from) {  // a period wholly in the future: the last week instead
      to = nextHour;
      from = to - 7 * DAY * 1000;
    }
    return { from: new Date(from).toISOString().replace('.000Z', 'Z'), to: new Date(to).toISOString().replace('.000Z', 'Z') };
  }

  function drawHeat(util) {
    const total = util.total || {};
    heat.note.textContent = t('usage.heat_note', {
      from: util.from.slice(0, 16).replace('T', ' '), to: util.to.slice(0, 16).replace('T', ' '),
      pct: total.utilization === null || total.utilization === undefined ? '—' : fmtNum(total.utilization * 100, 1),
      alloc: fmtNum(total.allocated_gpu_hours), cap: fmtNum(total.capacity_gpu_hours),
    });
    clear(heat.body, heatTable(util));
  }

  let seq = 0;
  async function load() {
    const mine = ++seq;
    const q = apiRange(range);
    const jobs = [
      showTenant ? api.get(tpath(ctx.tenant, 'usage'), { ...q, group_by: 'day,project' }) : null,
      showPlatform ? api.get('usage', { ...q, group_by: 'day,tenant' }) : null,
      showHeat ? api.get('usage/utilization', utilRange()) : null,
    ];
    const sections = [tenantSection, platformSection, heatSection].filter(Boolean);
    sections.forEach((s) => s.setAttribute('aria-busy', 'true'));
    const [tr, pr, ur] = await Promise.allSettled(jobs.map((p) => p || Promise.resolve(null)));
    if (mine !== seq || !ctx.isCurrent()) return;
    sections.forEach((s) => s.removeAttribute('aria-busy'));
    const failed = [tr, pr, ur].find((x) => x.status === 'rejected');
    if (failed && failed.reason && failed.reason.errors && failed.reason.errors.length) {
      showErrors(form, failed.reason);  // from/to the server refused: next to the fields
      return;
    }
    if (showTenant) {
      if (tr.status === 'fulfilled') drawTenant(tr.value);
      else clear(tenant.rows, alertBox(tr.reason));
    }
    if (showPlatform) {
      if (pr.status === 'fulfilled') drawPlatform(pr.value);
      else clear(platform.totals, alertBox(pr.reason));
    }
    if (showHeat) {
      if (ur.status === 'fulfilled') drawHeat(ur.value);
      else clear(heat.body, alertBox(ur.reason));
    }
    status.textContent = t('usage.showing', { from: range.from, to: range.to });
  }

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const r = { from: fromInput.value, to: toInput.value };
    const errors = [];
    if (!parseDay(r.from)) errors.push({ field: 'from', message: t('usage.need_date') });
    if (!parseDay(r.to)) errors.push({ field: 'to', message: t('usage.need_date') });
    else if (parseDay(r.from) && r.to < r.from) errors.push({ field: 'to', message: t('usage.to_before_from') });
    if (errors.length) {
      showErrors(form, { errors, message: t('app.form_errors') });
      return;
    }
    range = r;
    history.replaceState(null, '', `#/usage?from=${r.from}&to=${r.to}`);
    const button = form.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      await load();
    } finally {
      button.disabled = false;
    }
  });

  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('usage.title'))),
    h('section', { class: 'card', 'aria-label': t('usage.period') }, form,
      h('p', { class: 'hint' }, t('usage.utc')), status),
    ...[tenantSection, platformSection, heatSection].filter(Boolean));
  if (!tenantSection && !platformSection && !heatSection) ctx.main.append(h('p', { class: 'empty' }, t('usage.nothing')));
  await load();
}
