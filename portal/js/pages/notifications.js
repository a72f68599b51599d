// notifications.js - the user's notification settings (docs/notifications.md):
// e-mail on or off and the events it brings, the projects to narrow to, the
// webhooks (add one with its secret, remove one; a stored secret is never shown,
// only that it is set, and saving leaves it as it is), and the delivery log:
// every e-mail and webhook delivery of the last 30 days with its state, attempts
// and last error, newest first.
import { api } from '../api.js';
import { t, fmtTime } from '../i18n.js';
import { h, clear, section, table, field, handleSubmit, alertBox, nextId, toast } from '../ui.js';

// the API's event names (one string: they are no text keys of the i18n table)
const EVENTS = 'job.ended job.failed job.preempted job.idle session.ready budget.80 budget.100 allocation.expiring'
  .split(' ');
const FIRST_EVENT = EVENTS[0];
const evKey = (e) => `notify.ev.${e.replace('.', '_')}`;

// A fieldset of one checkbox per event; chosen: the events ticked.
function eventBoxes(name, legendKey, chosen) {
  const errId = nextId(`${name}-err`);
  return h('fieldset', { class: 'field wide', dataset: { field: name }, 'aria-describedby': errId },
    h('legend', {}, t(legendKey)),
    h('div', { class: 'checks inline' }, EVENTS.map((e) => {
      const id = nextId('ev');
      return h('label', { for: id }, h('input', { type: 'checkbox', id, name, value: e, checked: chosen.includes(e) }),
        ' ', t(evKey(e)));
    })),
    h('span', { id: errId, class: 'field-error', role: 'alert' }));
}

const ticked = (form, name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((c) => c.value);

export async function render(ctx) {
  const settingsSlot = h('div', {});
  const hooksSlot = h('div', {});
  const logSlot = h('div', {});
  const logStatus = h('p', { class: 'hint', role: 'status' });
  let prefs = null;

  // Save prefs with the webhooks given ({url, events[, secret]}); a stored one
  // without its secret keeps it (the server's rule).
  async function save(next) {
    const body = {
      email: next.email, events: next.events, projects: next.projects,
      webhooks: next.webhooks.map((w) => {
        const o = { url: w.url, events: w.events };
        if (w.secret) o.secret = w.secret;
        return o;
      }),
    };
    prefs = await api.put('me/notifications', body);
    return prefs;
  }

  function settingsForm() {
    const email = h('input', { type: 'checkbox', id: 'notify-email', name: 'email', checked: prefs.email });
    const form = h('form', { class: 'form-grid', novalidate: true },
      h('div', { class: 'field wide' },
        h('label', { for: 'notify-email', style: { fontWeight: 'normal' } }, email, ' ', t('notify.email_on')),
        h('small', { class: 'hint' }, ctx.me.email ? t('notify.email_to', { email: ctx.me.email }) : t('notify.no_email'))),
      eventBoxes('events', 'notify.events', prefs.events),
      field('projects', 'notify.projects', { value: prefs.projects.join(', '), autocomplete: 'off', hint: t('notify.projects_hint') }),
      h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('notify.save'))));
    handleSubmit(form, async (f) => {
      const projects = f.elements.projects.value.split(',').map((s) => s.trim()).filter(Boolean);
      await save({ ...prefs, email: email.checked, events: ticked(f, 'events'), projects });
      if (!ctx.isCurrent()) return;
      toast(t('app.saved'));
      showHooks();
    });
    return form;
  }

  function showHooks() {
    const rows = prefs.webhooks.map((w, i) => ({ ...w, i }));
    const list = table([
      { label: t('notify.url'), render: (w) => h('code', {}, w.url) },
      { label: t('notify.hook_events'), render: (w) => w.events.map((e) => t(evKey(e))).join(', ') || '—' },
      { label: t('notify.secret'), render: (w) => t(w.secret_set ? 'notify.secret_set' : 'notify.secret_missing') },
      {
        label: t('app.actions'),
        render: (w) => h('button', {
          type: 'button', class: 'danger', 'aria-label': t('notify.remove_named', { url: w.url }),
          onclick: async (ev) => {
            ev.target.disabled = true;
            try {
              await save({ ...prefs, webhooks: prefs.webhooks.filter((_, k) => k !== w.i) });
            } catch (err) {
              ev.target.disabled = false;
              clear(hooksStatus, alertBox(err));
              return;
            }
            if (!ctx.isCurrent()) return;
            toast(t('notify.removed'));
            showHooks();
          },
        }, t('notify.remove')),
      },
    ], rows, { caption: t('notify.webhooks'), empty: 'notify.no_hooks' });
    const hooksStatus = h('div', {});
    const full = prefs.webhooks.length >= 5;
    const addForm = h('form', { class: 'form-grid', novalidate: true },
      h('h3', { class: 'wide' }, t('notify.add_title')),
      // the server names every webhook problem (URL, secret, events, how many) "webhooks"
      field('webhooks', 'notify.url', { type: 'url', required: true, maxlength: 2048, autocomplete: 'off', placeholder: 'https://', hint: t('notify.url_hint') }),
      field('secret', 'notify.secret', { type: 'password', required: true, minlength: 16, maxlength: 256, autocomplete: 'new-password', hint: t('notify.secret_hint') }),
      eventBoxes('hook_events', 'notify.hook_events', prefs.events.length ? prefs.events : [FIRST_EVENT]),
      h('div', { class: 'actions wide' }, h('button', { type: 'submit', disabled: full }, t('notify.add'))),
      full ? h('p', { class: 'hint wide' }, t('notify.hooks_full')) : null);
    handleSubmit(addForm, async (f) => {
      const hook = { url: f.elements.webhooks.value.trim(), secret: f.elements.secret.value, events: ticked(f, 'hook_events') };
      await save({ ...prefs, webhooks: [...prefs.webhooks, hook] });
      if (!ctx.isCurrent()) return;
      toast(t('notify.added'));
      showHooks();
    });
    clear(hooksSlot, list, hooksStatus, addForm);
  }

  let cursor = null;
  let shown = [];
  async function loadLog(more) {
    let page;
    try {
      page = await api.get('me/notifications/deliveries', { limit: 50, cursor: more ? cursor : undefined });
    } catch (err) {
      if (ctx.isCurrent()) clear(logSlot, alertBox(err));
      return;
    }
    if (!ctx.isCurrent()) return;
    shown = more ? [...shown, ...page.items] : page.items;
    cursor = page.next_cursor;
    const rows = table([
      { label: t('notify.when'), render: (d) => fmtTime(d.created_at) },
      { label: t('notify.event'), render: (d) => t(evKey(d.event)) },
      { label: t('notify.channel'), render: (d) => (d.channel === 'email' ? t('notify.by_email') : h('code', {}, d.url)) },
      { label: t('notify.state'), render: (d) => h('span', { class: `badge state-${d.state === 'delivered' ? 'succeeded' : d.state === 'failed' ? 'failed' : 'queued'}` }, t(`notify.state_${d.state}`)) },
      { key: 'attempts', label: t('notify.attempts') },
      { label: t('notify.last_error'), render: (d) => d.last_error || '—' },
    ], shown, { caption: t('notify.log'), empty: 'notify.no_log' });
    clear(logSlot, rows,
      cursor ? h('button', { type: 'button', class: 'secondary', onclick: () => loadLog(true) }, t('app.more')) : null);
    logStatus.textContent = t('notify.log_count', { n: shown.length });
  }

  try {
    prefs = await api.get('me/notifications');
  } catch (err) {
    if (ctx.isCurrent()) ctx.main.append(alertBox(err));
    return;
  }
  if (!ctx.isCurrent()) return;
  clear(settingsSlot, settingsForm());
  showHooks();
  ctx.main.append(
    h('h1', {}, t('notify.title')),
    h('p', { class: 'lead' }, t('notify.lead')),
    section('notify.settings', settingsSlot),
    section('notify.webhooks', h('p', { class: 'hint' }, t('notify.webhooks_lead')), hooksSlot),
    section('notify.log', h('div', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: () => loadLog(false) }, t('app.refresh'))),
    logStatus, logSlot));
  await loadLog(false);
}
