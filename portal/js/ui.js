// ui.js - small DOM helpers shared by the pages. Elements are built with
// h() and text nodes only (never innerHTML): names, labels and log lines come
// from users and registries and must never become markup.
import { t, fmtTime } from './i18n.js';

let uid = 0;
export const nextId = (prefix = 'f') => `${prefix}-${++uid}`;

// h('button', {type: 'button', onclick: fn, class: 'x', style: {width: '5%'}}, 'text', child...)
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    // CSSOM, not a style attribute: the CSP (style-src 'self') forbids those
    else if (k === 'style') Object.assign(el.style, v);
    else if (k === 'value' || k === 'checked' || k === 'selected') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export function clear(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// A page section with a heading (h2) and an id for aria-labelledby.
export function section(titleKey, ...children) {
  const id = nextId('s');
  return h('section', { 'aria-labelledby': id, class: 'card' },
    h('h2', { id }, t(titleKey)), ...children);
}

// table([{key, label, render?}], rows, {caption, empty}) - render(row) may return nodes
export function table(columns, rows, { caption, empty = 'app.none', rowAttrs } = {}) {
  if (!rows.length) return h('p', { class: 'empty' }, t(empty));
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': caption || t('app.none') },
    h('table', {},
      caption ? h('caption', { class: 'sr-only' }, caption) : null,
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col' }, c.label)))),
      h('tbody', {}, rows.map((r) => h('tr', rowAttrs ? rowAttrs(r) : {},
        columns.map((c) => h('td', { 'data-label': c.label },
          c.render ? c.render(r) : fmtCell(r[c.key]))))))));
}

function fmtCell(v) {
  if (v === null || v === undefined || v === '') return '—';
  if (typeof v === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d/.test(v)) return fmtTime(v);
  if (typeof v === 'boolean') return t(v ? 'app.yes' : 'app.no');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

// A labelled form control with a slot for its error message. name is the
// API field the server names in problem+json "errors" (so messages land here).
// kind: 'input' (default), 'select' (options: [[value, text]]), 'textarea'.
export function field(name, labelKey, { kind = 'input', options = [], hint, ...attrs } = {}) {
  const id = nextId(name.replace(/[^a-z0-9]/gi, '-'));
  const errId = `${id}-err`;
  const hintId = hint ? `${id}-hint` : undefined;
  const common = { id, name, 'aria-describedby': [hintId, errId].filter(Boolean).join(' '), ...attrs };
  let control;
  if (kind === 'select')
    control = h('select', common, options.map(([v, text]) => h('option', { value: v }, text)));
  else if (kind === 'textarea') control = h('textarea', common);
  else control = h('input', common);
  return h('div', { class: 'field', dataset: { field: name } },
    h('label', { for: id }, t(labelKey)),
    control,
    hint ? h('small', { id: hintId, class: 'hint' }, hint) : null,
    h('span', { id: errId, class: 'field-error', role: 'alert' }));
}

// Put a failed call's messages next to the fields they name; what names no
// field of this form goes into the form's alert line. Returns the message.
export function showErrors(form, err) {
  clearErrors(form);
  const rest = [];
  for (const e of (err && err.errors) || []) {
    const slot = form.querySelector(`[data-field="${CSS.escape(e.field || '')}"] .field-error`);
    if (slot) {
      slot.textContent = e.message;
      const control = slot.parentElement.querySelector('input,select,textarea');
      if (control) control.setAttribute('aria-invalid', 'true');
    } else rest.push(e.field ? `${e.field}: ${e.message}` : e.message);
  }
  const msg = errorText(err, rest);
  let alert = form.querySelector('.form-error');
  if (!alert) {
    alert = h('p', { class: 'form-error', role: 'alert' });
    form.append(alert);
  }
  alert.textContent = msg;
  const first = form.querySelector('[aria-invalid="true"]');
  if (first) first.focus();
  return msg;
}

export function clearErrors(form) {
  for (const s of form.querySelectorAll('.field-error, .form-error')) s.textContent = '';
  for (const c of form.querySelectorAll('[aria-invalid]')) c.removeAttribute('aria-invalid');
}

// The sentence to show for a failed call.
export function errorText(err, extra = []) {
  if (!err) return '';
  if (err.status === 429) return t('app.throttled', { s: err.retryAfter || '?' });
  const parts = [];
  if (err.errors && err.errors.length && !extra.length) parts.push(t('app.form_errors'));
  else parts.push(err.message || String(err));
  return [...parts, ...extra].join(' ');
}

// An inline alert for page-level errors.
export function alertBox(err) {
  return h('p', { class: 'alert', role: 'alert' }, typeof err === 'string' ? err : errorText(err));
}

export function toast(msg) {
  const el = document.getElementById('toast');
  el.textContent = msg;
  el.classList.add('show');
  clearTimeout(toast.timer);
  toast.timer = setTimeout(() => el.classList.remove('show'), 4000);
}

export function badge(state) {
  return h('span', { class: `badge state-${state}` }, t(`state.${state}`));
}

export function copyButton(text, labelKey = 'app.copy') {
  const b = h('button', { type: 'button', class: 'secondary' }, t(labelKey));
  b.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(typeof text === 'function' ? text() : text);
      toast(t('app.copied'));
    } catch {
      // clipboard refused (http, permissions): select the text for Ctrl+C instead
      const target = b.previousElementSibling;
      if (target) window.getSelection().selectAllChildren(target);
    }
  });
  return b;
}

export function download(filename, text, type = 'text/csv') {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: filename, hidden: true });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// Read a form's controls into an object of trimmed strings (empty ones left out).
export function formValues(form) {
  const out = {};
  for (const [k, v] of new FormData(form).entries()) {
    const s = typeof v === 'string' ? v.trim() : v;
    if (s !== '') out[k] = s;
  }
  return out;
}

// A form's submit handler that disables the button while fn(form) runs and
// shows its errors in place (fn builds the body itself: numbers, arrays, JSON).
export function handleSubmit(form, fn) {
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const button = form.querySelector('button[type="submit"]');
    if (button) button.disabled = true;
    try {
      await fn(form);
    } catch (err) {
      showErrors(form, err);
    } finally {
      if (button) button.disabled = false;
    }
  });
  return form;
}

// handleSubmit for flat forms: fn(values) gets the trimmed strings, and what it
// returns goes to onDone.
export function onSubmit(form, fn, onDone) {
  return handleSubmit(form, async (f) => {
    const result = await fn(formValues(f));
    if (onDone) await onDone(result);
  });
}

// A modal dialog (a native <dialog>: the rest of the page is inert, Escape closes it)
// with a heading and children. close() removes it and gives the focus back to what
// had it; onClose runs once however it closed. Returns {dialog, body, close}.
export function modal(title, children, { onClose } = {}) {
  const id = nextId('dlg');
  const back = document.activeElement;
  const body = h('div', { class: 'dialog-body' }, children);
  const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': id }, h('h2', { id }, title), body);
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    if (dialog.open) dialog.close();
    dialog.remove();
    if (back && back.isConnected && back.focus) back.focus();
    if (onClose) onClose();
  };
  dialog.addEventListener('cancel', (ev) => {
    ev.preventDefault();
    close();
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, body, close };
}
