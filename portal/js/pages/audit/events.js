// audit/events.js - search the audit events with every filter of
// GET /audit/events (newest first, keyset "load more"), each event's details
// expandable, and exports (NDJSON or CSV) of everything the search on screen
// matches, checked through api.js before the browser downloads the stream.
import { api, BASE } from '../../api.js';
import { t, fmtTime } from '../../i18n.js';
import { h, clear, field, section, showErrors, clearErrors, errorText } from '../../ui.js';
import { pagedList, replaceHashQuery } from '../finance/common.js';
import { timeField, readFilters, fillFilters, windowNote, outcomeBadge, outcomeOptions } from './common.js';

export const EVENT_FILTERS = ['actor', 'tenant', 'action', 'outcome', 'source_ip', 'from', 'to', 'q',
  'resource_type', 'resource_id'];

const dash = (v) => (v === null || v === undefined || v === '' ? '—' : String(v));

function prop(key, value) {
  return [h('dt', {}, t(key)), h('dd', {}, value)];
}

function actorText(a) {
  if (!a) return '—';
  if (a.user) return a.user;
  return a.token_id ? t('audit.token_only', { id: a.token_id }) : t('audit.system');
}

function resourceText(r) {
  if (!r || (!r.type && !r.id)) return null;
  return [r.type, r.id].filter(Boolean).join(' ');
}

function eventItem(e) {
  const actor = e.actor || {};
  const resource = resourceText(e.resource);
  const d = e.details && Object.keys(e.details).length ? JSON.stringify(e.details, null, 2) : null;
  return h('li', {},
    h('details', { class: 'card', dataset: { eventId: String(e.id) } },
      h('summary', {},
        h('strong', {}, e.action), ' ', outcomeBadge(e.outcome), ' · ',
        actorText(actor), e.tenant ? ` · ${e.tenant}` : '', resource ? ` · ${resource}` : '', ' · ',
        h('time', { datetime: e.ts }, fmtTime(e.ts))),
      h('dl', { class: 'props', style: { marginTop: '.75rem' } },
        prop('audit.time', [fmtTime(e.ts), ' ', h('small', { class: 'hint' }, e.ts)]),
        prop('audit.action', h('code', {}, e.action)),
        prop('audit.outcome', [outcomeBadge(e.outcome), e.status ? ` (HTTP ${e.status})` : '']),
        prop('audit.actor_user', dash(actor.user)),
        prop('audit.actor_token', actor.token_id ? h('code', {}, actor.token_id) : '—'),
        prop('audit.actor_roles', actor.roles && actor.roles.length ? actor.roles.join(', ') : '—'),
        prop('app.tenant', dash(e.tenant)),
        prop('audit.source_ip', dash(e.source_ip)),
        prop('audit.user_agent', dash(e.user_agent)),
        prop('audit.request_id', e.request_id ? h('code', {}, e.request_id) : '—'),
        prop('audit.resource_type', dash(e.resource && e.resource.type)),
        prop('audit.resource_id', e.resource && e.resource.id ? h('code', {}, e.resource.id) : '—'),
        prop('audit.status', dash(e.status)),
        prop('audit.event_id', String(e.id)),
        prop('audit.chain', e.seq !== null && e.seq !== undefined
          ? [t('audit.seq', { seq: e.seq }), h('br'), h('code', { style: { wordBreak: 'break-all' } }, e.hash || '')]
          : t('audit.not_sealed')),
        e.record_id ? prop('audit.record_id', h('code', {}, e.record_id)) : null),
      d ? [h('h3', {}, t('audit.details')), h('pre', { class: 'example' }, d)] : null));
}

function exportHref(filters, format) {
  const q = new URLSearchParams({ ...filters, format });
  return `${BASE}/audit/events/export?${q}`;
}

export async function eventsPart(ctx) {
  const form = h('form', { class: 'form-grid', role: 'search', 'aria-label': t('audit.events_filters'), novalidate: true },
    field('actor', 'audit.actor', { autocomplete: 'off', hint: t('audit.actor_hint') }),
    field('tenant', 'app.tenant', { autocomplete: 'off' }),
    field('action', 'audit.action', { autocomplete: 'off', hint: t('audit.action_hint') }),
    field('outcome', 'audit.outcome', { kind: 'select', options: outcomeOptions() }),
    field('source_ip', 'audit.source_ip', { autocomplete: 'off', hint: t('audit.source_ip_hint') }),
    timeField('from', 'audit.from'),
    timeField('to', 'audit.to'),
    field('q', 'audit.q', { type: 'search', autocomplete: 'off', hint: t('audit.q_hint') }),
    field('resource_type', 'audit.resource_type', { autocomplete: 'off' }),
    field('resource_id', 'audit.resource_id', { autocomplete: 'off' }),
    h('div', { class: 'actions wide' },
      h('button', { type: 'submit' }, t('audit.search')),
      h('button', { type: 'reset', class: 'secondary' }, t('audit.clear'))));
  fillFilters(form, EVENT_FILTERS, ctx.query);

  const list = h('ul', { style: { listStyle: 'none', padding: '0', margin: '0' }, 'aria-label': t('audit.events') });
  // the filters are read when Search is pressed; "Load more" and the exports use
  // the query of the search on screen (pagedList keeps it), not the form as edited since
  // the time range the search on screen covered (the API's default: the last 30 days)
  const note = windowNote(form, () => search());
  const paged = pagedList(
    (cursor, query) => api.get('audit/events', { ...query, limit: 50, cursor }).then((page) => {
      if (!cursor) note.show(page.window || null);
      return page;
    }),
    (added, all, reset) => {
      if (reset) {
        clear(list);
        clear(paged.body, all.length ? list : h('p', { class: 'empty' }, t('audit.no_events')));
      }
      list.append(...added.map(eventItem));
    },
    { countKey: 'audit.event_count' });

  // Exports: the server streams them straight into a file (never into this page's
  // memory), so the browser itself has to fetch them, outside api.js. A failure
  // there (an expired session, a refused filter, 429, 503) would become a saved
  // error document or a vague "failed download": the same query is asked of
  // GET /audit/events first (limit 1), through api.js (a 401 signs out, the rest
  // is shown here), and only then the download starts.
  const exportStatus = h('p', { class: 'hint', role: 'status' });
  const exportProblem = h('div', {});
  function exportButton(format, key) {
    const b = h('button', { type: 'button', class: 'secondary', dataset: { format } }, t(key));
    b.addEventListener('click', async () => {
      if (b.getAttribute('aria-disabled') === 'true') return;
      const query = paged.query();
      // aria-disabled, not disabled: a disabled button would lose the keyboard focus
      b.setAttribute('aria-disabled', 'true');
      clear(exportProblem);
      exportStatus.textContent = t('audit.export_checking');
      try {
        await api.get('audit/events', { ...query, limit: 1 });
      } catch (err) {
        if (!ctx.isCurrent()) return;
        exportStatus.textContent = '';
        const rest = (err.errors || []).map((e) => (e.field ? `${e.field}: ${e.message}` : e.message));
        clear(exportProblem, h('div', { class: 'alert', role: 'alert' },
          h('strong', {}, t('audit.export_failed')), ' ', errorText(err, rest)));
        return;
      } finally {
        b.removeAttribute('aria-disabled');
      }
      if (!ctx.isCurrent()) return;
      const a = h('a', { href: exportHref(query, format), download: `audit-events.${format}`, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      exportStatus.textContent = t('audit.export_started');
    });
    return b;
  }
  const scope = h('p', { class: 'hint' });
  const exportButtons = h('p', { class: 'actions' }, exportButton('ndjson', 'audit.export_ndjson'), exportButton('csv', 'audit.export_csv'));
  function setExports(ok = true) {
    exportButtons.hidden = !ok;
    scope.hidden = !ok;
    clear(exportProblem);
    exportStatus.textContent = '';
    const q = paged.query();
    scope.textContent = t(q.from || q.to ? 'audit.export_scope' : 'audit.export_scope_all');
  }

  async function search() {
    clearErrors(form);
    const view = ctx.query.get('view');
    try {
      await paged.reload(readFilters(form, EVENT_FILTERS));
      setExports(true);
      replaceHashQuery('audit', { ...(view ? { view } : {}), ...paged.query() });
    } catch (err) {
      showErrors(form, err);
      setExports(false);
    }
  }
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    search();
  });
  form.addEventListener('reset', () => setTimeout(() => clearErrors(form), 0));

  let firstOk = true;
  try {
    await paged.reload(readFilters(form, EVENT_FILTERS));
  } catch (err) {
    showErrors(form, err); // a bad filter in a shared link: shown at its field
    firstOk = false;
  }
  setExports(firstOk);

  return section('audit.events',
    form,
    h('h3', {}, t('audit.export')),
    h('p', { class: 'hint' }, t('audit.export_lead')),
    scope,
    exportButtons,
    exportStatus,
    exportProblem,
    h('h3', {}, t('audit.results')),
    note.el,
    paged.el);
}
