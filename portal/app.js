// app.js - the portal's first page: sign in, list your tenants, sign out.
// Talks only to the public REST API; the session lives in the HttpOnly
// aidc_session cookie, and every mutating call sends X-Requested-With.

const text = {
  en: { 'login.failed': 'Sign-in failed', 'login.throttled': 'Too many attempts; wait and retry' },
  zh: { 'login.failed': '登录失败', 'login.throttled': '尝试次数过多，请稍后再试' },
};
const lang = navigator.language && navigator.language.startsWith('zh') ? 'zh' : 'en';
const t = (key) => (text[lang] && text[lang][key]) || text.en[key] || key;

async function api(method, path, body) {
  const res = await fetch(path, {
    method,
    headers: { 'Content-Type': 'application/json', 'X-Requested-With': 'aidc-portal' },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
  });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error((data && data.detail) || res.statusText);
    err.status = res.status;
    throw err;
  }
  return data;
}

function show(view) {
  document.getElementById('login-view').hidden = view !== 'login';
  document.getElementById('home-view').hidden = view !== 'home';
}

async function home() {
  const me = await api('GET', '/api/v1/me');
  document.getElementById('who').textContent = me.display_name || me.username;
  const list = document.getElementById('tenants');
  list.replaceChildren();
  const tenants = await api('GET', '/api/v1/tenants');
  for (const tenant of tenants.items) {
    const li = document.createElement('li');
    li.textContent = `${tenant.name} (${tenant.slug})`;
    list.append(li);
  }
  show('home');
}

document.getElementById('login-form').addEventListener('submit', async (ev) => {
  ev.preventDefault();
  const form = new FormData(ev.target);
  const error = document.getElementById('login-error');
  error.textContent = '';
  try {
    await api('POST', '/api/v1/auth/login', {
      username: form.get('username'),
      password: form.get('password'),
    });
    await home();
  } catch (e) {
    error.textContent = e.status === 429 ? t('login.throttled') : `${t('login.failed')}: ${e.message}`;
  }
});

document.getElementById('logout').addEventListener('click', async () => {
  await api('POST', '/api/v1/auth/logout').catch(() => {});
  document.getElementById('who').textContent = '';
  show('login');
});

home().catch(() => show('login'));
