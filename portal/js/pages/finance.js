// finance.js - #/finance (finance and platform admins): the monthly invoices
// of every tenant (generate, review, finalize, CSV) and the price list with
// requests for new prices. The parts live in pages/finance/.
import { t } from '../i18n.js';
import { h } from '../ui.js';
import { tenantSlugs } from './finance/common.js';
import { invoicesPart } from './finance/invoices.js';
import { pricesPart } from './finance/prices.js';

export async function render(ctx) {
  const tenants = await tenantSlugs();
  const [invoices, prices] = await Promise.all([invoicesPart(ctx, tenants), pricesPart(ctx, tenants)]);
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('fin.title'))),
    h('p', { class: 'lead' }, t('fin.lead')),
    ...invoices,
    ...prices);
}
