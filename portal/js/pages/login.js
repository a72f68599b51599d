// login.js - sign in with user name and password (the server sets the
// HttpOnly session cookie); bad credentials and throttling get their own words.
import { api } from '../api.js';
import { t } from '../i18n.js';
import { h, clear } from '../ui.js';
import { home } from '../roles.js';

export async function render(ctx) {
  const error = h('p', { id: 'login-error', class: 'form-error', role: 'alert' });
  const form = h('form', { id: 'login-form', class: 'card login', novalidate: true },
    h('h1', { 'data-i18n': 'login.title' }, t('login.title')),
    h('p', { class: 'lead' }, t('login.lead')),
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
    const button = form.querySelector('button');
    clear(error);
    button.disabled = true;
    try {
      await api.post('auth/login', {
        username: form.username.value.trim(),
        password: form.password.value,
      });
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
