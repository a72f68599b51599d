// tokens.js - the user's own API tokens (for CI pipelines and scripts):
// create one (name, scopes, expiry, optionally bound to one tenant or, for a node
// agent, one node), see its secret exactly once with a ready-to-paste curl example,
// list the tokens (no secrets: the server keeps only a hash) and revoke them.
// Below them the user's login sessions (the portal's sign-ins: when, from which
// address, which browser), each of which can be ended; ending this one signs out.
// Last, changing the password (with the current one): every session of the user
// ends, and the answer brings this browser a new one, so it stays signed in and
// the list shows only it; API tokens keep working.
import { api } from '../api.js';
import { t, fmtTime } from '../i18n.js';
import {
  h, clear, section, table, field, onSubmit, handleSubmit, copyButton, alertBox, errorText, nextId,
} from '../ui.js';

// The API's scopes (API.md "Roles"; components.schemas.Scope of openapi.json). A
// fixed list rather than the 300 KB OpenAPI document on every visit: each scope needs
// its own explanation in the text table anyway.
const SCOPES = ['jobs:read', 'jobs:write', 'images:read', 'images:write', 'usage:read',
  'billing:write', 'audit:read', 'audit:ingest', 'admin', 'gpu-faults:write'];

const scopeKey = (s) => `tokens.scope.${s.replace(':', '_')}`;

// The shell command a CI pipeline can run with the new token.
export function curlExample(secret, tenant, scopes) {
  const path = tenant && scopes.includes('jobs:read')
    ? `/api/v1/tenants/${encodeURIComponent(tenant)}/jobs` : '/api/v1/me';
  return `curl -sS -H 'Authorization: Bearer ${secret}' '${location.origin}${path}'`;
}

// The scopes a token of this user may carry: never more than its roles use (the
// server refuses the rest with 403, api/tokens.c); the others are not offered.
function scopesFor(me) {
  const roles = me.roles || [];
  const has = (r) => roles.includes(r);
  const tenantAdmin = (me.memberships || []).some((m) => m.role === 'tenant_admin');
  const allowed = {
    admin: has('platform_admin') || has('auditor') || tenantAdmin,
    'billing:write': has('platform_admin') || has('finance'),
    'audit:read': has('platform_admin') || has('auditor'),
    'audit:ingest': has('platform_admin'),
    'gpu-faults:write': has('platform_admin'),
  };
  return SCOPES.filter((s) => !(s in allowed) || allowed[s]);
}

export async function render(ctx) {
  const scopes = scopesFor(ctx.me);
  const memberships = ctx.me.memberships.map((m) => m.tenant);
  const secretSlot = h('div', { class: 'token-secret' });
  const listSlot = h('div', {});
  const listStatus = h('p', { class: 'hint', role: 'status' });
  let shownId = null;  // the token whose secret is on screen
  const sessionsSlot = h('div', {});
  const sessionsStatus = h('p', { class: 'hint', role: 'status' });

  async function loadList() {
    let items;
    try {
      items = await api.all('tokens');
    } catch (err) {
      if (ctx.isCurrent()) clear(listSlot, alertBox(err));
      return;
    }
    if (!ctx.isCurrent()) return;
    clear(listSlot, tokenTable(items));
  }

  async function loadSessions() {
    let items;
    try {
      items = await api.all('me/sessions');
    } catch (err) {
      if (ctx.isCurrent()) clear(sessionsSlot, alertBox(err));
      return;
    }
    if (!ctx.isCurrent()) return;
    clear(sessionsSlot, sessionTable(items));
  }

  // An action with a confirmation step (revoke a token, end a session). While
  // the call runs the buttons are aria-disabled (a disabled button would drop the
  // keyboard focus); a failure brings the first button back (focused) with the
  // reason, so it can be retried; a success runs done(), which says so in the
  // list's status line and moves the focus to the list's heading (the row and
  // its buttons are gone).
  // label/named: the button's text and accessible name; question, confirm: the
  // confirmation step's sentence and its Yes button; failed: the sentence before
  // the reason of a failure; run(): the call.
  function confirmCell({ label, named, question, confirm, failed, run, done }) {
    const cell = h('div', { class: 'actions' });
    const firstButton = () => h('button', {
      type: 'button', class: 'danger', onclick: ask, 'aria-label': named,
    }, label);
    function ask() {
      const yes = h('button', { type: 'button', class: 'danger' }, confirm);
      const no = h('button', { type: 'button', class: 'secondary' }, t('app.cancel'));
      let pending = false;
      yes.addEventListener('click', async () => {
        if (pending) return;
        pending = true;
        yes.setAttribute('aria-disabled', 'true');
        no.setAttribute('aria-disabled', 'true');
        try {
          await run();
        } catch (err) {
          if (!ctx.isCurrent()) return; // a 401: api.js has gone to the login page
          const again = firstButton();
          clear(cell, again, h('p', { class: 'alert', role: 'alert' }, failed, ' ', errorText(err)));
          again.focus();
          return;
        }
        await done();
      });
      no.addEventListener('click', () => {
        if (pending) return;
        const back = firstButton();
        clear(cell, back);
        back.focus();
      });
      clear(cell, h('span', {}, question), yes, no);
      yes.focus();
    }
    cell.append(firstButton());
    return cell;
  }

  function revokeCell(tok) {
    return confirmCell({
      label: t('tokens.revoke'),
      named: t('tokens.revoke_named', { name: tok.name }),
      question: t('tokens.revoke_question', { name: tok.name }),
      confirm: t('tokens.revoke_confirm'),
      failed: t('tokens.revoke_failed', { name: tok.name }),
      run: () => api.del(`tokens/${encodeURIComponent(tok.id)}`),
      done: async () => {
        if (shownId === tok.id) {
          clear(secretSlot);
          shownId = null;
        }
        await loadList();
        if (!ctx.isCurrent()) return;
        listStatus.textContent = t('tokens.revoked', { name: tok.name });
        listHeading.focus();
      },
    });
  }

  // End a session. Another one: whoever uses it is signed out at once. This one:
  // the server has ended it and cleared the cookie, so re-reading /me is a 401,
  // on which app.js drops what it knew of the user and shows the login page (as
  // after a session that ran out).
  function endCell(s) {
    const time = fmtTime(s.created_at);
    const from = s.source_ip || t('tokens.session_unknown_from');
    const agent = s.user_agent ? shortAgent(s.user_agent) : t('tokens.session_unknown_agent');
    const run = () => api.del(`me/sessions/${encodeURIComponent(s.id)}`);
    const ended = async () => {
      await loadSessions();
      if (!ctx.isCurrent()) return;
      sessionsStatus.textContent = t('tokens.session_ended', { agent, from, time });
      sessionsHeading.focus();
    };
    if (s.current) {
      return confirmCell({
        label: t('tokens.session_signout'),
        named: t('tokens.session_signout_named', { time }),
        question: t('tokens.session_signout_question'),
        confirm: t('tokens.session_signout_confirm'),
        failed: t('tokens.session_signout_failed'),
        run,
        done: async () => {
          try {
            await ctx.reloadSession();
          } catch (err) {
            if (err.status === 401 || !ctx.isCurrent()) return; // app.js is on its way to the login page
          }
          await ended(); // not a 401 (still signed in? the server busy?): the list says what is left
        },
      });
    }
    return confirmCell({
      label: t('tokens.session_end'),
      named: t('tokens.session_end_named', { agent, from, time }),
      question: t('tokens.session_end_question', { agent, from }),
      confirm: t('tokens.session_end_confirm'),
      failed: t('tokens.session_end_failed', { agent, from }),
      run,
      done: ended,
    });
  }

  function sessionTable(items) {
    return table([
      {
        label: t('tokens.session_signed_in'),
        render: (s) => [fmtTime(s.created_at),
          s.current ? [' ', h('span', { class: 'badge' }, t('tokens.session_current'))] : null],
      },
      { label: t('tokens.session_from'), render: (s) => s.source_ip || t('tokens.session_unknown') },
      {
        label: t('tokens.session_agent'),
        render: (s) => (s.user_agent
          ? h('span', { title: s.user_agent }, shortAgent(s.user_agent))
          : t('tokens.session_unknown')),
      },
      { label: t('tokens.expires'), render: (s) => fmtTime(s.expires_at) },
      { label: t('app.actions'), render: endCell },
    ], items, {
      caption: t('tokens.sessions'), empty: 'tokens.sessions_none',
      rowAttrs: (s) => (s.current ? { 'aria-current': 'true' } : {}),
    });
  }

  function tokenTable(items) {
    return table([
      { label: t('tokens.name'), render: (k) => h('strong', {}, k.name) },
      { label: t('tokens.scopes'), render: (k) => k.scopes.join(', ') },
      { label: t('tokens.tenant'), render: (k) => k.tenant || t('tokens.any_tenant') },
      { label: t('tokens.node'), render: (k) => k.node || '—' },
      { label: t('tokens.created'), render: (k) => fmtTime(k.created_at) },
      { label: t('tokens.expires'), render: (k) => expiry(k.expires_at) },
      { label: t('tokens.last_used'), render: (k) => (k.last_used_at ? fmtTime(k.last_used_at) : t('tokens.never')) },
      { label: t('app.actions'), render: revokeCell },
    ], items, { caption: t('tokens.list'), empty: 'tokens.none' });
  }

  function showSecret(tok) {
    shownId = tok.id;
    const example = curlExample(tok.token, tok.tenant || ctx.tenant, tok.scopes);
    const headId = nextId('secret');
    const secret = h('code', { class: 'secret', id: 'token-secret', style: { marginBottom: '.5rem' } }, tok.token);
    // long tokens wrap anywhere: a pre that scrolls sideways would need keyboard access
    const pre = h('pre', { class: 'example', id: 'token-curl', style: { wordBreak: 'break-all' } }, example);
    clear(secretSlot, h('section', { class: 'card', 'aria-labelledby': headId },
      h('h2', { id: headId, tabindex: '-1' }, t('tokens.created_title', { name: tok.name })),
      h('p', { class: 'alert', role: 'alert' }, t('tokens.once')),
      h('p', {}, t('tokens.secret_label')),
      // each copy button right after its text: ui.js selects that text where the clipboard is refused
      h('div', {}, secret, copyButton(tok.token, 'tokens.copy_secret')),
      h('h3', {}, t('tokens.example_title')),
      h('p', { class: 'hint' }, t('tokens.example_hint')),
      h('div', {}, pre, copyButton(example, 'tokens.copy_example')),
      h('div', { class: 'actions', style: { marginTop: '1rem' } },
        h('button', {
          type: 'button', class: 'secondary',
          onclick: () => { clear(secretSlot); shownId = null; form.querySelector('input').focus(); },
        }, t('tokens.hide')))));
    secretSlot.querySelector('h2').focus();
  }

  // --- the create form ---
  const scopeId = nextId('scopes');
  const scopeBoxes = h('fieldset', { class: 'field wide', dataset: { field: 'scopes' } },
    h('legend', {}, t('tokens.scopes')),
    h('div', { class: 'scope-list' }, scopes.map((s) => {
      const id = nextId('scope');
      return h('div', { class: 'scope' },
        h('input', { type: 'checkbox', id, name: 'scopes', value: s }),
        ' ',
        h('label', { for: id, style: { fontWeight: 'normal' } }, h('code', {}, s), ' — ', h('span', { class: 'hint' }, t(scopeKey(s)))));
    })),
    h('span', { id: `${scopeId}-err`, class: 'field-error', role: 'alert' }));
  const tenantField = memberships.length
    ? field('tenant', 'tokens.bind', {
      kind: 'select',
      options: [['', t('tokens.any_tenant')], ...memberships.map((m) => [m, m])],
      hint: t('tokens.bind_hint'),
    })
    : null;
  if (tenantField) {
    const sel = tenantField.querySelector('select');
    sel.value = memberships.includes(ctx.tenant) ? ctx.tenant : '';
  }
  const form = h('form', { class: 'form-grid', novalidate: true },
    field('name', 'tokens.name', { required: true, maxlength: 100, autocomplete: 'off', hint: t('tokens.name_hint') }),
    field('expires_in_days', 'tokens.expires_in_days', {
      type: 'number', min: 1, max: 730, step: 1, value: '90', inputmode: 'numeric', hint: t('tokens.expires_hint'),
    }),
    tenantField,
    field('node', 'tokens.node', { maxlength: 253, autocomplete: 'off', hint: t('tokens.node_hint') }),
    scopeBoxes,
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('tokens.create'))));

  onSubmit(form, async (v) => {
    const chosen = [...form.querySelectorAll('input[name="scopes"]:checked')].map((c) => c.value);
    if (!v.name || !chosen.length) {
      const errors = [];
      if (!v.name) errors.push({ field: 'name', message: t('tokens.need_name') });
      if (!chosen.length) errors.push({ field: 'scopes', message: t('tokens.need_scope') });
      throw Object.assign(new Error(t('app.form_errors')), { errors });
    }
    const body = { name: v.name, scopes: chosen };
    if (v.expires_in_days !== undefined) {
      const n = Number(v.expires_in_days);
      body.expires_in_days = Number.isInteger(n) ? n : v.expires_in_days;
    }
    if (v.tenant) body.tenant = v.tenant;
    if (v.node) body.node = v.node;
    return api.post('tokens', body);
  }, async (tok) => {
    form.reset();
    form.querySelector('[name="expires_in_days"]').value = '90';
    if (tenantField) tenantField.querySelector('select').value = memberships.includes(ctx.tenant) ? ctx.tenant : '';
    listStatus.textContent = '';
    showSecret(tok);
    await loadList();
  });

  // --- the password form ---
  // handleSubmit, not onSubmit: onSubmit trims what it reads, and a password's
  // spaces are part of it. The hidden user name lets password managers file the
  // new password under the right account.
  const passwordStatus = h('p', { class: 'hint', role: 'status' });
  const pwForm = h('form', { class: 'form-grid', novalidate: true },
    h('input', {
      type: 'text', name: 'username', autocomplete: 'username', value: ctx.me.username, hidden: true,
    }),
    field('current_password', 'tokens.current_password', {
      type: 'password', autocomplete: 'current-password', required: true,
    }),
    field('new_password', 'tokens.new_password', {
      type: 'password', autocomplete: 'new-password', required: true, hint: t('tokens.new_password_hint'),
    }),
    field('new_password_repeat', 'tokens.new_password_repeat', {
      type: 'password', autocomplete: 'new-password', required: true,
    }),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('tokens.password_change'))));
  const pwValue = (name) => pwForm.querySelector(`[name="${name}"]`).value;
  handleSubmit(pwForm, async () => {
    passwordStatus.textContent = '';
    const current = pwValue('current_password');
    const next = pwValue('new_password');
    // a typo in the new password would lock the user out: asked twice, compared here
    if (next !== pwValue('new_password_repeat')) {
      throw Object.assign(new Error(t('app.form_errors')), {
        errors: [{ field: 'new_password_repeat', message: t('tokens.password_mismatch') }],
      });
    }
    // the rest is the server's answer: an empty field, the policy, a wrong current
    // password at their fields; a 429 after too many wrong ones under the form
    await api.put('me/password', { current_password: current, new_password: next });
    if (!ctx.isCurrent()) return;
    pwForm.reset();
    pwForm.querySelector('[name="username"]').value = ctx.me.username;
    // the browser already has the new session's cookie: nothing else to do but say so
    passwordStatus.textContent = t('tokens.password_changed');
    passwordHeading.focus();
    await loadSessions(); // only this one is left
  });

  const listSection = section('tokens.list', listStatus, listSlot);
  const listHeading = listSection.querySelector('h2');
  listHeading.setAttribute('tabindex', '-1'); // the focus goes here after a revoke
  const sessionsSection = section('tokens.sessions',
    h('p', { class: 'hint' }, t('tokens.sessions_hint')), sessionsStatus, sessionsSlot);
  const sessionsHeading = sessionsSection.querySelector('h2');
  sessionsHeading.setAttribute('tabindex', '-1'); // and here after a session was ended
  const passwordSection = section('tokens.password',
    h('p', { class: 'hint' }, t('tokens.password_hint')), passwordStatus, pwForm);
  const passwordHeading = passwordSection.querySelector('h2');
  passwordHeading.setAttribute('tabindex', '-1'); // and here after the password was changed
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('tokens.title'))),
    h('p', { class: 'lead' }, t('tokens.lead')),
    h('p', {}, h('a', { href: '#/notifications', id: 'notify-link' }, t('notify.link'))),
    secretSlot,
    section('tokens.new', form),
    listSection,
    sessionsSection,
    passwordSection);
  await Promise.all([loadList(), loadSessions()]);
}

// A User-Agent header in a few words: "Firefox 128 on Windows" for a browser,
// the program's name and version (curl/8.5.0) for anything else; the table
// keeps the full text in a title.
const BROWSERS = [ // the first match wins: Edge and Opera also say Chrome, Chrome says Safari
  [/\bEdg(?:e|A|iOS)?\/(\d+)/, 'Edge'],
  [/\bOPR\/(\d+)/, 'Opera'],
  [/\b(?:Firefox|FxiOS)\/(\d+)/, 'Firefox'],
  [/\bHeadlessChrome\/(\d+)/, 'Headless Chrome'],
  [/\b(?:Chrome|CriOS)\/(\d+)/, 'Chrome'],
  [/\bVersion\/(\d+)[^ ]* (?:Mobile\/\S+ )?Safari\//, 'Safari'],
];
const SYSTEMS = [ // Android says Linux, iOS says Mac OS X
  [/\bWindows\b/, 'Windows'],
  [/\bAndroid\b/, 'Android'],
  [/\b(?:iPhone|iPad|iPod)\b/, 'iOS'],
  [/\bCrOS\b/, 'ChromeOS'],
  [/\b(?:Macintosh|Mac OS X)\b/, 'macOS'],
  [/\bLinux\b/, 'Linux'],
];

export function shortAgent(ua) {
  const b = BROWSERS.map(([re, name]) => [re.exec(ua), name]).find(([m]) => m);
  if (b) {
    const browser = `${b[1]} ${b[0][1]}`;
    const os = SYSTEMS.find(([re]) => re.test(ua));
    return os ? t('tokens.session_agent_on', { browser, os: os[1] }) : browser;
  }
  const text = ua.trim();
  if (text.length <= 40) return text;
  const word = text.split(/\s+/)[0];
  return word.length <= 40 ? `${word} …` : `${word.slice(0, 39)}…`;
}

function expiry(iso) {
  if (!iso) return t('tokens.never');
  const d = new Date(iso);
  if (!isNaN(d) && d.getTime() < Date.now()) return `${fmtTime(iso)} (${t('tokens.expired')})`;
  return fmtTime(iso);
}
