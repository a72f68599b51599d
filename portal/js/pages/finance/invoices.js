// finance/invoices.js - generate a tenant's monthly invoice, list invoices,
// review one (lines, subtotals, total), finalize it and download it as CSV.
// Amounts are the server's exact decimal strings, shown as given: never
// parsed into floats, never summed here.
import { api } from '../../api.js';
import { t, fmtTime } from '../../i18n.js';
import { h, clear, field, section, table, onSubmit, showErrors, clearErrors, alertBox, errorText, toast, download, nextId } from '../../ui.js';
import { pagedList, trimDecimal, numericColumns, monthUTC, replaceHashQuery } from './common.js';

const KINDS = ['usage', 'adjustment', 'credit'];
const UNITS = ['gpu_hour', 'core_hour', 'gib_hour'];

function stateBadge(state) {
  return h('span', { class: `badge invoice-${state}` }, t(state === 'final' ? 'fin.state_final' : 'fin.state_draft'));
}

function money(total) {
  if (!total) return '—';
  return total.currency ? `${total.amount} ${total.currency}` : total.amount;
}

const unitText = (u) => (UNITS.includes(u) ? t(`fin.unit_${u}`) : u);
const kindText = (k) => (KINDS.includes(k) ? t(`fin.kind_${k}`) : k);

function tenantOptions(tenants, anyKey) {
  return [...(anyKey ? [['', t(anyKey)]] : []), ...tenants.map((s) => [s, s])];
}

// The month control: YYYY-MM (Chromium's month picker gives that value; elsewhere a text box).
function periodField(labelKey, value, attrs = {}) {
  const f = field('period', labelKey, {
    type: 'month', pattern: '[0-9]{4}-[0-9]{2}', placeholder: 'YYYY-MM', hint: t('fin.period_hint'), ...attrs,
  });
  if (value) f.querySelector('input').value = value;
  return f;
}

export async function invoicesPart(ctx, tenants) {
  const detail = h('div', {});
  const detailCard = h('section', { class: 'card', 'aria-labelledby': nextId('inv'), hidden: true }, detail);
  let listRefresh = async () => {};

  // ---- one invoice ----
  async function openInvoice(id, { focus = true } = {}) {
    detailCard.hidden = false;
    clear(detail, h('p', { class: 'loading' }, t('app.loading')));
    try {
      const inv = await api.get(`invoices/${encodeURIComponent(id)}`);
      if (!ctx.isCurrent()) return;
      showInvoice(inv, { focus });
    } catch (err) {
      clear(detail, h('h2', { id: detailCard.getAttribute('aria-labelledby') }, t('fin.invoice')), alertBox(err));
    }
  }

  function showInvoice(inv, { focus = true, message } = {}) {
    if (!ctx.isCurrent()) return;
    detailCard.hidden = false;
    replaceHashQuery('finance', { invoice: inv.id });
    const headId = detailCard.getAttribute('aria-labelledby');
    const cur = inv.total && inv.total.currency;
    const heading = h('h2', { id: headId, tabindex: '-1' },
      t('fin.invoice_of', { tenant: inv.tenant, period: inv.period }), ' ', stateBadge(inv.state));
    const status = h('div', { role: 'status' }, message ? h('p', { class: 'note' }, message) : null);
    const problem = h('div', {});

    const lines = numericColumns(table([
      { label: t('job.project'), render: (l) => (l.project_name && l.project_name !== l.project
        ? [l.project, h('br'), h('small', { class: 'hint' }, l.project_name)] : l.project) },
      { label: t('fin.resource'), key: 'resource' },
      { label: t('fin.kind'), render: (l) => [kindText(l.kind), l.original_period ? ` (${l.original_period})` : ''] },
      { label: t('fin.quantity'), render: (l) => trimDecimal(l.quantity) },
      { label: t('fin.unit'), render: (l) => unitText(l.unit) },
      { label: t('fin.unit_price'), render: (l) => l.unit_price },
      { label: cur ? t('fin.amount_in', { cur }) : t('fin.amount'), render: (l) => l.amount },
    ], inv.lines || [], { caption: t('fin.lines_caption', { tenant: inv.tenant, period: inv.period }), empty: 'fin.no_lines' }),
    [3, 5, 6]);

    const subtotals = numericColumns(table([
      { label: t('job.project'), key: 'project' },
      { label: cur ? t('fin.amount_in', { cur }) : t('fin.amount'), render: (s) => s.amount },
    ], inv.subtotals || [], { caption: t('fin.subtotals'), empty: 'fin.no_lines' }), [1]);

    const actions = h('div', { class: 'actions', style: { margin: '1rem 0' } });
    const confirmBox = h('div', {});
    const csv = h('button', { type: 'button', class: 'secondary' }, t('app.download_csv'));
    csv.addEventListener('click', async () => {
      csv.disabled = true;
      try {
        const res = await api.text(`invoices/${encodeURIComponent(inv.id)}`, null, 'text/csv');
        download(res.filename || `invoice-${inv.tenant}-${inv.period}.csv`, res.text, 'text/csv');
      } catch (err) {
        clear(problem, alertBox(err));
      } finally {
        csv.disabled = false;
      }
    });
    actions.append(csv);

    if (inv.state === 'draft') {
      const regen = h('button', { type: 'button', class: 'secondary' }, t('fin.regenerate'));
      regen.addEventListener('click', async () => {
        regen.disabled = true;
        clear(problem);
        try {
          const fresh = await api.post('invoices', { tenant: inv.tenant, period: inv.period });
          showInvoice(fresh, { message: t('fin.regenerated') });
          listRefresh().catch(() => {});
        } catch (err) {
          clear(problem, alertBox(err));
          regen.disabled = false;
        }
      });
      const fin = h('button', { type: 'button', 'aria-expanded': 'false' }, t('fin.finalize'));
      fin.addEventListener('click', () => {
        if (confirmBox.firstChild) {
          clear(confirmBox);
          fin.setAttribute('aria-expanded', 'false');
          return;
        }
        fin.setAttribute('aria-expanded', 'true');
        clear(problem);
        const go = h('button', { type: 'button', class: 'danger' }, t('fin.finalize_now'));
        const cancel = h('button', { type: 'button', class: 'secondary' }, t('app.cancel'));
        cancel.addEventListener('click', () => {
          clear(confirmBox);
          fin.setAttribute('aria-expanded', 'false');
          fin.focus();
        });
        go.addEventListener('click', async () => {
          go.disabled = true;
          cancel.disabled = true;
          try {
            const done = await api.post(`invoices/${encodeURIComponent(inv.id)}/finalize`);
            toast(t('fin.finalized'));
            showInvoice(done, { message: t('fin.finalized_note') });
            listRefresh().catch(() => {});
          } catch (err) {
            clear(confirmBox);
            fin.setAttribute('aria-expanded', 'false');
            clear(problem, h('div', { class: 'alert', role: 'alert' },
              h('strong', {}, t(err.status === 409 ? 'fin.finalize_refused' : 'fin.finalize_failed')), ' ',
              errorText(err),
              err.status === 409 ? h('p', {}, t('fin.finalize_409_hint')) : null));
          }
        });
        clear(confirmBox, h('div', { class: 'note' },
          h('p', {}, t('fin.finalize_warning', { tenant: inv.tenant, period: inv.period, total: money(inv.total) })),
          h('div', { class: 'actions' }, go, cancel)));
        go.focus();
      });
      actions.prepend(fin);
      actions.append(regen);
    }

    clear(detail,
      heading,
      status,
      h('p', { class: 'big' }, t('fin.total'), ': ', money(inv.total)),
      h('dl', { class: 'props' },
        h('dt', {}, t('fin.state')), h('dd', {}, t(inv.state === 'final' ? 'fin.state_final_long' : 'fin.state_draft_long')),
        h('dt', {}, t('fin.generated')), h('dd', {}, t('fin.at_by', { at: fmtTime(inv.generated_at), by: inv.generated_by || '—' })),
        h('dt', {}, t('fin.finalized_at')), h('dd', {}, inv.finalized_at
          ? t('fin.at_by', { at: fmtTime(inv.finalized_at), by: inv.finalized_by || '—' }) : '—'),
        h('dt', {}, t('fin.invoice_id')), h('dd', {}, h('code', {}, inv.id))),
      actions,
      confirmBox,
      problem,
      h('h3', {}, t('fin.lines')),
      lines,
      h('h3', {}, t('fin.subtotals')),
      subtotals);
    if (focus) heading.focus({ preventScroll: false });
  }

  // ---- generate ----
  const genForm = onSubmit(h('form', { class: 'form-grid', novalidate: true },
    field('tenant', 'app.tenant', { kind: 'select', options: tenantOptions(tenants), required: true }),
    periodField('fin.period', monthUTC(-1), { required: true }),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('fin.generate')))),
  (v) => api.post('invoices', { tenant: v.tenant, period: v.period }),
  async (inv) => {
    toast(t('fin.generated_toast'));
    showInvoice(inv, { message: t('fin.generated_note') });
    await listRefresh().catch(() => {});
  });

  // ---- list ----
  const filterForm = h('form', { class: 'filters', role: 'search', 'aria-label': t('fin.invoice_filters') },
    field('tenant', 'app.tenant', { kind: 'select', options: tenantOptions(tenants, 'fin.all_tenants') }),
    periodField('fin.period', ''),
    h('button', { type: 'submit', class: 'secondary' }, t('fin.show')));
  // read when Show is pressed; "Load more" and refreshes go on with the list's own query
  const filters = () => {
    const fd = new FormData(filterForm);
    return { tenant: fd.get('tenant') || undefined, period: String(fd.get('period') || '').trim() || undefined };
  };
  const list = pagedList(
    (cursor, query) => api.get('invoices', { ...query, limit: 50, cursor }),
    (_, all) => clear(list.body, numericColumns(table([
      { label: t('app.tenant'), key: 'tenant' },
      { label: t('fin.period'), key: 'period' },
      { label: t('fin.state'), render: (i) => stateBadge(i.state) },
      { label: t('fin.total'), render: (i) => money(i.total) },
      { label: t('fin.generated'), render: (i) => t('fin.at_by', { at: fmtTime(i.generated_at), by: i.generated_by || '—' }) },
      { label: t('fin.finalized_at'), render: (i) => (i.finalized_at ? t('fin.at_by', { at: fmtTime(i.finalized_at), by: i.finalized_by || '—' }) : '—') },
      { label: t('app.actions'), render: (i) => h('button', {
        type: 'button', class: 'secondary', onclick: () => openInvoice(i.id),
        'aria-label': t('fin.review_label', { tenant: i.tenant, period: i.period }),
      }, t('fin.review')) },
    ], all, { caption: t('fin.invoices'), empty: 'fin.no_invoices' }), [3])),
    { countKey: 'fin.invoice_count' });
  listRefresh = () => list.reload(list.query());
  filterForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    clearErrors(filterForm);
    list.reload(filters()).catch((err) => showErrors(filterForm, err));
  });

  await list.reload(filters());
  const wanted = ctx.query.get('invoice');
  if (wanted && /^[0-9a-f-]{36}$/i.test(wanted)) await openInvoice(wanted, { focus: false });

  return [
    section('fin.generate_title',
      h('p', { class: 'hint' }, t('fin.generate_lead')),
      genForm),
    section('fin.invoices', filterForm, list.el),
    detailCard,
  ];
}
