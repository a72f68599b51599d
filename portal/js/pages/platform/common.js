// platform/common.js - helpers the admin pages share (platform admin tabs and
// the tenant admin page): quota editors, inline confirmations, approval notes,
// JSON fields, and a keyed list that refreshes without losing focus or input.
import { t, fmtNum, fmtTime } from '../../i18n.js';
import { h, clear, nextId, errorText } from '../../ui.js';

// Non-GPU resources, in the order the editors show them.
export const TENANT_RESOURCES = ['cpu', 'memory_gib', 'jobs', 'gpu_hours_month', 'storage_gib',
  'home_storage_gib'];
// a project's storage_gib is its storage space (a tenant's is its images)
export const PROJECT_RESOURCES = ['cpu', 'memory_gib', 'jobs', 'gpu_hours_month', 'storage_gib'];

// Resource names as a reader knows them (the API's name stays visible beside it).
const RESOURCE_KEYS = {
  cpu: 'padmin.res_cpu',
  memory_gib: 'padmin.res_memory_gib',
  jobs: 'padmin.res_jobs',
  gpu_hours_month: 'padmin.res_gpu_hours_month',
  storage_gib: 'padmin.res_storage_gib',
  home_storage_gib: 'padmin.res_home_storage_gib',
};
export function resourceLabel(res) {
  if (res.startsWith('gpu:')) return t('padmin.res_gpu', { type: res.slice(4) });
  return RESOURCE_KEYS[res] ? t(RESOURCE_KEYS[res]) : res;
}

export const isGpu = (res) => res.startsWith('gpu:');

// GPU resources first (sorted), then the others in their fixed order.
export function orderResources(names, fixed) {
  const set = new Set(names);
  const gpus = [...set].filter(isGpu).sort();
  const rest = fixed.filter((r) => set.has(r));
  const other = [...set].filter((r) => !isGpu(r) && !fixed.includes(r)).sort();
  return [...gpus, ...rest, ...other];
}

// "" -> undefined; a number -> the number; anything else as typed (the server
// then names what is wrong with it next to the field).
export function amount(s) {
  const v = String(s ?? '').trim();
  if (v === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) ? n : v;
}

const shown = (v) => (v === null || v === undefined ? '' : String(v));

/**
 * A quota editor: one fieldset per resource, named resources.<res> so the
 * server's field errors land in it. rows: [{res, guaranteed, limit, note}]
 * (note: a line shown under the legend, e.g. the tenant's ceiling; label: a name
 * other than the resource's usual one).
 * Returns {el, read()} where read() gives the body's "resources" object.
 */
export function quotaEditor(rows, { withGuarantee }) {
  const inputs = new Map();
  const el = h('div', { class: 'form-grid quota-editor' }, rows.map((r) => {
    const errId = nextId('qerr');
    const noteId = r.note ? nextId('qnote') : null;
    const describedBy = [noteId, errId].filter(Boolean).join(' ');
    const gId = nextId('qg');
    const lId = nextId('ql');
    const g = withGuarantee ? h('input', {
      id: gId, name: `guaranteed.${r.res}`, type: 'number', min: '0', step: 'any', inputmode: 'decimal',
      value: shown(r.guaranteed), 'aria-describedby': describedBy,
    }) : null;
    const l = h('input', {
      id: lId, name: `limit.${r.res}`, type: 'number', min: '0', step: 'any', inputmode: 'decimal',
      value: shown(r.limit), 'aria-describedby': describedBy,
      placeholder: isGpu(r.res) && withGuarantee ? '0' : t('padmin.unlimited'),
    });
    inputs.set(r.res, { g, l });
    return h('fieldset', { class: 'field', dataset: { field: `resources.${r.res}`, resource: r.res } },
      h('legend', {}, h('strong', {}, r.label || resourceLabel(r.res)), ' ', h('code', {}, r.res)),
      r.note ? h('small', { id: noteId, class: 'hint' }, r.note) : null,
      withGuarantee ? h('label', { for: gId }, t('padmin.guaranteed')) : null,
      g,
      h('label', { for: lId }, t('padmin.limit')),
      l,
      h('span', { id: errId, class: 'field-error', role: 'alert' }));
  }));
  function read() {
    const out = {};
    for (const [res, { g, l }] of inputs) {
      const gv = g ? amount(g.value) : undefined;
      const lv = amount(l.value);
      if (gv === undefined && lv === undefined) continue;
      const entry = {};
      if (gv !== undefined) entry.guaranteed = gv;
      if (lv !== undefined) entry.limit = lv;
      out[res] = entry;
    }
    return out;
  }
  return { el, read };
}

// "guaranteed 2, limit 2, used 1" of a tenant's quota entry.
export function tenantQuotaText(q) {
  if (!q) return t('padmin.tenant_none');
  return t('padmin.tenant_line', {
    guaranteed: q.guaranteed === null || q.guaranteed === undefined ? '—' : fmtNum(q.guaranteed),
    limit: q.limit === null || q.limit === undefined ? t('padmin.unlimited') : fmtNum(q.limit),
    used: fmtNum(q.used || 0),
  });
}

// A polite status line a form reports its outcome in.
export function statusLine() {
  return h('div', { class: 'status-line', role: 'status', 'aria-live': 'polite' });
}

// The note for a 202 answer: the change waits for a second platform admin.
export function approvalNote(approval) {
  const op = (approval && approval.operation) || {};
  return h('p', { class: 'note' },
    h('strong', {}, t('app.approval_pending')), ' ',
    op.summary ? t('padmin.approval_summary', { summary: op.summary }) : null);
}

export function okNote(text) {
  return h('p', { class: 'note' }, text);
}

/**
 * Ask before a destructive action, in place: slot's content is swapped for the
 * question and Confirm/Cancel buttons (focus moves to Cancel, the safe one);
 * Cancel puts the previous content back. onYes may throw: the error is shown
 * and Confirm is offered again, so onYes must throw only when the change was
 * not made (report it and refresh through afterChange(), which does not throw).
 */
export function confirmInline(slot, question, onYes, { yesKey = 'app.confirm', danger = true } = {}) {
  const before = [...slot.childNodes];
  const error = h('span', { class: 'field-error', role: 'alert' });
  const yes = h('button', { type: 'button', class: danger ? 'danger' : null }, t(yesKey));
  const no = h('button', { type: 'button', class: 'secondary' }, t('app.cancel'));
  const restore = () => {
    clear(slot, ...before);
    const again = slot.querySelector('button');
    if (again) again.focus();
  };
  no.addEventListener('click', restore);
  yes.addEventListener('click', async () => {
    yes.disabled = true;
    no.disabled = true;
    try {
      await onYes();
    } catch (err) {
      error.textContent = errorText(err);
      yes.disabled = false;
      no.disabled = false;
    }
  });
  clear(slot, h('span', { class: 'actions', role: 'group', 'aria-label': question },
    h('span', {}, question), yes, no, error));
  no.focus();
  return restore;
}

/**
 * A textarea for a JSON object (name: the API field). parse(form) gives the
 * object, undefined when empty, or throws after showing "not JSON" in place.
 */
export function jsonObject(form, name) {
  const control = form.querySelector(`[name="${name}"]`);
  const text = control ? control.value.trim() : '';
  if (!text) return undefined;
  let v;
  try {
    v = JSON.parse(text);
  } catch (e) {
    throw fieldError(name, t('padmin.not_json', { msg: e.message }));
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v))
    throw fieldError(name, t('padmin.not_object'));
  return v;
}

// An error shaped like the API's problem+json, for checks made in the browser.
export function fieldError(field, message) {
  return Object.assign(new Error(t('app.form_errors')), { status: 400, errors: [{ field, message }] });
}

export { handleSubmit } from '../../ui.js';

// Focus what is not a control (a status line, a heading, a card): tabindex -1
// lets a script focus it without adding it to the Tab order.
export function focusOn(el) {
  if (!el || !el.isConnected) return;
  if (!el.hasAttribute('tabindex')) el.setAttribute('tabindex', '-1');
  el.focus();
}

// Whether focus went nowhere (its element was redrawn away) or is still in
// `within` (e.g. the disabled Confirm of a row): then the page should move it;
// else the user has gone on elsewhere and keeps their place.
export function focusLost(within) {
  const a = document.activeElement;
  return !a || a === document.body || !a.isConnected || !!(within && within.contains(a));
}

/**
 * After a change the server made: report it in status (note), then refresh
 * the list it changed. A refresh that fails does not undo the report nor offer
 * the change again (a retry would fail): it adds that the list is stale. Never
 * throws. When the redraw took focus away (or it is still in `from`), focus
 * moves to `focus` (an element, or a function giving one, run after the
 * refresh; the status line when none or when the refresh failed).
 */
export async function afterChange(status, note, refresh, { from, focus } = {}) {
  clear(status, note);
  let target = status;
  try {
    await refresh();
    if (focus) target = (typeof focus === 'function' ? focus() : focus) || status;
  } catch (err) {
    status.append(h('p', { class: 'alert' }, t('padmin.refresh_failed', { msg: errorText(err) })));
  }
  if (focusLost(from)) focusOn(target);
}

/**
 * A list of items keyed by id whose rows are kept across refreshes: new items
 * get a row from make(item), gone ones are removed, and update(row, item) may
 * refresh a kept row's live parts (no focus or typed text is lost).
 */
export function keyedList(container, { key, make, update, empty }) {
  const rows = new Map();
  let emptyEl = null;
  return function sync(items) {
    const seen = new Set();
    let prev = null;
    for (const item of items) {
      const k = key(item);
      seen.add(k);
      let row = rows.get(k);
      if (!row) {
        row = make(item);
        rows.set(k, row);
      } else if (update) update(row, item);
      const want = prev ? prev.nextSibling : container.firstChild;
      if (want !== row) container.insertBefore(row, want);
      prev = row;
    }
    for (const [k, row] of rows)
      if (!seen.has(k)) {
        row.remove();
        rows.delete(k);
      }
    if (!items.length && !emptyEl && empty) {
      emptyEl = h('p', { class: 'empty' }, empty);
      container.append(emptyEl);
    } else if (items.length && emptyEl) {
      emptyEl.remove();
      emptyEl = null;
    }
  };
}

// setInterval for live data: skipped while the tab is hidden or a call still
// runs, stopped when the user leaves the page.
export function every(ctx, ms, fn) {
  let busy = false;
  const id = setInterval(async () => {
    if (document.hidden || busy || !ctx.isCurrent()) return;
    busy = true;
    try {
      await fn();
    } catch {
      // a failed refresh keeps what is shown; the next one tries again
    } finally {
      busy = false;
    }
  }, ms);
  ctx.onCleanup(() => clearInterval(id));
}

export const when = (iso) => (iso ? fmtTime(iso) : '—');

// Tenant roles and global roles, in words.
export const TENANT_ROLES = ['tenant_admin', 'member', 'viewer'];
const TENANT_ROLE_KEYS = {
  tenant_admin: 'tadmin.role_tenant_admin',
  member: 'tadmin.role_member',
  viewer: 'tadmin.role_viewer',
};
export const tenantRoleText = (r) => (TENANT_ROLE_KEYS[r] ? t(TENANT_ROLE_KEYS[r]) : r);

export const GLOBAL_ROLES = ['platform_admin', 'finance', 'auditor'];
const GLOBAL_ROLE_KEYS = {
  platform_admin: 'padmin.role_platform_admin',
  finance: 'padmin.role_finance',
  auditor: 'padmin.role_auditor',
};
export const globalRoleText = (r) => (GLOBAL_ROLE_KEYS[r] ? t(GLOBAL_ROLE_KEYS[r]) : r);
