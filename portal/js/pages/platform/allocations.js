// platform/allocations.js - the review queue of allocation requests (docs/allocations.md):
// pending requests first, then those waiting for the requester's answer. Each shows
// what was asked and why, the project's past allocations with their usage (bars), the
// thread, and Approve (as asked, or with changed GPU-hours and storage: the rest as
// asked), Reject (a reason) and Ask for information (a question: needs_info).
import { api, tpath } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, field, handleSubmit } from '../../ui.js';
import { statusLine, okNote, approvalNote, afterChange } from './common.js';
import { periodText, amountsText, usageBar, stateBadges, thread } from '../allocations.js';

const enc = encodeURIComponent;
const post = (id, what, body) => api.post(`allocation-requests/${enc(id)}/${what}`, body);

export async function render(ctx, body) {
  const status = statusLine();
  const list = h('div', {});

  async function past(r, slot) {
    const rows = (await api.all(tpath(r.tenant, 'allocation-requests'), { project: r.project }, 200))
      .filter((x) => x.id !== r.id && ['approved', 'expired'].includes(x.state));
    clear(slot, h('h4', {}, t('alloc.past', { project: r.project })),
      rows.length ? rows.map(usageBar) : h('p', { class: 'hint' }, t('alloc.past_none')));
  }

  // A small form under the buttons (the changes, the reason, the question).
  function subform(slot, fields, submitKey, send) {
    const form = handleSubmit(h('form', { class: 'stack', novalidate: true }, fields,
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, t(submitKey)))), async (f) => {
      await send(f.elements);
    });
    clear(slot, form);
    const first = form.querySelector('input,textarea');
    if (first) first.focus();
  }

  function card(r) {
    const headId = `review-${r.id}`;
    const pastSlot = h('div', {});
    const formSlot = h('div', {});
    const threadSlot = h('div', {});
    const done = (note) => afterChange(status, note, load);
    const approve = async (changes) => {
      const out = await post(r.id, 'approve', changes);
      await done(out.approval ? approvalNote(out.approval)
        : okNote(t('alloc.approved_note', { project: `${r.tenant}/${r.project}` })));
    };
    const el = h('article', { class: 'card', 'aria-labelledby': headId, dataset: { request: r.id } },
      h('h3', { id: headId }, t('alloc.request_of', { tenant: r.tenant, project: r.project }), ' ',
        stateBadges(r)),
      h('dl', { class: 'props' },
        h('dt', {}, t('alloc.col.period')), h('dd', {}, periodText(r)),
        h('dt', {}, t('alloc.col.asked')), h('dd', {}, amountsText(r)),
        h('dt', {}, t('alloc.col.by')), h('dd', {}, r.requested_by || '—'),
        h('dt', {}, t('alloc.pi')), h('dd', {}, r.pi || '—'),
        h('dt', {}, t('alloc.justification_label')), h('dd', {}, r.justification),
        h('dt', {}, t('alloc.funding_ref')), h('dd', {}, r.funding_ref || '—')),
      pastSlot,
      h('div', { class: 'actions' },
        h('button', { type: 'button', onclick: () => approve({}).catch((e) => clear(formSlot, h('p', { class: 'alert', role: 'alert' }, e.message))) }, t('alloc.approve')),
        h('button', { type: 'button', class: 'secondary', onclick: () => subform(formSlot, [
          h('p', { class: 'hint' }, t('alloc.approve_changes_hint')),
          field('gpu_hours', 'alloc.gpu_hours', { type: 'number', min: 0 }),
          field('storage_gib', 'alloc.storage_gib', { type: 'number', min: 0 })],
        'alloc.approve', (e) => {
          const changes = {};
          if (e.gpu_hours.value !== '') changes.gpu_hours = Number(e.gpu_hours.value);
          if (e.storage_gib.value !== '') changes.storage_gib = Number(e.storage_gib.value);
          return approve(changes);
        }) }, t('alloc.approve_changes')),
        h('button', { type: 'button', class: 'secondary', onclick: () => subform(formSlot,
          [field('text', 'alloc.question', { kind: 'textarea', required: true, maxlength: 8000 })],
          'alloc.ask_info', async (e) => {
            await post(r.id, 'comments', { text: e.text.value, needs_info: true });
            await done(okNote(t('alloc.asked_note', { project: `${r.tenant}/${r.project}` })));
          }) }, t('alloc.ask_info')),
        h('button', { type: 'button', class: 'danger', onclick: () => subform(formSlot,
          [field('reason', 'alloc.reject_reason', { kind: 'textarea', required: true, maxlength: 2000 })],
          'alloc.reject', async (e) => {
            await post(r.id, 'reject', { reason: e.reason.value });
            await done(okNote(t('alloc.rejected_note', { project: `${r.tenant}/${r.project}` })));
          }) }, t('alloc.reject'))),
      formSlot,
      h('details', {}, h('summary', {}, t('alloc.thread')), threadSlot));
    past(r, pastSlot).catch((e) => clear(pastSlot, h('p', { class: 'alert' }, e.message)));
    api.get(tpath(r.tenant, 'allocation-requests', r.id))
      .then((full) => clear(threadSlot, thread(full, load)))
      .catch((e) => clear(threadSlot, h('p', { class: 'alert' }, e.message)));
    return el;
  }

  async function load() {
    const [pending, waiting] = await Promise.all([
      api.all('allocation-requests', { state: 'pending' }, 500),
      api.all('allocation-requests', { state: 'needs_info' }, 500),
    ]);
    if (!ctx.isCurrent()) return;
    const items = [...pending, ...waiting];
    clear(list, items.length ? items.map(card) : h('p', {}, t('alloc.queue_empty')));
  }

  body.append(h('section', { 'aria-labelledby': 'alloc-queue' },
    h('h2', { id: 'alloc-queue' }, t('alloc.queue')),
    h('p', { class: 'lead' }, t('alloc.queue_lead')), status, list));
  await load();
}
