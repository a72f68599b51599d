// templates.js - a tenant admin's job templates (docs/templates.md): the list,
// and an editor that is the template as JSON (its fields are the API's; the
// server checks it and names what is wrong). The platform's templates are listed
// below, read-only: a tenant template of the same name shadows one of them.
import { api, tpath } from '../api.js';
import { t, fmtTime } from '../i18n.js';
import { h, clear, field, table, showErrors, clearErrors, toast } from '../ui.js';
import { templateHref } from '../templatelist.js';

const META = ['name', 'scope', 'created_by', 'created_at', 'updated_at'];

const SKELETON = {
  description: '',
  kind: 'batch',
  image: null,
  script: '#!/bin/sh\npython3 /project/train.py --epochs {{epochs}}\n',
  resources: { gpus: 0, cpus: 2, memory_gib: 8, time_limit_minutes: 60 },
  mounts: [{ space: 'project' }],
  env: {},
  parameters: [{ name: 'epochs', type: 'integer', default: 10, min: 1, max: 1000, description: 'epochs' }],
};

// The editable part of a template: everything but its name and what the server keeps.
function editable(tpl) {
  const out = {};
  for (const [k, v] of Object.entries(tpl)) if (!META.includes(k)) out[k] = v;
  return out;
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  const listSlot = h('div', {});
  const editorSlot = h('div', {});
  const platformSlot = h('div', {});

  async function drawList() {
    const [own, platform] = await Promise.all([api.all(tpath(tenant, 'templates')), api.all('templates')]);
    clear(listSlot, table([
      { label: t('tpl.col.name'), render: (r) => h('a', { href: templateHref(r.name) }, r.name) },
      { label: t('tpl.col.kind'), render: (r) => t(r.kind === 'interactive' ? 'tpl.kind.interactive' : 'tpl.kind.batch') },
      { label: t('tpl.col.description'), key: 'description' },
      { label: t('tpl.col.parameters'), render: (r) => String((r.parameters || []).length) },
      { label: t('tpl.col.updated'), render: (r) => fmtTime(r.updated_at) },
      { label: t('app.actions'), render: (r) => h('span', { class: 'row-actions' },
        h('button', { type: 'button', class: 'secondary', dataset: { edit: r.name }, onclick: () => edit(r) }, t('tpl.edit')),
        ' ',
        h('button', { type: 'button', class: 'danger', dataset: { del: r.name }, onclick: () => remove(r) }, t('tpl.delete'))) },
    ], own, { caption: t('tpl.admin.own'), empty: 'tpl.admin.none' }));
    const shadowed = new Set(own.map((x) => x.name));
    clear(platformSlot, table([
      { label: t('tpl.col.name'), key: 'name' },
      { label: t('tpl.col.kind'), render: (r) => t(r.kind === 'interactive' ? 'tpl.kind.interactive' : 'tpl.kind.batch') },
      { label: t('tpl.col.description'), key: 'description' },
      { label: t('tpl.col.shadowed'), render: (r) => t(shadowed.has(r.name) ? 'app.yes' : 'app.no') },
    ], platform, { caption: t('tpl.admin.platform') }));
  }

  async function remove(tpl) {
    if (!window.confirm(t('tpl.delete_confirm', { name: tpl.name }))) return;
    try {
      await api.del(tpath(tenant, 'templates', tpl.name));
      toast(t('tpl.deleted', { name: tpl.name }));
      clear(editorSlot);
      await drawList();
    } catch (err) {
      toast(err.message || String(err));
    }
  }

  function edit(tpl) {
    const isNew = !tpl;
    const nameF = field('name', 'tpl.col.name', { autocomplete: 'off', spellcheck: 'false', maxlength: 63,
      hint: t('tpl.name_hint'), ...(isNew ? {} : { readonly: true }) });
    const bodyF = field('spec', 'tpl.editor.json', { kind: 'textarea', rows: 18, spellcheck: 'false',
      autocapitalize: 'none', hint: t('tpl.editor.hint') });
    bodyF.querySelector('textarea').classList.add('mono');
    const form = h('form', { id: 'template-editor', class: 'card', novalidate: true },
      h('h2', {}, isNew ? t('tpl.editor.new') : t('tpl.editor.edit', { name: tpl.name })),
      nameF, bodyF,
      h('div', { class: 'actions' }, h('button', { type: 'submit' }, t('tpl.editor.save')),
        h('button', { type: 'button', class: 'secondary', onclick: () => clear(editorSlot) }, t('app.cancel'))),
      h('p', { class: 'form-error', role: 'alert' }));
    form.elements.name.value = isNew ? '' : tpl.name;
    form.elements.spec.value = JSON.stringify(isNew ? SKELETON : editable(tpl), null, 2);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clearErrors(form);
      let body;
      try {
        body = JSON.parse(form.elements.spec.value);
      } catch (e) {
        showErrors(form, { errors: [{ field: 'spec', message: t('tpl.editor.bad_json', { msg: e.message }) }] });
        return;
      }
      if (!body || typeof body !== 'object' || Array.isArray(body)) {
        showErrors(form, { errors: [{ field: 'spec', message: t('tpl.editor.not_object') }] });
        return;
      }
      body.name = form.elements.name.value.trim();
      try {
        if (isNew) await api.post(tpath(tenant, 'templates'), body);
        else await api.put(tpath(tenant, 'templates', tpl.name), body);
        toast(t('tpl.saved', { name: body.name }));
        clear(editorSlot);
        await drawList();
      } catch (err) {
        // the server names template fields; what is not "name" belongs to the JSON box
        const errors = (err.errors || []).map((e) => (e.field === 'name' ? e
          : { field: 'spec', message: `${e.field}: ${e.message}` }));
        const joined = errors.filter((e) => e.field === 'spec').map((e) => e.message).join('\n');
        showErrors(form, { ...err, message: err.message, status: err.status,
          errors: [...errors.filter((e) => e.field === 'name'), ...(joined ? [{ field: 'spec', message: joined }] : [])] });
      }
    });
    clear(editorSlot, form);
    form.elements.name.focus();
  }

  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('tpl.admin.title'), ' · ', tenant),
      h('button', { type: 'button', id: 'template-new', onclick: () => edit(null) }, t('tpl.editor.new'))),
    h('p', { class: 'lead' }, t('tpl.admin.lead')),
    h('section', { class: 'card', 'aria-labelledby': 'tpl-own' }, h('h2', { id: 'tpl-own' }, t('tpl.admin.own')), listSlot),
    editorSlot,
    h('section', { class: 'card', 'aria-labelledby': 'tpl-plat' }, h('h2', { id: 'tpl-plat' }, t('tpl.admin.platform')), platformSlot));
  await drawList();
}
