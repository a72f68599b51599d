// audit/commands.js - the node records (commands, module loads, image pulls)
// that node agents send: who ran what, where, when; newest first, keyset
// "load more", every filter of GET /audit/commands.
import { api } from '../../api.js';
import { t, fmtTime } from '../../i18n.js';
import { h, clear, field, section, table, showErrors, clearErrors } from '../../ui.js';
import { pagedList, replaceHashQuery } from '../finance/common.js';
import { timeField, readFilters, fillFilters, windowNote } from './common.js';

export const COMMAND_FILTERS = ['host', 'user', 'tenant', 'q', 'from', 'to', 'kind', 'job_id'];
const KINDS = ['command', 'module', 'image_pull'];

// The agent's time of the record (ran_at; older servers: ts) and when the
// server stored it (ts next to ran_at; older servers: received_at).
const ranAt = (c) => c.ran_at || c.ts;
const received = (c) => (c.ran_at ? c.ts : c.received_at);
const dash = (v) => (v === null || v === undefined || v === '' ? '—' : String(v));

export async function commandsPart(ctx) {
  const form = h('form', { class: 'form-grid', role: 'search', 'aria-label': t('audit.commands_filters'), novalidate: true },
    field('host', 'audit.host', { autocomplete: 'off' }),
    field('user', 'audit.node_user', { autocomplete: 'off', hint: t('audit.node_user_hint') }),
    field('tenant', 'app.tenant', { autocomplete: 'off' }),
    field('q', 'audit.q', { type: 'search', autocomplete: 'off', hint: t('audit.cmd_q_hint') }),
    timeField('from', 'audit.from'),
    timeField('to', 'audit.to'),
    field('kind', 'audit.kind', { kind: 'select', options: [['', t('audit.any')], ...KINDS.map((k) => [k, t(`audit.kind_${k}`)])] }),
    field('job_id', 'audit.job_id', { autocomplete: 'off' }),
    h('div', { class: 'actions wide' },
      h('button', { type: 'submit' }, t('audit.search')),
      h('button', { type: 'reset', class: 'secondary' }, t('audit.clear'))));
  fillFilters(form, COMMAND_FILTERS, ctx.query);

  // the filters are read when Search is pressed; "Load more" goes on with the
  // query of the search on screen (pagedList keeps it), not the form as edited since
  // the time range the search on screen covered (the API's default: the last 30 days)
  const note = windowNote(form, () => search());
  const paged = pagedList(
    (cursor, query) => api.get('audit/commands', { ...query, limit: 50, cursor }).then((page) => {
      if (!cursor) note.show(page.window || null);
      return page;
    }),
    (_, all) => clear(paged.body, table([
      { label: t('audit.ran_at'), render: (c) => h('time', { datetime: ranAt(c) }, fmtTime(ranAt(c))) },
      { label: t('audit.host'), render: (c) => dash(c.host) },
      { label: t('audit.node_user'), render: (c) => (c.uid !== null && c.uid !== undefined ? `${dash(c.user)} (${c.uid})` : dash(c.user)) },
      { label: t('audit.kind'), render: (c) => (KINDS.includes(c.kind) ? t(`audit.kind_${c.kind}`) : dash(c.kind)) },
      { label: t('audit.command'), render: (c) => h('code', { style: { wordBreak: 'break-all' } }, c.command || '') },
      { label: t('audit.exit_code'), render: (c) => dash(c.exit_code) },
      { label: t('audit.cwd'), render: (c) => (c.cwd ? h('code', {}, c.cwd) : '—') },
      { label: t('app.tenant'), render: (c) => dash(c.tenant) },
      { label: t('audit.job_id'), render: (c) => (c.job_id ? h('code', {}, c.job_id) : '—') },
      { label: t('audit.received'), render: (c) => [fmtTime(received(c)), h('br'),
        h('small', { class: 'hint' }, [c.source_ip, c.ingested_by].filter(Boolean).join(' · ') || '—')] },
    ], all, { caption: t('audit.commands'), empty: 'audit.no_commands' })),
    { countKey: 'audit.command_count' });

  async function search() {
    clearErrors(form);
    try {
      await paged.reload(readFilters(form, COMMAND_FILTERS));
      replaceHashQuery('audit', { view: 'commands', ...paged.query() });
    } catch (err) {
      showErrors(form, err);
    }
  }
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    search();
  });
  form.addEventListener('reset', () => setTimeout(() => clearErrors(form), 0));

  try {
    await paged.reload(readFilters(form, COMMAND_FILTERS));
  } catch (err) {
    showErrors(form, err);
  }
  return section('audit.commands',
    h('p', { class: 'hint' }, t('audit.commands_lead')),
    form,
    h('h3', {}, t('audit.results')),
    note.el,
    paged.el);
}
