// tenantadmin.js - a tenant's own administration (#/tenant), for its
// tenant_admin and platform admins: projects (create, rename, describe,
// delete), members and their roles, whether members see each other's jobs,
// and each project's quota limits shown against the tenant's own quota (the
// ceiling a project limit may not pass).
import { api, tpath } from '../api.js';
import { t, fmtNum, fmtTime } from '../i18n.js';
import { h, clear, section, table, field, onSubmit, clearErrors, alertBox, nextId } from '../ui.js';
import {
  PROJECT_RESOURCES, orderResources, quotaEditor, tenantQuotaText, statusLine, okNote,
  confirmInline, handleSubmit, afterChange, focusLost, focusOn, TENANT_ROLES, tenantRoleText, when, isGpu,
} from './platform/common.js';

export async function render(ctx) {
  const tenant = ctx.tenant;
  const [projects, members, tquota, clusters, info] = await Promise.all([
    api.all(tpath(tenant, 'projects')),
    api.all(tpath(tenant, 'members')),
    api.get(tpath(tenant, 'quota')),
    api.all('clusters').catch(() => []),
    api.get(tpath(tenant)),
  ]);
  const state = { projects, members, tquota: tquota.resources || {}, clusters, info };
  const quotas = quotaSection(ctx, state);
  const projectsPart = projectSection(ctx, state, () => quotas.projectsChanged());
  await quotas.ready;
  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('tadmin.title', { tenant }))),
    h('p', { class: 'lead' }, t('tadmin.lead')),
    h('nav', { class: 'card toc', 'aria-label': t('tadmin.toc') },
      h('ul', { class: 'actions', style: PLAIN_LIST },
        h('li', {}, h('a', { href: '#tadmin-projects', onclick: jump('tadmin-projects') }, t('tadmin.projects'))),
        h('li', {}, h('a', { href: '#tadmin-members', onclick: jump('tadmin-members') }, t('tadmin.members'))),
        h('li', {}, h('a', { href: '#tadmin-visibility', onclick: jump('tadmin-visibility') }, t('tadmin.visibility'))),
        h('li', {}, h('a', { href: '#tadmin-quotas', onclick: jump('tadmin-quotas') }, t('tadmin.quotas'))))),
    projectsPart,
    memberSection(ctx, state),
    visibilitySection(ctx, state),
    quotas.el);
}

// In-page links: the router owns the hash, so move focus and scroll instead.
function jump(id) {
  return (ev) => {
    ev.preventDefault();
    const target = document.getElementById(id);
    if (!target) return;
    const heading = target.querySelector('h2') || target;
    heading.setAttribute('tabindex', '-1');
    heading.focus();
    target.scrollIntoView({ block: 'start' });
  };
}

const PLAIN_LIST = { listStyle: 'none', margin: '0', padding: '0' };
const ctl = (form, name) => form.querySelector(`[name="${name}"]`);

function withId(el, id) {
  el.id = id;
  return el;
}

// ---- projects ---------------------------------------------------------------------

function projectSection(ctx, state, changed) {
  const tenant = ctx.tenant;
  const status = statusLine();
  const listSlot = h('div', {});
  const editSlot = h('div', {});

  async function reload() {
    state.projects = await api.all(tpath(tenant, 'projects'));
    drawList();
    changed();
  }

  function drawList() {
    clear(listSlot, table([
      { label: t('tadmin.slug'), render: (p) => h('code', {}, p.slug) },
      { label: t('tadmin.name'), key: 'name' },
      { label: t('tadmin.description'), render: (p) => p.description || '—' },
      { label: t('tadmin.created_by'), key: 'created_by' },
      { label: t('tadmin.created'), render: (p) => when(p.created_at) },
      { label: t('app.actions'), render: (p) => projectActions(p) },
    ], state.projects, { caption: t('tadmin.projects_caption', { tenant }), empty: 'tadmin.no_projects',
      rowAttrs: (p) => ({ dataset: { project: p.slug } }) }));
  }

  // Cancel returns focus to the Edit button that opened the form (or that
  // project's button in a list redrawn since).
  function backTo(opener, slug) {
    const b = opener.isConnected ? opener
      : listSlot.querySelector(`tr[data-project="${CSS.escape(slug)}"] button`);
    if (b) b.focus();
  }

  function projectActions(p) {
    const slot = h('div', { class: 'actions' });
    const edit = h('button', { type: 'button', class: 'secondary' }, t('tadmin.edit'));
    edit.setAttribute('aria-label', t('tadmin.edit_named', { project: p.slug }));
    edit.addEventListener('click', () => openEdit(p, edit));
    const del = h('button', { type: 'button', class: 'danger' }, t('tadmin.delete'));
    del.setAttribute('aria-label', t('tadmin.delete_named', { project: p.slug }));
    del.addEventListener('click', () => confirmInline(slot, t('tadmin.delete_confirm', { project: p.slug }), async () => {
      clear(status);
      try {
        await api.del(tpath(tenant, 'projects', p.slug));
      } catch (err) {
        if (err.status !== 409) throw err;
        clear(status, h('div', { class: 'alert', role: 'alert' },
          h('p', {}, h('strong', {}, t('tadmin.delete_busy', { project: p.slug }))),
          h('p', {}, t('tadmin.delete_busy_help')),
          h('p', {}, h('a', { href: `#/jobs?project=${encodeURIComponent(p.slug)}` }, t('tadmin.see_jobs'))),
          h('p', { class: 'hint' }, err.message)));
        drawList();
        if (focusLost(slot)) focusOn(status);
        return;
      }
      if (editSlot.querySelector(`[data-project="${CSS.escape(p.slug)}"]`)) clear(editSlot);
      await afterChange(status, okNote(t('tadmin.deleted', { project: p.slug })), reload, { from: slot });
    }));
    slot.append(edit, del);
    return slot;
  }

  function openEdit(p, opener) {
    const form = h('form', { class: 'form-grid card', novalidate: true, 'aria-labelledby': 'tadmin-edit-h',
      dataset: { project: p.slug } },
      h('h3', { id: 'tadmin-edit-h', class: 'wide' }, t('tadmin.edit_title', { project: p.slug })),
      field('name', 'tadmin.name', { required: true, maxlength: 200, value: p.name }),
      field('description', 'tadmin.description', { kind: 'textarea', maxlength: 4000 }),
      h('div', { class: 'actions wide' },
        h('button', { type: 'submit' }, t('tadmin.save')),
        h('button', { type: 'button', class: 'secondary', onclick: () => { clear(editSlot); backTo(opener, p.slug); } },
          t('app.cancel'))));
    ctl(form, 'description').value = p.description || '';
    handleSubmit(form, async () => {
      const updated = await api.patch(tpath(tenant, 'projects', p.slug),
        { name: ctl(form, 'name').value.trim(), description: ctl(form, 'description').value });
      clear(editSlot);
      await afterChange(status, okNote(t('tadmin.updated', { project: updated.slug })), reload);
    });
    clear(editSlot, form);
    ctl(form, 'name').focus();
  }

  const create = h('form', { class: 'form-grid', novalidate: true, 'aria-labelledby': 'tadmin-create-h' },
    h('h3', { id: 'tadmin-create-h', class: 'wide' }, t('tadmin.create_title')),
    field('slug', 'tadmin.slug', { required: true, pattern: '[a-z][a-z0-9-]{1,62}', autocapitalize: 'none',
      spellcheck: 'false', hint: t('tadmin.slug_hint') }),
    field('name', 'tadmin.name', { required: true, maxlength: 200 }),
    h('div', { class: 'wide' }, field('description', 'tadmin.description', { kind: 'textarea', maxlength: 4000 })),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('tadmin.create'))));
  onSubmit(create, (v) => api.post(tpath(tenant, 'projects'), v), async (p) => {
    create.reset();
    await afterChange(status, okNote(t('tadmin.created_msg', { project: p.slug })), reload);
  });

  drawList();
  return withId(section('tadmin.projects', status, listSlot, editSlot, create), 'tadmin-projects');
}

// ---- members ----------------------------------------------------------------------

function roleSelect(id, value, style) {
  return h('select', { id, name: 'role', style }, TENANT_ROLES.map((r) =>
    h('option', { value: r, selected: r === value }, tenantRoleText(r))));
}

function memberSection(ctx, state) {
  const tenant = ctx.tenant;
  const status = statusLine();
  const listSlot = h('div', {});

  async function reload() {
    state.members = await api.all(tpath(tenant, 'members'));
    drawList();
  }

  function drawList() {
    clear(listSlot, table([
      { label: t('tadmin.username'), render: (m) => h('code', {}, m.username) },
      { label: t('tadmin.display_name'), render: (m) => m.display_name || '—' },
      { label: t('tadmin.role'), render: (m) => h('span', { class: 'member-role' }, tenantRoleText(m.role)) },
      { label: t('tadmin.since'), render: (m) => when(m.created_at) },
      { label: t('app.actions'), render: (m) => memberActions(m) },
    ], state.members, {
      caption: t('tadmin.members_caption', { tenant }), empty: 'tadmin.no_members',
      rowAttrs: (m) => ({ dataset: { user: m.username } }),
    }));
  }

  function memberActions(m) {
    const slot = h('div', { class: 'actions' });
    const id = nextId('role');
    const select = roleSelect(id, m.role, { width: 'auto' });
    const change = h('form', { class: 'actions', novalidate: true },
      h('label', { for: id, class: 'sr-only' }, t('tadmin.role_of', { user: m.username })),
      select,
      h('button', { type: 'submit', class: 'secondary' }, t('tadmin.change_role')));
    change.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clear(status);
      const button = change.querySelector('button');
      button.disabled = true;
      try {
        const out = await api.put(tpath(tenant, 'members', m.username), { role: select.value });
        m.role = out.role;
        const row = change.closest('tr');
        const cell = row && row.querySelector('.member-role');
        if (cell) cell.textContent = tenantRoleText(out.role);
        clear(status, okNote(t('tadmin.role_changed', { user: m.username, role: tenantRoleText(out.role) })));
      } catch (err) {
        clear(status, alertBox(err));
      } finally {
        button.disabled = false;
      }
    });
    const remove = h('button', { type: 'button', class: 'danger' }, t('tadmin.remove'));
    remove.setAttribute('aria-label', t('tadmin.remove_named', { user: m.username }));
    const removeSlot = h('span', { class: 'actions' }, remove);
    remove.addEventListener('click', () => confirmInline(removeSlot,
      t('tadmin.remove_confirm', { user: m.username, tenant }), async () => {
        await api.del(tpath(tenant, 'members', m.username));
        await afterChange(status, okNote(t('tadmin.removed', { user: m.username })), reload, { from: removeSlot });
      }));
    slot.append(change, removeSlot);
    return slot;
  }

  const addId = nextId('add-role');
  const add = h('form', { class: 'form-grid', novalidate: true, 'aria-labelledby': 'tadmin-add-h' },
    h('h3', { id: 'tadmin-add-h', class: 'wide' }, t('tadmin.add_title')),
    field('username', 'tadmin.username', { required: true, autocapitalize: 'none', spellcheck: 'false',
      autocomplete: 'off', hint: t('tadmin.username_hint') }),
    h('div', { class: 'field', dataset: { field: 'role' } },
      h('label', { for: addId }, t('tadmin.role')),
      roleSelect(addId, 'member'),
      h('span', { class: 'field-error', role: 'alert' })),
    h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('tadmin.add'))));
  handleSubmit(add, async () => {
    const username = ctl(add, 'username').value.trim();
    if (!username) throw Object.assign(new Error(t('app.form_errors')),
      { errors: [{ field: 'username', message: t('tadmin.username_required') }] });
    const existed = state.members.some((m) => m.username === username);
    const out = await api.put(tpath(tenant, 'members', username), { role: ctl(add, 'role').value });
    add.reset();
    ctl(add, 'role').value = 'member';
    await afterChange(status, okNote(t(existed ? 'tadmin.role_changed' : 'tadmin.added',
      { user: out.username, role: tenantRoleText(out.role) })), reload);
  });

  drawList();
  return withId(section('tadmin.members', status, listSlot, add), 'tadmin-members');
}

// ---- who reads whose jobs ---------------------------------------------------------

// A member reads its own jobs; the tenant may let members read each other's
// (members_see_all_jobs). Environment values and logs stay with each job's owner.
function visibilitySection(ctx, state) {
  const status = statusLine();
  const id = nextId('share');
  const box = h('input', { type: 'checkbox', id, name: 'members_see_all_jobs' });
  box.checked = state.info.members_see_all_jobs === true;
  const form = h('form', { class: 'actions', novalidate: true },
    h('label', { for: id }, box, ' ', t('tadmin.share_jobs')),
    h('button', { type: 'submit', class: 'secondary' }, t('tadmin.share_save')));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clear(status);
    const button = form.querySelector('button');
    button.disabled = true;
    try {
      const out = await api.patch(tpath(ctx.tenant), { members_see_all_jobs: box.checked });
      state.info = out;
      box.checked = out.members_see_all_jobs === true;
      clear(status, okNote(t(box.checked ? 'tadmin.share_on' : 'tadmin.share_off')));
    } catch (err) {
      box.checked = state.info.members_see_all_jobs === true;
      clear(status, alertBox(err));
    } finally {
      button.disabled = false;
    }
  });
  return withId(section('tadmin.visibility', h('p', { class: 'hint' }, t('tadmin.share_hint')), form, status),
    'tadmin-visibility');
}

// ---- project quotas ---------------------------------------------------------------

function quotaSection(ctx, state) {
  const tenant = ctx.tenant;
  const status = statusLine();
  const editorSlot = h('div', {});
  const selectId = nextId('project');
  const select = h('select', { id: selectId, name: 'project' });
  const pickField = h('div', { class: 'field', dataset: { field: 'project' } },
    h('label', { for: selectId }, t('tadmin.quota_project')),
    select,
    h('span', { class: 'field-error', role: 'alert' }));
  const save = h('button', { type: 'submit', disabled: true }, t('tadmin.quota_save'));
  const form = h('form', { novalidate: true, class: 'stack' }, editorSlot, h('div', { class: 'actions' }, save));
  // the editor shown, with the project it was drawn for ({el, read, slug}); null
  // while a project's quota loads or when it failed to (Save is disabled then)
  let editor = null;
  let loadSeq = 0;

  function fillSelect(want) {
    clear(select, state.projects.map((p) => h('option', { value: p.slug }, `${p.name} (${p.slug})`)));
    const slugs = state.projects.map((p) => p.slug);
    select.value = slugs.includes(want) ? want : (slugs[0] || '');
    form.hidden = !slugs.length;
  }

  // the tenant's GPU types and the clusters' ones (a type the tenant lacks shows limit 0)
  function resources(pq) {
    const names = new Set([...Object.keys(state.tquota), ...Object.keys(pq)]
      .filter((r) => isGpu(r) || PROJECT_RESOURCES.includes(r)));
    for (const c of state.clusters)
      for (const r of Object.keys(c.inventory || {})) if (isGpu(r)) names.add(r);
    for (const r of PROJECT_RESOURCES) names.add(r);
    return orderResources([...names], PROJECT_RESOURCES);
  }

  function drawEditor(slug, pq) {
    editorSlot.dataset.project = slug;
    const rows = resources(pq).map((res) => {
      const used = pq[res] ? fmtNum(pq[res].used || 0) : '0';
      // the project's storage space: the tenant's storage_gib (its images) is no ceiling
      if (res === 'storage_gib') {
        return {
          res,
          label: t('tadmin.res_project_storage'),
          limit: pq[res] ? pq[res].limit : null,
          note: pq[res] && pq[res].measured_at
            ? t('tadmin.space_used', { used, at: fmtTime(pq[res].measured_at) })
            : t('tadmin.space_unmeasured'),
        };
      }
      const tq = state.tquota[res] || (isGpu(res) ? { guaranteed: 0, limit: 0, used: 0 } : null);
      return {
        res,
        limit: pq[res] ? pq[res].limit : null,
        note: `${t('tadmin.ceiling', { line: tenantQuotaText(tq) })} ${t('tadmin.project_used', { used })}`,
      };
    });
    editor = { ...quotaEditor(rows, { withGuarantee: false }), slug };
    clear(editorSlot,
      h('p', { class: 'hint' }, t('tadmin.quota_help')),
      editor.el);
    save.disabled = false;
  }

  // The previous project's editor goes at once (its values must never be saved
  // onto the project picked now); an answer of an earlier load is ignored.
  async function load() {
    const slug = select.value;
    const seq = ++loadSeq;
    editor = null;
    save.disabled = true;
    clearErrors(form);
    clear(status);
    delete editorSlot.dataset.project;
    clear(editorSlot, slug ? h('p', { class: 'hint' }, t('app.loading')) : null);
    if (!slug) return;
    // remember the choice in the address (no re-render): a reload shows the same project
    if (ctx.isCurrent() && location.hash.startsWith('#/tenant'))
      history.replaceState(null, '', `#/tenant?project=${encodeURIComponent(slug)}`);
    let pq;
    try {
      pq = await api.get(tpath(tenant, 'projects', slug, 'quota'));
    } catch (err) {
      if (seq === loadSeq && ctx.isCurrent()) clear(editorSlot, alertBox(err));
      return;
    }
    if (seq !== loadSeq || !ctx.isCurrent()) return;
    drawEditor(slug, pq.resources || {});
  }

  select.addEventListener('change', load);
  // Saves the values of the editor shown onto the project it was drawn for, and
  // only when that is the project picked (the choice cannot change meanwhile).
  handleSubmit(form, async () => {
    clear(status);
    const ed = editor;
    if (!ed || ed.slug !== select.value)
      throw new Error(t('tadmin.quota_not_loaded', { project: select.value }));
    const slug = ed.slug;
    const seq = loadSeq;
    select.disabled = true;
    let out;
    try {
      out = await api.put(tpath(tenant, 'projects', slug, 'quota'), { resources: ed.read() });
    } finally {
      select.disabled = false;
    }
    if (seq === loadSeq && ctx.isCurrent()) drawEditor(slug, out.resources || {});
    clear(status, okNote(t('tadmin.quota_saved', { project: slug })));
  });

  fillSelect(ctx.query.get('project'));
  const el = withId(section('tadmin.quotas',
    h('p', {}, t('tadmin.quota_lead')),
    pickField, status, form), 'tadmin-quotas');
  return {
    el,
    ready: select.value ? load() : Promise.resolve(),
    projectsChanged() {
      const before = select.value;
      fillSelect(before);
      if (select.value !== before) load();
    },
  };
}
