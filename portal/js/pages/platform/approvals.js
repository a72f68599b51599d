// platform/approvals.js - approvals waiting for me: requests of other platform
// admins can be approved (the operation runs then, once) or rejected with a
// reason; my own requests wait for another admin and can be withdrawn. The
// list refreshes live without disturbing a reason being typed.
import { api } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, section, field, errorText } from '../../ui.js';
import { statusLine, okNote, handleSubmit, keyedList, every, when, confirmInline, afterChange } from './common.js';
import { setPendingCount } from '../platform.js';

const enc = encodeURIComponent;

function resultNote(a) {
  const r = a.result || {};
  const st = r.status;
  if (st && st >= 400) {
    const detail = (r.body && (r.body.detail || r.body.title)) || '';
    return h('p', { class: 'alert', role: 'alert' },
      t('padmin.approved_failed', { summary: a.operation.summary, status: st, detail }));
  }
  return okNote(t('padmin.approved_ok', { summary: a.operation.summary, status: st || '—' }));
}

export async function render(ctx, body, { pending }) {
  const me = ctx.me.username;
  let items = pending;
  const status = statusLine();
  const theirs = h('div', { class: 'approval-list' });
  const mine = h('div', { class: 'approval-list' });

  function card(a) {
    const headId = `padmin-approval-${a.id}`;
    const own = a.requested_by === me;
    const op = a.operation || {};
    const actions = h('div', { class: 'actions' });
    const reasonSlot = h('div', {});
    const error = h('p', { class: 'form-error', role: 'alert' });
    const el = h('article', { class: 'card', 'aria-labelledby': headId, dataset: { approval: a.id } },
      h('h3', { id: headId }, op.summary || `${op.method} ${op.path}`),
      h('dl', { class: 'props' },
        h('dt', {}, t('padmin.operation')), h('dd', {}, h('code', {}, `${op.method} ${op.path}`)),
        op.action ? [h('dt', {}, t('padmin.action')), h('dd', {}, h('code', {}, op.action))] : null,
        h('dt', {}, t('padmin.requested_by_label')), h('dd', {}, a.requested_by),
        h('dt', {}, t('padmin.requested_at')), h('dd', {}, when(a.created_at)),
        h('dt', {}, t('padmin.expires_at')), h('dd', {}, when(a.expires_at))),
      op.body ? h('details', {}, h('summary', {}, t('padmin.request_body')),
        h('pre', { class: 'example' }, JSON.stringify(op.body, null, 2))) : null,
      own ? h('p', { class: 'note' }, t('padmin.waiting_other')) : null,
      actions, reasonSlot, error);

    // The decision is made: nothing on this card may be sent again (a retry
    // would fail), the outcome is reported, then the lists refresh; the card
    // leaves and focus goes to the card now in its place, or the heading.
    const decided = async (out, approved) => {
      for (const b of el.querySelectorAll('button')) b.disabled = true;
      const list = el.parentElement;
      const at = list ? [...list.children].indexOf(el) : -1;
      await afterChange(status, approved ? resultNote(out)
        : okNote(t(own ? 'padmin.withdrawn' : 'padmin.rejected', { summary: op.summary || op.path })),
      refresh, { from: el, focus: () => (el.isConnected ? null : nextFocus(list, at)) });
    };
    const fail = (err) => {
      error.textContent = errorText(err);
      if (err.status === 409) refresh().catch(() => {});
    };

    if (own) {
      const withdraw = h('button', { type: 'button', class: 'secondary' }, t('padmin.withdraw'));
      withdraw.addEventListener('click', () => confirmInline(actions, t('padmin.withdraw_confirm'), async () =>
        decided(await api.post(`approvals/${enc(a.id)}/reject`, { reason: t('padmin.withdrawn_reason') }), false),
      { yesKey: 'padmin.withdraw' }));
      actions.append(withdraw);
    } else {
      const approve = h('button', { type: 'button' }, t('padmin.approve'));
      approve.addEventListener('click', async () => {
        approve.disabled = true;
        error.textContent = '';
        let out;
        try {
          out = await api.post(`approvals/${enc(a.id)}/approve`);
        } catch (err) {
          approve.disabled = false;
          fail(err);
          return;
        }
        await decided(out, true);
      });
      const reject = h('button', { type: 'button', class: 'danger' }, t('padmin.reject'));
      reject.addEventListener('click', () => {
        const form = h('form', { class: 'stack', novalidate: true },
          field('reason', 'padmin.reason', { kind: 'textarea', maxlength: 1000, hint: t('padmin.reason_hint') }),
          h('div', { class: 'actions' },
            h('button', { type: 'submit', class: 'danger' }, t('padmin.reject_confirm')),
            h('button', { type: 'button', class: 'secondary', onclick: () => { clear(reasonSlot); reject.focus(); } },
              t('app.cancel'))));
        handleSubmit(form, async () => {
          const reason = form.querySelector('[name="reason"]').value.trim();
          const out = await api.post(`approvals/${enc(a.id)}/reject`, reason ? { reason } : {});
          clear(reasonSlot);
          await decided(out, false);
        });
        clear(reasonSlot, form);
        form.querySelector('textarea').focus();
      });
      actions.append(approve, reject);
    }
    return el;
  }

  // The card now at index `at` of list (or the one before it), else the
  // heading of list's section.
  function nextFocus(list, at) {
    const cards = list ? [...list.querySelectorAll(':scope > article')] : [];
    if (cards.length) return cards[Math.min(Math.max(at, 0), cards.length - 1)];
    const sec = list && list.closest('section');
    return sec ? sec.querySelector('h2') : null;
  }

  const syncTheirs = keyedList(theirs, { key: (a) => a.id, make: card, empty: t('padmin.none_waiting') });
  const syncMine = keyedList(mine, { key: (a) => a.id, make: card, empty: t('padmin.none_mine') });
  function draw() {
    const others = items.filter((a) => a.requested_by !== me);
    syncTheirs(others);
    syncMine(items.filter((a) => a.requested_by === me));
    setPendingCount(others.length);
  }
  async function refresh() {
    items = (await api.get('approvals', { state: 'pending', limit: 200 })).items;
    draw();
  }
  draw();
  every(ctx, 10000, refresh);

  body.append(
    section('padmin.waiting_for_me', h('p', { class: 'lead' }, t('padmin.approvals_lead')), status, theirs),
    section('padmin.my_requests', mine));
}
