// platform.js - platform administration (#/platform, platform_admin only), in
// tabs that are plain links (#/platform?tab=NAME, so a reload or a shared link
// opens the same tab; the current one has aria-current="page"): tenants,
// tenant quotas, clusters, registries, users, allocation requests to review, and
// approvals waiting for me.
// Each tab is a module of its own under pages/platform/.
import { api } from '../api.js';
import { t } from '../i18n.js';
import { h } from '../ui.js';

const TABS = [
  { name: 'tenants', label: 'padmin.tab_tenants', load: () => import('./platform/tenants.js') },
  { name: 'quotas', label: 'padmin.tab_quotas', load: () => import('./platform/quotas.js') },
  { name: 'clusters', label: 'padmin.tab_clusters', load: () => import('./platform/clusters.js') },
  { name: 'registries', label: 'padmin.tab_registries', load: () => import('./platform/registries.js') },
  { name: 'users', label: 'padmin.tab_users', load: () => import('./platform/users.js') },
  { name: 'allocations', label: 'padmin.tab_allocations', load: () => import('./platform/allocations.js') },
  { name: 'approvals', label: 'padmin.tab_approvals', load: () => import('./platform/approvals.js') },
];

// The approvals tab's count of requests waiting for me; its module updates it.
export function setPendingCount(n) {
  const el = document.getElementById('padmin-pending-count');
  if (!el) return;
  el.textContent = n > 0 ? ` (${n})` : '';
  el.hidden = !(n > 0);
}

export async function render(ctx) {
  const tab = TABS.find((x) => x.name === ctx.query.get('tab')) || TABS[0];
  const [mod, pending] = await Promise.all([
    tab.load(),
    api.get('approvals', { state: 'pending', limit: 200 }).catch(() => ({ items: [] })),
  ]);
  const waiting = pending.items.filter((a) => a.requested_by !== ctx.me.username).length;
  const body = h('div', { class: 'tab-body' });
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('padmin.title'))),
    h('nav', { class: 'card tabs', 'aria-label': t('padmin.sections') },
      h('ul', { class: 'actions', style: { listStyle: 'none', margin: '0', padding: '0' } }, TABS.map((x) => h('li', {},
        h('a', {
          href: `#/platform?tab=${x.name}`,
          class: x === tab ? 'button' : 'button secondary',
          'aria-current': x === tab ? 'page' : null,
        }, t(x.label),
        x.name === 'approvals'
          ? h('span', { id: 'padmin-pending-count', hidden: !waiting }, waiting ? ` (${waiting})` : '')
          : null))))),
    body);
  await mod.render(ctx, body, { pending: pending.items });
}
