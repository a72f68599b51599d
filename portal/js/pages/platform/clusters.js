// platform/clusters.js - the clusters tab: each cluster with its health, last
// sync and inventory (total and allocated per resource), a sync button (202:
// the syncer runs soon), live refresh, and a form to register a cluster.
import { api } from '../../api.js';
import { t, fmtNum } from '../../i18n.js';
import { h, clear, section, table, field } from '../../ui.js';
import {
  statusLine, okNote, handleSubmit, afterChange, jsonObject, keyedList, every, when, resourceLabel, orderResources,
} from './common.js';

const KINDS = ['local', 'slurm', 'kubernetes'];
const OPTION_EXAMPLES = {
  local: '{"gpus": {"a100": 4}, "cpus": 32, "memory_gib": 256}',
  slurm: '{"user_name": "aidc", "partition": "gpu", "workdir": "/shared/aidc/jobs"}',
  kubernetes: '{"namespace": "aidc-{tenant}", "gpu_types": {"a100": "NVIDIA-A100-SXM4-80GB"}}',
};

const enc = encodeURIComponent;

function healthBadge(c) {
  if (c.healthy === null || c.healthy === undefined)
    return h('span', { class: 'badge state-queued' }, t('padmin.health_unknown'));
  return h('span', { class: `badge ${c.healthy ? 'state-succeeded' : 'state-failed'}` },
    t(c.healthy ? 'padmin.healthy' : 'padmin.unhealthy'));
}

function inventoryTable(c) {
  const inv = c.inventory || {};
  const names = orderResources(Object.keys(inv), ['cpu', 'memory_gib']);
  return table([
    { label: t('padmin.resource'), render: (r) => [resourceLabel(r), ' ', h('code', {}, r)] },
    { label: t('padmin.total'), render: (r) => fmtNum(inv[r].total) },
    { label: t('padmin.allocated'), render: (r) => fmtNum(inv[r].allocated) },
    { label: t('padmin.free'), render: (r) => fmtNum(Math.max(0, (inv[r].total || 0) - (inv[r].allocated || 0))) },
  ], names, { caption: t('padmin.inventory_of', { cluster: c.name }), empty: 'padmin.no_inventory' });
}

function clusterCard(c, onSync) {
  const headId = `padmin-cluster-${c.name}`;
  const health = h('dd', {});
  const lastSync = h('dd', {});
  const lastError = h('dd', {});
  const inv = h('div', {});
  const note = statusLine();
  const sync = h('button', { type: 'button', class: 'secondary', 'aria-label': t('padmin.sync_named', { name: c.name }) },
    t('padmin.sync'));
  sync.addEventListener('click', () => onSync(c.name, sync, note));
  const card = h('article', { class: 'card', 'aria-labelledby': headId, dataset: { cluster: c.name } },
    h('div', { class: 'page-head' }, h('h3', { id: headId }, c.name), sync),
    h('dl', { class: 'props' },
      h('dt', {}, t('padmin.kind')), h('dd', {}, c.kind),
      h('dt', {}, t('padmin.health')), health,
      h('dt', {}, t('padmin.last_sync')), lastSync,
      h('dt', {}, t('padmin.last_error')), lastError,
      h('dt', {}, t('padmin.endpoint')), h('dd', {}, c.endpoint || '—'),
      h('dt', {}, t('padmin.credentials_ref')), h('dd', {}, c.credentials_ref ? h('code', {}, c.credentials_ref) : '—'),
      h('dt', {}, t('padmin.options')), h('dd', {}, h('code', {}, JSON.stringify(c.options || {})))),
    note,
    h('h4', {}, t('padmin.inventory')), inv);
  card.update = (x) => {
    clear(health, healthBadge(x));
    lastSync.textContent = when(x.last_sync_at);
    lastError.textContent = x.last_error || '—';
    clear(inv, inventoryTable(x));
  };
  card.update(c);
  return card;
}

export async function render(ctx, body) {
  let current = await api.all('clusters');
  const list = h('div', { class: 'cluster-list' });

  async function onSync(name, button, note) {
    button.disabled = true;
    clear(note);
    try {
      await api.post(`clusters/${enc(name)}/sync`);
      clear(note, okNote(t('padmin.sync_requested', { name })));
      // the syncer answers within seconds: show this cluster's result
      setTimeout(async () => {
        if (!ctx.isCurrent() || document.hidden) return;
        try {
          const c = await api.get(`clusters/${enc(name)}`);
          current = current.map((x) => (x.name === c.name ? c : x));
          sync(current);
        } catch {
          // the next refresh shows it
        }
      }, 1500);
    } catch (err) {
      clear(note, h('p', { class: 'alert', role: 'alert' }, err.message));
    } finally {
      button.disabled = false;
    }
  }

  const sync = keyedList(list, {
    key: (c) => c.name,
    make: (c) => clusterCard(c, onSync),
    update: (card, c) => card.update(c),
    empty: t('padmin.no_clusters'),
  });
  const refresh = async () => {
    current = await api.all('clusters');
    sync(current);
  };
  sync(current);
  every(ctx, 10000, refresh);

  // register a cluster
  const status = statusLine();
  const kindField = field('kind', 'padmin.kind', { kind: 'select', options: KINDS.map((k) => [k, k]) });
  const example = h('code', {}, OPTION_EXAMPLES.local);
  const form = h('form', { class: 'form-grid', novalidate: true },
    field('name', 'padmin.name', { required: true, autocapitalize: 'none', spellcheck: 'false',
      pattern: '[a-z][a-z0-9-]{1,62}', hint: t('padmin.slug_hint') }),
    kindField,
    field('endpoint', 'padmin.endpoint', { type: 'url', hint: t('padmin.endpoint_hint'), spellcheck: 'false' }),
    field('credentials_ref', 'padmin.credentials_ref', { hint: t('padmin.credentials_hint'), spellcheck: 'false',
      autocapitalize: 'none' }),
    h('div', { class: 'wide' }, field('options', 'padmin.options_json', { kind: 'textarea', spellcheck: 'false',
      hint: t('padmin.options_hint') })),
    h('p', { class: 'hint wide' }, t('padmin.example'), ' ', example),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('padmin.cluster_create'))));
  const kindSelect = kindField.querySelector('select');
  kindSelect.addEventListener('change', () => { example.textContent = OPTION_EXAMPLES[kindSelect.value] || '{}'; });
  handleSubmit(form, async () => {
    clear(status);
    const v = (n) => form.querySelector(`[name="${n}"]`).value.trim();
    const bodyJson = { name: v('name'), kind: v('kind') };
    const options = jsonObject(form, 'options');
    if (v('endpoint')) bodyJson.endpoint = v('endpoint');
    if (v('credentials_ref')) bodyJson.credentials_ref = v('credentials_ref');
    if (options !== undefined) bodyJson.options = options;
    const c = await api.post('clusters', bodyJson);
    form.reset();
    example.textContent = OPTION_EXAMPLES.local;
    await afterChange(status, okNote(t('padmin.cluster_created', { name: c.name })), refresh);
  });

  body.append(
    section('padmin.tab_clusters', h('p', { class: 'lead' }, t('padmin.clusters_lead')),
      h('p', {}, h('a', { href: '#/capacity', id: 'capacity-link' }, t('cap.link'))), list),
    section('padmin.cluster_create', status, form));
}
