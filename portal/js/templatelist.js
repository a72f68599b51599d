// templatelist.js - the job templates a submit in a tenant can start from: the
// tenant's own and the platform's, a tenant template shadowing the platform one of
// the same name (as the server renders a submit: docs/templates.md). Also the
// chooser the submit page opens with.
import { api, tpath } from './api.js';
import { t } from './i18n.js';
import { h, clear } from './ui.js';
import { tenantAdmin } from './roles.js';

// [{...template, scope}] by name; the tenant's win over the platform's
export async function usableTemplates(tenant) {
  const [platform, own] = await Promise.all([
    api.all('templates').catch(() => []),
    api.all(tpath(tenant, 'templates')).catch(() => []),
  ]);
  const byName = new Map();
  for (const tpl of platform) byName.set(tpl.name, tpl);
  for (const tpl of own) byName.set(tpl.name, tpl);
  return [...byName.values()].sort((a, b) => a.name.localeCompare(b.name));
}

export const templateHref = (name) => `#/jobs/template?name=${encodeURIComponent(name)}`;

// The card "Start from a template" (filled once the lists arrive; quietly empty on
// failure); for the tenant's admins, a link to manage the tenant's templates.
export function templateChooser(tenant, me) {
  const list = h('ul', { class: 'template-list' }, h('li', {}, t('app.loading')));
  const card = h('section', { class: 'card', 'aria-labelledby': 'tpl-choose' },
    h('h2', { id: 'tpl-choose' }, t('tpl.choose.title')),
    h('p', { class: 'lead' }, t('tpl.choose.lead')),
    list,
    tenantAdmin(me, tenant) ? h('p', {}, h('a', { href: '#/templates' }, t('tpl.choose.manage'))) : null);
  usableTemplates(tenant).then((items) => {
    if (!items.length) return clear(list, h('li', {}, t('tpl.choose.none')));
    clear(list, items.map((tpl) => h('li', {},
      h('a', { href: templateHref(tpl.name), class: 'button secondary', dataset: { template: tpl.name } },
        tpl.name),
      ' ',
      h('span', { class: 'badge' }, t(tpl.scope === 'tenant' ? 'tpl.scope.tenant' : 'tpl.scope.platform')),
      tpl.kind === 'interactive' ? h('span', { class: 'badge' }, t('tpl.kind.interactive')) : null,
      ' ', tpl.description || '')));
  }).catch(() => clear(list));
  return card;
}
