// platform/quotas.js - the tenant quotas tab: guaranteed and limit per
// resource of one tenant, GPU types from the clusters' inventory. Raising a
// guarantee beyond the configured threshold answers 202: it waits for a
// second platform admin (shown here, and in the approvals tab).
import { api, tpath } from '../../api.js';
import { t, fmtNum } from '../../i18n.js';
import { h, clear, section, nextId, alertBox, clearErrors } from '../../ui.js';
import { quotaBar } from '../dashboard.js';
import {
  TENANT_RESOURCES, orderResources, quotaEditor, statusLine, okNote, approvalNote, handleSubmit, isGpu,
} from './common.js';

const hashFor = (slug) => `#/platform?tab=quotas&tenant=${encodeURIComponent(slug)}`;

export async function render(ctx, body, { pending }) {
  const [tenants, clusters] = await Promise.all([api.all('tenants'), api.all('clusters')]);
  // capacity per GPU type over all clusters
  const capacity = {};
  for (const c of clusters)
    for (const [res, inv] of Object.entries(c.inventory || {}))
      if (isGpu(res)) capacity[res] = (capacity[res] || 0) + (inv.total || 0);

  const status = statusLine();
  const pendingSlot = h('div', {});
  const barsSlot = h('div', {});
  const editorSlot = h('div', {});
  const selectId = nextId('tenant');
  const select = h('select', { id: selectId, name: 'tenant' },
    tenants.map((x) => h('option', { value: x.slug }, `${x.name} (${x.slug})`)));
  const want = ctx.query.get('tenant');
  select.value = tenants.some((x) => x.slug === want) ? want : (tenants[0] ? tenants[0].slug : '');
  const save = h('button', { type: 'submit', disabled: true }, t('padmin.quota_save'));
  const form = h('form', { novalidate: true, class: 'stack' }, editorSlot, h('div', { class: 'actions' }, save));
  // the editor shown, with the tenant it was drawn for ({el, read, slug}); null
  // while a tenant's quota loads or when it failed to (Save is disabled then)
  let editor = null;
  let seq = 0;
  let waiting = pending;

  function resources(q) {
    const names = new Set([...Object.keys(q), ...Object.keys(capacity), ...TENANT_RESOURCES]);
    return orderResources([...names], TENANT_RESOURCES);
  }

  function draw(slug, q) {
    editorSlot.dataset.tenant = slug;
    clear(barsSlot, Object.keys(q).filter(isGpu).sort()
      .filter((g) => q[g].limit > 0 || q[g].used > 0)
      .map((g) => quotaBar(g, q[g])));
    const rows = resources(q).map((res) => {
      const e = q[res];
      const gpu = isGpu(res);
      const parts = [];
      if (gpu) parts.push(t('padmin.capacity', { n: fmtNum(capacity[res] || 0) }));
      parts.push(t('padmin.used_now', { used: fmtNum(e ? e.used || 0 : 0), borrowed: fmtNum(e ? e.borrowed || 0 : 0) }));
      return {
        res,
        guaranteed: e ? e.guaranteed : (gpu ? 0 : null),
        limit: e ? e.limit : (gpu ? 0 : null),
        note: parts.join(' '),
      };
    });
    editor = { ...quotaEditor(rows, { withGuarantee: true }), slug };
    clear(editorSlot, h('p', { class: 'hint' }, t('padmin.quota_help')), editor.el);
    save.disabled = false;
    drawPending(slug);
  }

  function drawPending(slug) {
    const path = `/api/v1/tenants/${slug}/quota`;
    const mine = waiting.filter((a) => a.operation && a.operation.path === path);
    clear(pendingSlot, mine.map((a) => h('p', { class: 'note' },
      h('strong', {}, t('padmin.quota_waiting')), ' ', a.operation.summary, ' ',
      t('padmin.requested_by', { user: a.requested_by }), ' ',
      h('a', { href: '#/platform?tab=approvals' }, t('padmin.to_approvals')))));
  }

  // The previous tenant's editor goes at once (its values must never be saved
  // onto the tenant picked now); an answer of an earlier load is ignored.
  async function load() {
    const slug = select.value;
    const mySeq = ++seq;
    editor = null;
    save.disabled = true;
    clearErrors(form);
    delete editorSlot.dataset.tenant;
    clear(barsSlot);
    clear(pendingSlot);
    clear(editorSlot, slug ? h('p', { class: 'hint' }, t('app.loading')) : null);
    if (!slug) return;
    if (ctx.isCurrent() && location.hash.startsWith('#/platform')) history.replaceState(null, '', hashFor(slug));
    let q;
    try {
      q = await api.get(tpath(slug, 'quota'));
    } catch (err) {
      if (mySeq === seq && ctx.isCurrent()) clear(editorSlot, alertBox(err));
      return;
    }
    if (mySeq !== seq || !ctx.isCurrent()) return;
    draw(slug, q.resources || {});
  }

  select.addEventListener('change', () => {
    clear(status);
    load();
  });
  // Saves the values of the editor shown onto the tenant it was drawn for, and
  // only when that is the tenant picked (the tenant cannot change meanwhile).
  handleSubmit(form, async () => {
    clear(status);
    const ed = editor;
    if (!ed || ed.slug !== select.value)
      throw new Error(t('padmin.quota_not_loaded', { tenant: select.value }));
    const slug = ed.slug;
    const mySeq = seq;
    select.disabled = true;
    let out;
    try {
      out = await api.put(tpath(slug, 'quota'), { resources: ed.read() });
    } finally {
      select.disabled = false;
    }
    if (out && out.approval) {
      clear(status, approvalNote(out.approval));
      const again = await api.get('approvals', { state: 'pending', limit: 200 }).catch(() => null);
      if (again) waiting = again.items;
      if (mySeq === seq) drawPending(slug);
      return;
    }
    if (mySeq === seq && ctx.isCurrent()) draw(slug, out.resources || {});
    clear(status, okNote(t('padmin.quota_saved', { tenant: slug })));
  });

  body.append(section('padmin.tab_quotas',
    h('p', { class: 'lead' }, t('padmin.quotas_lead')),
    tenants.length ? [
      h('div', { class: 'filters' }, h('div', { class: 'field' }, h('label', { for: selectId }, t('padmin.tenant')), select)),
      pendingSlot, barsSlot, status, form,
    ] : h('p', { class: 'empty' }, t('padmin.no_tenants'))));
  if (tenants.length) await load();
}
