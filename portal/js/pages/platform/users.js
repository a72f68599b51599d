// platform/users.js - the users tab: list, create, and edit (display name,
// email, global roles, disabled, a new password). Granting a global role
// waits for a second platform admin (202 with an approval; on create, the
// user exists at once and only the roles wait).
import { api } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, section, table, field, nextId } from '../../ui.js';
import {
  statusLine, okNote, approvalNote, handleSubmit, afterChange, GLOBAL_ROLES, globalRoleText, when,
} from './common.js';

const enc = encodeURIComponent;

// A fieldset of role checkboxes named "roles" (the API field, for its errors).
function rolesField(checked = []) {
  const errId = nextId('roles-err');
  return h('fieldset', { class: 'field', dataset: { field: 'roles' } },
    h('legend', {}, t('padmin.global_roles')),
    GLOBAL_ROLES.map((r) => {
      const id = nextId(`role-${r}`);
      return h('div', {},
        h('input', { type: 'checkbox', id, name: 'roles', value: r, checked: checked.includes(r),
          'aria-describedby': errId }),
        ' ', h('label', { for: id }, globalRoleText(r)));
    }),
    h('small', { class: 'hint' }, t('padmin.roles_hint')),
    h('span', { id: errId, class: 'field-error', role: 'alert' }));
}

const checkedRoles = (form) => [...form.querySelectorAll('input[name="roles"]:checked')].map((c) => c.value);
const val = (form, n) => form.querySelector(`[name="${n}"]`).value;

export async function render(ctx, body) {
  let users = await api.all('users');
  const status = statusLine();
  const listSlot = h('div', {});
  const editSlot = h('div', {});

  async function reload() {
    users = await api.all('users');
    draw();
  }

  function draw() {
    clear(listSlot, table([
      { label: t('padmin.username'), render: (u) => h('code', {}, u.username) },
      { label: t('padmin.display_name'), render: (u) => u.display_name || '—' },
      { label: t('padmin.email'), render: (u) => u.email || '—' },
      { label: t('padmin.global_roles'), render: (u) => (u.roles.length ? u.roles.map(globalRoleText).join(', ') : '—') },
      { label: t('padmin.account'), render: (u) => h('span', { class: `badge ${u.disabled ? 'state-failed' : 'state-succeeded'}` },
        t(u.disabled ? 'padmin.disabled' : 'padmin.enabled')) },
      { label: t('padmin.created'), render: (u) => when(u.created_at) },
      { label: t('app.actions'), render: (u) => {
        const b = h('button', { type: 'button', class: 'secondary', 'aria-label': t('padmin.edit_user', { user: u.username }) },
          t('padmin.edit'));
        b.addEventListener('click', () => openEdit(u, b));
        return b;
      } },
    ], users, { caption: t('padmin.users_caption'), empty: 'padmin.no_users',
      rowAttrs: (u) => ({ dataset: { user: u.username } }) }));
  }

  // Cancel returns focus to the Edit button that opened the form (or that
  // user's button in a list redrawn since).
  function backTo(opener, username) {
    const b = opener.isConnected ? opener
      : listSlot.querySelector(`tr[data-user="${CSS.escape(username)}"] button`);
    if (b) b.focus();
  }

  function openEdit(u, opener) {
    const disabledId = nextId('disabled');
    const form = h('form', { class: 'form-grid card', novalidate: true, 'aria-labelledby': 'padmin-uedit-h' },
      h('h3', { id: 'padmin-uedit-h', class: 'wide' }, t('padmin.edit_title', { user: u.username })),
      field('display_name', 'padmin.display_name', { maxlength: 200, value: u.display_name || '' }),
      field('email', 'padmin.email', { type: 'email', value: u.email || '' }),
      field('password', 'padmin.new_password', { type: 'password', autocomplete: 'new-password',
        hint: t('padmin.new_password_hint') }),
      rolesField(u.roles),
      h('div', { class: 'field', dataset: { field: 'disabled' } },
        h('div', {},
          h('input', { type: 'checkbox', id: disabledId, name: 'disabled', checked: !!u.disabled }),
          ' ', h('label', { for: disabledId }, t('padmin.disable_account'))),
        h('span', { class: 'field-error', role: 'alert' })),
      h('div', { class: 'actions wide' },
        h('button', { type: 'submit' }, t('padmin.save')),
        h('button', { type: 'button', class: 'secondary', onclick: () => { clear(editSlot); backTo(opener, u.username); } },
          t('app.cancel'))));
    handleSubmit(form, async () => {
      clear(status);
      const b = {};
      if (val(form, 'display_name') !== (u.display_name || '')) b.display_name = val(form, 'display_name');
      if (val(form, 'email').trim() !== (u.email || '')) b.email = val(form, 'email').trim();
      if (val(form, 'password')) b.password = val(form, 'password');
      const roles = checkedRoles(form);
      if (roles.slice().sort().join(',') !== u.roles.slice().sort().join(',')) b.roles = roles;
      const disabled = form.querySelector('[name="disabled"]').checked;
      if (disabled !== !!u.disabled) b.disabled = disabled;
      if (!Object.keys(b).length) {
        clear(status, okNote(t('padmin.nothing_changed')));
        return;
      }
      const out = await api.patch(`users/${enc(u.username)}`, b);
      if (u.username === ctx.me.username && !(out && out.approval)) ctx.reloadSession().catch(() => {});
      clear(editSlot);
      await afterChange(status, out && out.approval ? approvalNote(out.approval)
        : okNote(t('padmin.user_saved', { user: u.username })), reload);
    });
    clear(editSlot, form);
    form.querySelector('[name="display_name"]').focus();
  }

  const create = h('form', { class: 'form-grid', novalidate: true },
    field('username', 'padmin.username', { required: true, autocapitalize: 'none', spellcheck: 'false',
      autocomplete: 'off', hint: t('padmin.username_hint') }),
    field('password', 'padmin.password', { type: 'password', required: true, autocomplete: 'new-password' }),
    field('display_name', 'padmin.display_name', { maxlength: 200 }),
    field('email', 'padmin.email', { type: 'email' }),
    rolesField([]),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('padmin.user_create'))));
  handleSubmit(create, async () => {
    clear(status);
    const b = { username: val(create, 'username').trim(), password: val(create, 'password') };
    if (val(create, 'display_name').trim()) b.display_name = val(create, 'display_name').trim();
    if (val(create, 'email').trim()) b.email = val(create, 'email').trim();
    const roles = checkedRoles(create);
    if (roles.length) b.roles = roles;
    const out = await api.post('users', b);
    create.reset();
    await afterChange(status, out && out.approval
      ? h('div', {},
        okNote(t('padmin.user_created_roles_wait', { user: (out.user && out.user.username) || b.username })),
        approvalNote(out.approval))
      : okNote(t('padmin.user_created', { user: out.username })), reload);
  });

  draw();
  body.append(
    section('padmin.tab_users', h('p', { class: 'lead' }, t('padmin.users_lead')), status, listSlot, editSlot),
    section('padmin.user_create', create));
}
