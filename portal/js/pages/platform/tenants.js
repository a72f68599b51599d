// platform/tenants.js - the tenants tab: list, create, suspend/resume, and
// delete (which always waits for a second platform admin's approval).
import { api } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, section, table, field, onSubmit, alertBox } from '../../ui.js';
import { statusLine, okNote, approvalNote, confirmInline, afterChange, when } from './common.js';

export async function render(ctx, body, { pending }) {
  let tenants = await api.all('tenants');
  const status = statusLine();
  const listSlot = h('div', {});
  // tenants whose deletion waits for approval (from the pending list)
  const deleting = new Set(pending
    .filter((a) => a.operation && a.operation.method === 'DELETE')
    .map((a) => (/^\/api\/v1\/tenants\/([^/]+)$/.exec(a.operation.path) || [])[1])
    .filter(Boolean));

  async function reload() {
    tenants = await api.all('tenants');
    draw();
  }

  function draw() {
    clear(listSlot, table([
      { label: t('padmin.slug'), render: (x) => h('code', {}, x.slug) },
      { label: t('padmin.name'), key: 'name' },
      { label: t('padmin.state'), render: (x) => stateBadge(x) },
      { label: t('padmin.created'), render: (x) => when(x.created_at) },
      { label: t('app.actions'), render: (x) => actions(x) },
    ], tenants, { caption: t('padmin.tenants_caption'), empty: 'padmin.no_tenants',
      rowAttrs: (x) => ({ dataset: { tenant: x.slug } }) }));
  }

  function stateBadge(x) {
    return h('span', {},
      h('span', { class: `badge ${x.suspended ? 'state-failed' : 'state-succeeded'}` },
        t(x.suspended ? 'padmin.suspended' : 'padmin.active')),
      deleting.has(x.slug) ? [' ', h('span', { class: 'badge state-queued' }, t('padmin.delete_pending'))] : null,
      x.storage_over_quota_since
        ? [' ', h('span', { class: 'badge state-queued' }, t('padmin.over_storage'))] : null);
  }

  function actions(x) {
    const slot = h('div', { class: 'actions' });
    const quota = h('a', { class: 'button secondary', href: `#/platform?tab=quotas&tenant=${encodeURIComponent(x.slug)}`,
      'aria-label': t('padmin.quota_of', { tenant: x.slug }) }, t('padmin.quota'));
    const toggle = h('button', { type: 'button', class: 'secondary',
      'aria-label': t(x.suspended ? 'padmin.resume_named' : 'padmin.suspend_named', { tenant: x.slug }) },
    t(x.suspended ? 'padmin.resume' : 'padmin.suspend'));
    // the change throws when it failed; once made, afterChange reports it and
    // redraws (focus then goes to the status line, not to the top of the page)
    const setSuspended = async (suspended) => {
      await api.patch(`tenants/${encodeURIComponent(x.slug)}`, { suspended });
      await afterChange(status, okNote(t(suspended ? 'padmin.suspended_msg' : 'padmin.resumed_msg', { tenant: x.slug })),
        reload, { from: slot });
    };
    toggle.addEventListener('click', async () => {
      if (!x.suspended) {
        confirmInline(slot, t('padmin.suspend_confirm', { tenant: x.slug }), () => setSuspended(true),
          { yesKey: 'padmin.suspend' });
        return;
      }
      toggle.disabled = true;
      try {
        await setSuspended(false);
      } catch (err) {
        toggle.disabled = false;
        clear(status, alertBox(err));
      }
    });
    const del = h('button', { type: 'button', class: 'danger',
      'aria-label': t('padmin.delete_named', { tenant: x.slug }) }, t('padmin.delete'));
    del.addEventListener('click', () => confirmInline(slot, t('padmin.delete_confirm', { tenant: x.slug }), async () => {
      const out = await api.del(`tenants/${encodeURIComponent(x.slug)}`);
      if (out && out.approval) deleting.add(x.slug);
      await afterChange(status, out && out.approval ? approvalNote(out.approval)
        : okNote(t('padmin.deleted_msg', { tenant: x.slug })), reload, { from: slot });
    }, { yesKey: 'padmin.delete' }));
    slot.append(quota, toggle, del);
    return slot;
  }

  const create = h('form', { class: 'form-grid', novalidate: true },
    field('slug', 'padmin.slug', { required: true, autocapitalize: 'none', spellcheck: 'false',
      pattern: '[a-z][a-z0-9-]{1,62}', hint: t('padmin.slug_hint') }),
    field('name', 'padmin.name', { required: true, maxlength: 200 }),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('padmin.create'))));
  onSubmit(create, (v) => api.post('tenants', v), async (x) => {
    create.reset();
    ctx.reloadSession().catch(() => {}); // the header's tenant picker lists it too
    await afterChange(status, h('p', { class: 'note' }, t('padmin.tenant_created', { tenant: x.slug }), ' ',
      h('a', { href: `#/platform?tab=quotas&tenant=${encodeURIComponent(x.slug)}` },
        t('padmin.set_quota', { tenant: x.slug }))), reload);
  });

  draw();
  body.append(
    section('padmin.tab_tenants', h('p', { class: 'lead' }, t('padmin.tenants_lead')), status, listSlot),
    section('padmin.tenant_create', create));
}
