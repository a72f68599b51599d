// login.js - sign in: with the organisation's account (an OpenID Connect provider's
// button, or an LDAP directory chosen above the password), or with a password aidc
// keeps (the server sets the HttpOnly session cookie). A single sign-on that failed
// comes back here with ?sso_error=<problem code>; after signing out of aidc the page
// offers to end the provider's session too.
import { api } from '../api.js';
import { problemText, t } from '../i18n.js';
import { h, clear } from '../ui.js';
import { home } from '../roles.js';

const SSO_KEY = 'aidc.sso'; // the provider this browser last signed in through

async function providers() {
  try {
    return (await api.get('auth/providers')).items || [];
  } catch {
    return []; // the password form still works
  }
}

function ssoButtons(list, back) {
  const oidc = list.filter((p) => p.kind === 'oidc');
  if (!oidc.length) return null;
  return h('div', { class: 'sso', role: 'group', 'aria-label': t('login.sso_group') },
    ...oidc.map((p) => {
      const a = h('a', { class: 'button sso-button', href: `${p.login_url}?return_to=${encodeURIComponent(back)}` },
        t('login.sso', { name: p.display_name }));
      a.addEventListener('click', () => localStorage.setItem(SSO_KEY, p.name));
      return a;
    }),
    h('p', { class: 'or' }, t('login.or')));
}

// after a sign-out: the provider's session goes on unless ended there too
function providerLogout(list, query) {
  const name = localStorage.getItem(SSO_KEY);
  const p = name && list.find((x) => x.name === name && x.logout_url);
  if (!query.has('signed_out') || !p) return null;
  const a = h('a', { href: p.logout_url, id: 'sso-logout' }, t('login.sso_logout', { name: p.display_name }));
  a.addEventListener('click', () => localStorage.removeItem(SSO_KEY));
  return h('p', { class: 'note' }, t('login.signed_out'), ' ', a);
}

export async function render(ctx) {
  const list = await providers();
  const directories = list.filter((p) => p.kind === 'ldap');
  const error = h('p', { id: 'login-error', class: 'form-error', role: 'alert' });
  const code = ctx.query.get('sso_error');
  if (code)
    error.textContent = problemText(code,
      { error: ctx.query.get('error') || '?', claim: ctx.query.get('claim') || '?' }, code);
  const account = directories.length
    ? h('div', { class: 'field' },
      h('label', { for: 'provider' }, t('login.account')),
      h('select', { id: 'provider', name: 'provider' },
        ...directories.map((p) => h('option', { value: p.name }, p.display_name)),
        h('option', { value: '' }, t('login.local'))))
    : null;
  const form = h('form', { id: 'login-form', class: 'card login', novalidate: true },
    h('h1', { 'data-i18n': 'login.title' }, t('login.title')),
    h('p', { class: 'lead' }, t('login.lead')),
    providerLogout(list, ctx.query),
    ssoButtons(list, ctx.query.get('return_to') || '/'),
    account,
    h('div', { class: 'field' },
      h('label', { for: 'username' }, t('login.username')),
      h('input', { id: 'username', name: 'username', autocomplete: 'username', required: true,
        autocapitalize: 'none', spellcheck: 'false' })),
    h('div', { class: 'field' },
      h('label', { for: 'password' }, t('login.password')),
      h('input', { id: 'password', name: 'password', type: 'password',
        autocomplete: 'current-password', required: true })),
    h('button', { type: 'submit' }, t('login.submit')),
    error);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const button = form.querySelector('button[type=submit]');
    clear(error);
    button.disabled = true;
    const provider = form.provider ? form.provider.value : '';
    try {
      await api.post('auth/login', {
        username: form.username.value.trim(),
        password: form.password.value,
        ...(provider ? { provider } : {}),
      });
      if (provider) localStorage.setItem(SSO_KEY, provider);
      else localStorage.removeItem(SSO_KEY);
      const { me, tenant } = await ctx.reloadSession();
      ctx.go(home(me, tenant));
    } catch (err) {
      if (err.status === 401) error.textContent = t('login.bad');
      else if (err.status === 429) error.textContent = t('login.throttled', { s: err.retryAfter || 60 });
      else error.textContent = t('login.failed', { msg: err.message });
      form.password.select();
    } finally {
      button.disabled = false;
    }
  });
  ctx.main.append(form);
}
