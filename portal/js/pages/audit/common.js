// audit/common.js - helpers of the audit views: time filters (the browser's
// datetime-local controls <-> the API's RFC 3339), filter forms read into
// query objects, and the outcome badge.
import { t } from '../../i18n.js';
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
