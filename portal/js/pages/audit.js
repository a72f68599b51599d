// audit.js - #/audit (auditors and platform admins): chain verification and
// the event search with exports (#/audit), the node command log
// (#/audit?view=commands). The parts live in pages/audit/.
import { t } from '../i18n.js';
import { h } from '../ui.js';
import { viewNav } from './audit/common.js';
import { verifyPart } from './audit/verify.js';
import { eventsPart } from './audit/events.js';
import { commandsPart } from './audit/commands.js';

export async function render(ctx) {
  const view = ctx.query.get('view') === 'commands' ? 'commands' : 'events';
  const parts = view === 'commands' ? [await commandsPart(ctx)] : [verifyPart(), await eventsPart(ctx)];
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t(view === 'commands' ? 'audit.title_commands' : 'audit.title'))),
    h('p', { class: 'lead' }, t('audit.lead')),
    viewNav(view),
    ...parts);
}
