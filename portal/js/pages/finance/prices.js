// finance/prices.js - the price list (default prices and tenant overrides,
// effective-dated, never edited) and the form that asks for a new price. A
// new price waits for a platform admin's approval (202), which is said plainly.
import { api } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, field, section, table, onSubmit, nextId } from '../../ui.js';
import { monthUTC } from './common.js';

const UNITS = ['gpu_hour', 'core_hour', 'gib_hour'];
const unitText = (u) => (UNITS.includes(u) ? t(`fin.unit_${u}`) : u);

// Newest first per (resource, tenant): the first one that has started is in
// effect, later ones are scheduled, earlier ones superseded.
function effectOf(prices) {
  const now = Date.now();
  const seen = new Set();
  const out = new Map();
  const sorted = [...prices].sort((a, b) => Date.parse(b.effective_from) - Date.parse(a.effective_from));
  for (const p of sorted) {
    const key = `${p.resource}\u0000${p.tenant || ''}`;
    if (Date.parse(p.effective_from) > now) out.set(p.id, 'scheduled');
    else if (!seen.has(key)) {
      seen.add(key);
      out.set(p.id, 'current');
    } else out.set(p.id, 'superseded');
  }
  return out;
}

// "2026-11-01 00:00 UTC": prices are entered in UTC (a whole hour), so they are
// listed in UTC too, not in the browser's zone (seconds only when there are some).
function utcText(iso) {
  const d = new Date(iso);
  if (!iso || isNaN(d)) return iso || '—';
  const p = (n) => String(n).padStart(2, '0');
  const sec = d.getUTCSeconds() ? `:${p(d.getUTCSeconds())}` : '';
  return t('fin.utc_time', {
    time: `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}${sec}`,
  });
}

export async function pricesPart(ctx, tenants) {
  const listBox = h('div', {});
  const pending = h('div', { role: 'status' });
  const listId = nextId('resources');
  const datalist = h('datalist', { id: listId });

  async function loadPrices() {
    const prices = await api.all('prices');
    if (!ctx.isCurrent()) return;
    const effect = effectOf(prices);
    const resources = [...new Set(['cpu', 'memory_gib', 'storage_gib', ...prices.map((p) => p.resource)])].sort();
    clear(datalist, resources.map((r) => h('option', { value: r })));
    clear(listBox, table([
      { label: t('fin.resource'), key: 'resource' },
      { label: t('fin.price_tenant'), render: (p) => p.tenant || t('fin.default_price') },
      { label: t('fin.unit_price'), render: (p) => t('fin.per_unit', { price: p.unit_price, cur: p.currency, unit: unitText(p.unit) }) },
      { label: t('fin.effective_from'), render: (p) => h('time', { datetime: p.effective_from }, utcText(p.effective_from)) },
      { label: t('fin.in_effect'), render: (p) => t(`fin.effect_${effect.get(p.id)}`) },
      { label: t('fin.requested_by'), render: (p) => p.created_by || '—' },
      { label: t('fin.approved_by'), render: (p) => p.approved_by || '—' },
    ], prices, { caption: t('fin.prices'), empty: 'fin.no_prices' }));
  }

  const next = `${monthUTC(1)}-01T00:00:00Z`;
  const form = onSubmit(h('form', { class: 'form-grid', novalidate: true },
    field('resource', 'fin.resource', { required: true, list: listId, autocomplete: 'off', hint: t('fin.resource_hint') }),
    field('unit_price', 'fin.unit_price', { required: true, inputmode: 'decimal', autocomplete: 'off', hint: t('fin.unit_price_hint') }),
    field('currency', 'fin.currency', { required: true, value: 'CNY', maxlength: '3', autocomplete: 'off', hint: t('fin.currency_hint') }),
    field('effective_from', 'fin.effective_from', { required: true, value: next, autocomplete: 'off', hint: t('fin.effective_hint') }),
    field('tenant', 'fin.price_tenant', {
      kind: 'select', options: [['', t('fin.default_price_all')], ...tenants.map((s) => [s, s])], hint: t('fin.price_tenant_hint'),
    }),
    datalist,
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('fin.request_price')))),
  (v) => {
    const body = { resource: v.resource, unit_price: v.unit_price, currency: (v.currency || '').toUpperCase(), effective_from: v.effective_from };
    if (v.tenant) body.tenant = v.tenant;
    return api.post('prices', body);
  },
  async (res) => {
    if (res && res.approval) {
      const a = res.approval;
      clear(pending, h('div', { class: 'note' },
        h('p', {}, h('strong', {}, t('app.approval_pending'))),
        h('p', {}, t('fin.price_pending_detail')),
        h('p', { class: 'hint' }, (a.operation && a.operation.summary) || '', ' · ', t('fin.approval_id'), ' ', h('code', {}, a.id))));
      form.elements.unit_price.value = '';
    } else {
      clear(pending, h('p', { class: 'note' }, t('fin.price_created')));
      form.elements.unit_price.value = '';
      await loadPrices();
    }
  });

  await loadPrices();
  return [
    section('fin.prices',
      h('p', { class: 'hint' }, t('fin.prices_lead')),
      listBox),
    section('fin.new_price',
      h('p', { class: 'note' }, t('fin.new_price_lead')),
      pending,
      form),
  ];
}
