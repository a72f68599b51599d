// audit/common.js - helpers of the audit views: time filters (the browser's
// datetime-local controls <-> the API's RFC 3339), filter forms read into
// query objects, and the outcome badge.
import { t, fmtTime } from '../../i18n.js';
import { h, field } from '../../ui.js';

// A time filter (the browser's local time; sent as RFC 3339). Allowed to
// shrink to its grid column: Chromium's datetime-local is wide by nature.
export function timeField(name, labelKey) {
  const f = field(name, labelKey, { type: 'datetime-local', step: '1', style: { minWidth: '0' } });
  f.style.minWidth = '0';
  return f;
}

// "2026-12-03T14:05" (local, as datetime-local gives it) -> "2026-12-03T06:05:00.000Z".
// Anything unparsable goes to the server as typed, which names the field.
export function toRFC3339(local) {
  if (!local) return undefined;
  const d = new Date(local);
  return isNaN(d) ? local : d.toISOString();
}

// RFC 3339 -> the local "YYYY-MM-DDTHH:MM:SS" a datetime-local control shows.
export function toLocalInput(iso) {
  const d = new Date(iso);
  if (!iso || isNaN(d)) return '';
  const p = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}T${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// The non-empty values of the named controls of form; from/to as RFC 3339.
export function readFilters(form, names) {
  const out = {};
  for (const name of names) {
    const el = form.elements[name];
    if (!el) continue;
    const v = String(el.value || '').trim();
    if (!v) continue;
    out[name] = name === 'from' || name === 'to' ? toRFC3339(v) : v;
  }
  return out;
}

// Fill the named controls of form from query (a URLSearchParams of the hash).
export function fillFilters(form, names, query) {
  for (const name of names) {
    const el = form.elements[name];
    const v = query.get(name);
    if (!el || !v) continue;
    el.value = name === 'from' || name === 'to' ? (toLocalInput(v) || v) : v;
  }
}

const OUTCOMES = ['success', 'denied', 'error'];

export function outcomeBadge(outcome) {
  const cls = outcome === 'success' ? 'state-succeeded' : 'state-failed';
  return h('span', { class: `badge ${cls}` }, OUTCOMES.includes(outcome) ? t(`audit.outcome_${outcome}`) : outcome);
}

export const outcomeOptions = () => [['', t('audit.any')], ...OUTCOMES.map((o) => [o, t(`audit.outcome_${o}`)])];

// The link to #/audit's views, the current one marked.
export function viewNav(current) {
  const views = [['events', '#/audit', 'audit.view_events'], ['commands', '#/audit?view=commands', 'audit.view_commands']];
  return h('nav', { 'aria-label': t('audit.views') },
    h('ul', { class: 'actions', style: { listStyle: 'none', padding: '0', margin: '0 0 1rem' } },
      views.map(([id, href, key]) => h('li', {},
        h('a', { href, class: id === current ? 'button' : 'button secondary', 'aria-current': id === current ? 'page' : null }, t(key))))));
}

// The earliest "from" the widen button sends: before any event aidc can hold.
const ALL_TIME = '2000-01-01T00:00:00.000Z';

// What time range a search covered (the answer's "window": the default is the last
// 30 days), with a button that searches all time instead: it fills the form's
// "from" and runs search(). show(window) after each new search; null hides it.
export function windowNote(form, search) {
  const text = h('span', {});
  const widen = h('button', { type: 'button', class: 'secondary', dataset: { widen: 'all' } }, t('audit.window_all'));
  const el = h('p', { class: 'hint', role: 'status', dataset: { auditWindow: '' }, hidden: true }, text, ' ', widen);
  widen.addEventListener('click', () => {
    form.elements.from.value = toLocalInput(ALL_TIME);
    search();
  });
  function show(w) {
    el.hidden = !w;
    if (!w) return;
    widen.hidden = !w.default;
    if (w.default) text.textContent = t('audit.window_default', { days: 30, from: fmtTime(w.from) });
    else if (w.from && w.to) text.textContent = t('audit.window_between', { from: fmtTime(w.from), to: fmtTime(w.to) });
    else if (w.from) text.textContent = t('audit.window_since', { from: fmtTime(w.from) });
    else if (w.to) text.textContent = t('audit.window_until', { to: fmtTime(w.to) });
    else text.textContent = t('audit.window_all_time');
  }
  return { el, show };
}
