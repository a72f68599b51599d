// platform/registries.js - the registries tab: each registry with its sync
// state (requested → running → idle), progress while a sync runs, and the
// last sync's report (ok, error, counts, problems); a sync button (202), live
// refresh (fast while a sync is on), and a form to register a registry.
import { api } from '../../api.js';
import { t, fmtNum } from '../../i18n.js';
import { h, clear, section, field } from '../../ui.js';
import { statusLine, okNote, handleSubmit, afterChange, jsonObject, keyedList, every, when } from './common.js';

const enc = encodeURIComponent;
const COUNTS = ['repositories', 'tags', 'added', 'updated', 'unchanged', 'restored', 'conflicts', 'skipped',
  'errors', 'deleted_upstream'];
const COUNT_KEYS = {
  repositories: 'padmin.c_repositories',
  tags: 'padmin.c_tags',
  added: 'padmin.c_added',
  updated: 'padmin.c_updated',
  unchanged: 'padmin.c_unchanged',
  restored: 'padmin.c_restored',
  conflicts: 'padmin.c_conflicts',
  skipped: 'padmin.c_skipped',
  errors: 'padmin.c_errors',
  deleted_upstream: 'padmin.c_deleted_upstream',
};
const SYNC_STATE_KEYS = {
  idle: 'padmin.sync_idle',
  requested: 'padmin.sync_requested_state',
  running: 'padmin.sync_running',
};

function syncBadge(r) {
  const cls = r.sync_state === 'running' ? 'state-running' : r.sync_state === 'requested' ? 'state-queued' : 'state-cancelled';
  return h('span', { class: `badge ${cls}` }, t(SYNC_STATE_KEYS[r.sync_state] || 'padmin.sync_idle'));
}

function progressText(p) {
  if (!p) return t('padmin.progress_starting');
  return t('padmin.progress_line', {
    done: fmtNum(p.repositories_done || 0), total: fmtNum(p.repositories_total || 0),
    tags: fmtNum(p.tags_seen || 0), errors: fmtNum(p.errors || 0),
  });
}

function lastSync(r) {
  const rep = r.last_sync;
  if (!r.last_sync_at) return [h('p', { class: 'empty' }, t('padmin.never_synced'))];
  const ok = r.last_sync_ok === true;
  const out = [
    h('p', {},
      h('span', { class: `badge ${ok ? 'state-succeeded' : 'state-failed'}` }, t(ok ? 'padmin.sync_ok' : 'padmin.sync_failed')),
      ' ', t('padmin.last_sync_at', { at: when(r.last_sync_at) }),
      rep && rep.duration_ms !== undefined ? [' ', t('padmin.took', { s: fmtNum(rep.duration_ms / 1000, 1) })] : null),
  ];
  if (rep && rep.error) out.push(h('p', { class: 'alert' }, t('padmin.sync_error', { msg: rep.error })));
  if (rep) {
    const counts = COUNTS.filter((k) => rep[k] !== undefined);
    if (counts.length)
      out.push(h('dl', { class: 'props' }, counts.map((k) => [h('dt', {}, t(COUNT_KEYS[k])), h('dd', {}, fmtNum(rep[k]))])));
    if (Array.isArray(rep.over_quota) && rep.over_quota.length)
      out.push(h('p', { class: 'note' }, t('padmin.over_quota', { tenants: rep.over_quota.map((o) => (o && o.tenant) || String(o)).join(', ') })));
    if (Array.isArray(rep.problems) && rep.problems.length)
      out.push(h('details', {},
        h('summary', {}, t('padmin.problems', { n: rep.problems.length })),
        h('ul', {}, rep.problems.map((p) => h('li', {},
          h('code', {}, `${p.repository || ''}${p.tag ? `:${p.tag}` : ''}`), ' ', p.message || '')))));
  }
  return out;
}

function registryCard(r, onSync) {
  const headId = `padmin-registry-${r.name}`;
  const state = h('dl', { class: 'props' });
  const last = h('div', {});
  const note = statusLine();
  const sync = h('button', { type: 'button', class: 'secondary', 'aria-label': t('padmin.sync_named', { name: r.name }) },
    t('padmin.sync'));
  sync.addEventListener('click', () => onSync(r.name, sync, note));
  const card = h('article', { class: 'card', 'aria-labelledby': headId, dataset: { registry: r.name } },
    h('div', { class: 'page-head' }, h('h3', { id: headId }, r.name), sync),
    h('dl', { class: 'props' },
      h('dt', {}, t('padmin.url')), h('dd', {}, h('code', {}, r.url)),
      h('dt', {}, t('padmin.credentials_ref')), h('dd', {}, r.credentials_ref ? h('code', {}, r.credentials_ref) : t('padmin.anonymous')),
      h('dt', {}, t('padmin.options')), h('dd', {}, h('code', {}, JSON.stringify(r.options || {})))),
    state, note,
    h('h4', {}, t('padmin.last_sync')), last);
  card.update = (x) => {
    clear(state,
      h('dt', {}, t('padmin.sync_state')), h('dd', {}, syncBadge(x)),
      x.sync_state === 'requested' ? [h('dt', {}, t('padmin.requested_at')), h('dd', {}, when(x.sync_requested_at))] : null,
      x.sync_state === 'running' ? [
        h('dt', {}, t('padmin.started_at')), h('dd', {}, when(x.sync_started_at)),
        h('dt', {}, t('padmin.progress')), h('dd', {}, progressText(x.sync_progress)),
      ] : null);
    clear(last, lastSync(x));
    sync.disabled = x.sync_state !== 'idle';
  };
  card.update(r);
  return card;
}

export async function render(ctx, body) {
  let registries = await api.all('registries');
  const list = h('div', { class: 'registry-list' });

  async function onSync(name, button, note) {
    button.disabled = true;
    clear(note);
    try {
      const r = await api.post(`registries/${enc(name)}/sync`);
      clear(note, okNote(t('padmin.sync_requested', { name })));
      registries = registries.map((x) => (x.name === r.name ? r : x));
      sync(registries);
    } catch (err) {
      button.disabled = false;
      clear(note, h('p', { class: 'alert', role: 'alert' }, err.message));
    }
  }

  const sync = keyedList(list, {
    key: (r) => r.name,
    make: (r) => registryCard(r, onSync),
    update: (card, r) => card.update(r),
    empty: t('padmin.no_registries'),
  });
  const refresh = async () => {
    registries = await api.all('registries');
    sync(registries);
  };
  sync(registries);
  // every 2 s while a sync is requested or running, else every 20 s
  let ticks = 0;
  every(ctx, 2000, async () => {
    ticks++;
    if (registries.some((r) => r.sync_state !== 'idle') || ticks % 10 === 0) await refresh();
  });

  const status = statusLine();
  const form = h('form', { class: 'form-grid', novalidate: true },
    field('name', 'padmin.name', { required: true, autocapitalize: 'none', spellcheck: 'false',
      pattern: '[a-z][a-z0-9-]{1,62}', hint: t('padmin.slug_hint') }),
    field('url', 'padmin.url', { required: true, type: 'url', spellcheck: 'false', hint: t('padmin.url_hint') }),
    field('credentials_ref', 'padmin.credentials_ref', { spellcheck: 'false', autocapitalize: 'none',
      hint: t('padmin.reg_credentials_hint') }),
    h('div', { class: 'wide' }, field('options', 'padmin.options_json', { kind: 'textarea', spellcheck: 'false',
      hint: t('padmin.reg_options_hint') })),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('padmin.registry_create'))));
  handleSubmit(form, async () => {
    clear(status);
    const v = (n) => form.querySelector(`[name="${n}"]`).value.trim();
    const b = { name: v('name'), url: v('url') };
    if (v('credentials_ref')) b.credentials_ref = v('credentials_ref');
    const options = jsonObject(form, 'options');
    if (options !== undefined) b.options = options;
    const r = await api.post('registries', b);
    form.reset();
    await afterChange(status, okNote(t('padmin.registry_created', { name: r.name })), refresh);
  });

  body.append(
    section('padmin.tab_registries', h('p', { class: 'lead' }, t('padmin.registries_lead')), list),
    section('padmin.registry_create', status, form));
}
