// files.js - the tenant's storage spaces (#/files?space=projects/qcd&path=runs/a): pick
// a space (one of the tenant's projects, one's own home, a dataset by its name), walk
// its folders, download a file (a link), upload files (chosen or dropped on the folder;
// upload.js sends them in parts and resumes), make a folder, rename, delete (a folder
// that is not empty only after a second, explicit confirmation). Datasets are
// read-only to members; a tenant admin makes and fills them.
import { api, tpath, fpath } from '../api.js';
import { t, fmtBytes } from '../i18n.js';
import { h, clear, field, alertBox, errorText, showErrors, clearErrors, toast, modal } from '../ui.js';
import { tenantRole } from '../roles.js';
import { fileList, parentOf, join } from '../filelist.js';
import * as up from '../upload.js';

// a project's slug, a user name, a dataset's name (storage/space.c)
const NAME_RE = /^[a-z][a-z0-9._-]{0,62}$/;

// "projects/qcd" -> {kind, name}; anything else -> null
function parseSpace(s) {
  const m = /^(projects|home|datasets)\/([^/]+)$/.exec(s || '');
  return m && NAME_RE.test(m[2]) ? { kind: m[1], name: m[2] } : null;
}

// a path inside a space as the API takes it: names separated by single slashes
const pathOk = (p) => !p || p.split('/').every((n) => n && n !== '.' && n !== '..' && !/[\u0000-\u001f\u007f]/.test(n));

// A name typed for a new folder or a rename: one name, no slash.
function nameProblem(name) {
  if (!name) return t('files.name_required');
  if (name.includes('/') || name === '.' || name === '..' || /[\u0000-\u001f\u007f]/.test(name)) return t('files.name_bad');
  if (new TextEncoder().encode(name).length > 255) return t('files.name_long');
  return null;
}

// the link of a folder of a space
export function filesHref(space, path) {
  const q = new URLSearchParams({ space });
  if (path) q.set('path', path);
  return `#/files?${q}`;
}

function spaceLabel(sp, me) {
  if (sp.kind === 'projects') return t('files.space_project', { name: sp.name });
  if (sp.kind === 'datasets') return t('files.space_dataset', { name: sp.name });
  return sp.name === me.username ? t('files.space_home') : t('files.space_home_of', { user: sp.name });
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  const admin = tenantRole(ctx.me, tenant) === 'tenant_admin';
  const projects = await api.all(tpath(tenant, 'projects'));
  const home = `home/${ctx.me.username}`;
  // a hand-edited link must not make the page fail: what cannot be a space or a path is dropped
  const sp = parseSpace(ctx.query.get('space')) || parseSpace(projects.length ? `projects/${projects[0].slug}` : home);
  const spaceKey = `${sp.kind}/${sp.name}`;
  const path = pathOk(ctx.query.get('path')) ? (ctx.query.get('path') || '') : '';
  const readOnly = sp.kind === 'datasets' && !admin;
  const base = tpath(tenant, 'files', sp.kind, sp.name);
  const label = spaceLabel(sp, ctx.me);
  const where = { key: `${tenant}\n${spaceKey}\n${path}`, label: path ? `${label}/${path}` : label };

  let dialog = null; // the open dialog: closed when the reader leaves the page
  const openDialog = (title, children, opts) => {
    if (dialog) dialog.close();
    dialog = modal(title, children, opts);
    return dialog;
  };
  ctx.onCleanup(() => dialog && dialog.close());

  // --- the space -------------------------------------------------------------
  const options = [
    ...projects.map((p) => [`projects/${p.slug}`, p.name && p.name !== p.slug
      ? `${t('files.space_project', { name: p.slug })} (${p.name})` : t('files.space_project', { name: p.slug })]),
    [home, `${t('files.space_home')} (${ctx.me.username})`],
  ];
  if (!options.some(([v]) => v === spaceKey)) options.push([spaceKey, label]);
  const spaceF = field('space', 'files.space', { kind: 'select', options });
  const spaceSelect = spaceF.querySelector('select');
  spaceSelect.value = spaceKey;
  spaceSelect.addEventListener('change', () => ctx.go(filesHref(spaceSelect.value)));
  const datasetF = field('dataset', 'files.dataset', { autocomplete: 'off', spellcheck: 'false', autocapitalize: 'none',
    placeholder: 'imagenet', hint: t(admin ? 'files.dataset_hint_admin' : 'files.dataset_hint') });
  const datasetForm = h('form', { class: 'filters', novalidate: true },
    datasetF, h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'secondary' }, t('files.dataset_open'))));
  datasetForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    clearErrors(datasetForm);
    const name = datasetForm.elements.dataset.value.trim();
    if (!NAME_RE.test(name)) {
      showErrors(datasetForm, { errors: [{ field: 'dataset', message: t('files.dataset_bad') }], message: t('app.form_errors') });
      return;
    }
    ctx.go(filesHref(`datasets/${name}`));
  });
  if (sp.kind === 'datasets') datasetForm.elements.dataset.value = sp.name;
  const pickForm = h('form', { class: 'filters', novalidate: true }, spaceF);
  pickForm.addEventListener('submit', (ev) => ev.preventDefault());

  // --- the folder --------------------------------------------------------------
  const list = fileList({
    base, rootLabel: label, path,
    href: (p) => filesHref(spaceKey, p),
    actions: readOnly ? null : rowActions,
    isCurrent: ctx.isCurrent,
  });

  function rowActions(row, p) {
    return [
      h('button', { type: 'button', class: 'secondary', 'aria-label': t('files.rename_named', { name: row.name }),
        onclick: () => renameDialog(row, p) }, t('files.rename')),
      h('button', { type: 'button', class: 'secondary', 'aria-label': t('files.delete_named', { name: row.name }),
        onclick: () => deleteDialog(row, p) }, t('files.delete')),
    ];
  }

  function renameDialog(row, p) {
    const nameF = field('to', 'files.new_name', { autocomplete: 'off', spellcheck: 'false', value: row.name });
    const submit = h('button', { type: 'submit' }, t('files.rename'));
    const form = h('form', { class: 'stack', novalidate: true }, nameF,
      h('div', { class: 'actions' }, submit,
        h('button', { type: 'button', class: 'secondary', onclick: () => d.close() }, t('app.cancel'))));
    const d = openDialog(t(row.type === 'dir' ? 'files.rename_folder_q' : 'files.rename_file_q', { name: row.name }), form);
    const input = form.elements.to;
    // the name without its extension is selected: typing replaces just that
    const dot = row.type === 'file' ? row.name.lastIndexOf('.') : -1;
    input.focus();
    input.setSelectionRange(0, dot > 0 ? dot : row.name.length);
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      clearErrors(form);
      const name = input.value.trim();
      const bad = nameProblem(name);
      if (bad) return showErrors(form, { errors: [{ field: 'to', message: bad }], message: t('app.form_errors') });
      if (name === row.name) return d.close();
      submit.disabled = true;
      try {
        await api.post(fpath(base, p), { to: join(parentOf(p), name) }, { op: 'move' });
        d.close();
        toast(t('files.renamed', { from: row.name, to: name }));
        await list.reload();
        list.focusEntry(name);
      } catch (err) {
        showErrors(form, err);
      } finally {
        submit.disabled = false;
      }
    });
  }

  // A file, or an empty folder: one question. A folder with something in it: a second
  // question that says so and needs its own tick before "delete everything" works.
  function deleteDialog(row, p) {
    const dir = row.type === 'dir';
    const msg = h('p', { class: 'form-error', role: 'alert' });
    const yes = h('button', { type: 'button', class: 'danger' }, t('files.delete'));
    const no = h('button', { type: 'button', class: 'secondary', onclick: () => d.close() }, t('app.cancel'));
    const d = openDialog(t(dir ? 'files.delete_folder_q' : 'files.delete_file_q', { name: row.name }), [
      h('p', {}, t(dir ? 'files.delete_folder_text' : 'files.delete_file_text', { name: row.name })),
      h('div', { class: 'actions' }, yes, no), msg]);
    no.focus(); // Enter right after "Delete" must not delete

    const remove = async (recursive) => {
      await api.del(fpath(base, p), recursive ? { recursive: 'true' } : undefined);
      d.close();
      toast(t('files.deleted', { name: row.name }));
      await list.reload();
      list.focusEntry(null);
    };
    const secondQuestion = () => {
      const tick = h('input', { type: 'checkbox', id: 'files-delete-all' });
      const all = h('button', { type: 'button', class: 'danger', disabled: true }, t('files.delete_all'));
      tick.addEventListener('change', () => { all.disabled = !tick.checked; });
      const cancel = h('button', { type: 'button', class: 'secondary', onclick: () => d.close() }, t('app.cancel'));
      all.addEventListener('click', () => run(all, () => remove(true)));
      clear(d.body,
        h('p', { class: 'alert' }, t('files.not_empty_text', { name: row.name })),
        h('div', { class: 'field checks' }, h('label', { for: 'files-delete-all' }, tick, ' ', t('files.delete_all_tick', { name: row.name }))),
        h('div', { class: 'actions' }, all, cancel), msg);
      cancel.focus();
    };
    async function run(button, fn) {
      button.disabled = true;
      msg.textContent = '';
      try {
        await fn();
      } catch (err) {
        if (err.code === 'files.not_empty') return secondQuestion(); // it filled up meanwhile
        msg.textContent = errorText(err);
      } finally {
        button.disabled = false;
      }
    }
    yes.addEventListener('click', () => run(yes, async () => {
      // a folder is looked into first: one with something in it needs the second question
      if (dir) {
        const page = await api.get(fpath(base, p), { limit: 1 });
        if (page.items.length) return secondQuestion();
      }
      await remove(false);
    }));
  }

  // --- new folder, refresh ----------------------------------------------------
  const folderF = field('name', 'files.new_folder', { autocomplete: 'off', spellcheck: 'false', placeholder: t('files.new_folder_ph') });
  const folderForm = h('form', { class: 'filters', novalidate: true },
    folderF, h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'secondary' }, t('files.create_folder'))));
  folderForm.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(folderForm);
    const name = folderForm.elements.name.value.trim();
    const bad = nameProblem(name);
    if (bad) return showErrors(folderForm, { errors: [{ field: 'name', message: bad }], message: t('app.form_errors') });
    const button = folderForm.querySelector('button[type="submit"]');
    button.disabled = true;
    try {
      await api.post(fpath(base, join(path, name)), undefined, { op: 'mkdir' });
      folderForm.elements.name.value = '';
      toast(t('files.folder_made', { name }));
      await list.reload();
    } catch (err) {
      showErrors(folderForm, err);
    } finally {
      button.disabled = false;
    }
  });
  const refresh = h('button', { type: 'button', class: 'secondary', onclick: () => list.reload() }, t('app.refresh'));

  // --- uploads ---------------------------------------------------------------
  const fileInput = h('input', { type: 'file', id: 'files-upload', multiple: true });
  fileInput.addEventListener('change', () => {
    addFiles([...fileInput.files]);
    fileInput.value = '';
  });
  const uploadBox = h('div', { class: 'field upload-box' }, h('label', { for: 'files-upload' }, t('files.upload')), fileInput,
    h('small', { class: 'hint' }, t('files.drop_hint')));
  const uploadsList = h('ul', { class: 'uploads', 'aria-label': t('files.up.title') });
  const clearDone = h('button', { type: 'button', class: 'secondary', onclick: () => up.clearEnded() }, t('files.up.clear'));
  const uploadsPart = h('div', { hidden: true },
    h('div', { class: 'toolbar' }, h('h3', {}, t('files.up.title')), h('div', { class: 'push' }, clearDone)), uploadsList);
  const rowsOf = new Map(); // upload id -> its parts in the list

  async function addFiles(files) {
    if (!files.length) return;
    const existing = new Set(list.rows().map((r) => r.name));
    const clash = files.filter((f) => existing.has(f.name));
    let skip = new Set();
    if (clash.length) {
      const answer = await new Promise((resolve) => {
        const replace = h('button', { type: 'button', class: 'danger', onclick: () => { resolve('replace'); d.close(); } }, t('files.replace'));
        const keep = h('button', { type: 'button', class: 'secondary', onclick: () => { resolve('keep'); d.close(); } },
          t('files.keep_existing'));
        const d = openDialog(t('files.replace_q'), [
          h('p', {}, t('files.replace_text')),
          h('ul', {}, clash.map((f) => h('li', {}, f.name))),
          h('div', { class: 'actions' }, replace, keep)], { onClose: () => resolve(null) });
        keep.focus();
      });
      if (!answer) return;
      if (answer === 'keep') skip = new Set(clash.map((f) => f.name));
    }
    for (const f of files) if (!skip.has(f.name)) up.enqueue(f, fpath(base, join(path, f.name)), where);
  }

  function uploadRow(u) {
    const bar = h('div', { class: 'progress-bar' });
    const progress = h('div', { class: 'progress', role: 'progressbar', 'aria-valuemin': '0', 'aria-valuemax': '100',
      'aria-label': t('files.up.progress', { name: u.name }) }, bar);
    const status = h('p', { class: 'upload-status' });
    const cancel = h('button', { type: 'button', class: 'secondary', 'aria-label': t('files.up.cancel_named', { name: u.name }),
      onclick: () => up.cancel(u) }, t('app.cancel'));
    const retry = h('button', { type: 'button', 'aria-label': t('files.up.retry_named', { name: u.name }),
      onclick: () => up.retry(u) }, t('files.up.retry'));
    const li = h('li', { dataset: { upload: String(u.id) } },
      h('span', { class: 'upload-name' }, u.name), progress, h('div', { class: 'actions' }, retry, cancel), status);
    return { li, bar, progress, status, cancel, retry };
  }

  function statusText(u) {
    const amounts = { sent: fmtBytes(u.sent), total: fmtBytes(u.total), pct: up.percent(u) };
    const to = u.where.key === where.key ? '' : ` ${t('files.up.to', { where: u.where.label })}`;
    switch (u.state) {
      case 'waiting': return t('files.up.waiting') + to;
      case 'sending': return t('files.up.sending', amounts) + to;
      case 'done': return t('files.up.done', { total: fmtBytes(u.total) }) + to;
      case 'cancelled': return t('files.up.cancelled') + to;
      default: return t('files.up.failed', { msg: errorText(u.error) }) + to;
    }
  }

  function drawUpload(u) {
    let r = rowsOf.get(u.id);
    if (!r) {
      r = uploadRow(u);
      rowsOf.set(u.id, r);
      uploadsList.append(r.li);
    }
    const pct = up.percent(u);
    r.progress.setAttribute('aria-valuenow', String(pct));
    r.progress.setAttribute('aria-valuetext', `${pct}% (${fmtBytes(u.sent)} / ${fmtBytes(u.total)})`);
    r.bar.style.width = `${pct}%`;
    r.status.textContent = statusText(u);
    r.status.classList.toggle('alert', u.state === 'failed');
    const focused = document.activeElement;
    r.retry.hidden = u.state !== 'failed';
    r.cancel.hidden = u.state === 'done' || u.state === 'cancelled';
    // a button that went away with the focus on it hands the focus on
    if ((focused === r.retry && r.retry.hidden) || (focused === r.cancel && r.cancel.hidden))
      (r.cancel.hidden ? fileInput : r.cancel).focus();
  }

  function drawUploads() {
    const all = up.uploads();
    const ids = new Set(all.map((u) => u.id));
    for (const [id, r] of rowsOf) if (!ids.has(id)) { r.li.remove(); rowsOf.delete(id); }
    for (const u of all) drawUpload(u);
    uploadsPart.hidden = !all.length;
    clearDone.hidden = !all.some((u) => u.state === 'done' || u.state === 'cancelled');
  }

  let reloadTimer = null;
  const unwatch = up.watch((u) => {
    if (!ctx.isCurrent()) return;
    drawUploads();
    if (!u) return;
    if (u.state === 'done' || u.state === 'failed') toast(t(u.state === 'done' ? 'files.up.toast_done' : 'files.up.toast_failed', { name: u.name }));
    // a file arrived in the folder shown: list it (once for files ending together)
    if (u.state === 'done' && u.where.key === where.key && !reloadTimer)
      reloadTimer = setTimeout(() => { reloadTimer = null; if (ctx.isCurrent()) list.reload(); }, 100);
  });
  ctx.onCleanup(() => { unwatch(); clearTimeout(reloadTimer); });

  // --- the page ----------------------------------------------------------------
  const folderId = 'files-folder-h';
  const folder = h('section', { class: 'card dropzone', 'aria-labelledby': folderId },
    h('h2', { id: folderId }, label),
    readOnly ? h('p', { class: 'note' }, t('files.read_only')) : null,
    h('div', { class: 'toolbar' }, readOnly ? null : [uploadBox, folderForm], h('div', { class: 'push' }, refresh)),
    uploadsPart,
    list.el);

  if (!readOnly) {
    // files dropped on the folder are uploaded into it; dropped anywhere else on the
    // page they are ignored (the browser would otherwise leave the portal to show them)
    const hasFiles = (ev) => ev.dataTransfer && [...ev.dataTransfer.types].includes('Files');
    folder.addEventListener('dragover', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = 'copy';
      folder.classList.add('over');
    });
    folder.addEventListener('dragleave', (ev) => {
      if (!folder.contains(ev.relatedTarget)) folder.classList.remove('over');
    });
    folder.addEventListener('drop', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      folder.classList.remove('over');
      // a dropped folder comes as a "file" too: its entry tells (where the browser has one)
      const items = [...(ev.dataTransfer.items || [])].filter((it) => it.kind === 'file');
      const isFolder = (it) => { const e = it.webkitGetAsEntry && it.webkitGetAsEntry(); return !!(e && e.isDirectory); };
      const files = items.length ? items.filter((it) => !isFolder(it)).map((it) => it.getAsFile()).filter(Boolean)
        : [...ev.dataTransfer.files];
      if (items.some(isFolder)) toast(t('files.no_folders'));
      addFiles(files);
    });
  }
  const ignore = (ev) => { if (ev.dataTransfer && [...ev.dataTransfer.types].includes('Files')) ev.preventDefault(); };
  window.addEventListener('dragover', ignore);
  window.addEventListener('drop', ignore);
  ctx.onCleanup(() => {
    window.removeEventListener('dragover', ignore);
    window.removeEventListener('drop', ignore);
  });

  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('files.title'), ' · ', tenant)),
    h('p', { class: 'lead' }, t(admin ? 'files.lead_admin' : 'files.lead')),
    h('div', { class: 'card toolbar' }, pickForm, datasetForm),
    folder);
  drawUploads();

  try {
    await list.load(path);
  } catch (err) {
    if (sp.kind === 'datasets' && err.code === 'files.space_not_found') return noDataset();
    if (err.code === 'files.not_found' && path) {
      clear(list.el, alertBox(err), h('p', {}, h('a', { href: filesHref(spaceKey) }, t('files.to_root', { space: label }))));
      return;
    }
    clear(list.el, alertBox(err));
  }

  // A dataset that does not exist (yet): a tenant admin may make it here.
  function noDataset() {
    for (const el of folder.querySelectorAll('.toolbar')) el.hidden = true;
    const make = admin ? h('button', { type: 'button' }, t('files.dataset_create', { name: sp.name })) : null;
    const msg = h('p', { class: 'form-error', role: 'alert' });
    clear(list.el, h('p', { class: 'note' }, t(admin ? 'files.no_dataset_admin' : 'files.no_dataset', { name: sp.name })),
      make ? h('div', { class: 'actions' }, make) : null, msg);
    if (make) make.addEventListener('click', async () => {
      make.disabled = true;
      try {
        await api.post(base, undefined, { op: 'mkdir' });
        toast(t('files.dataset_made', { name: sp.name }));
        ctx.go(filesHref(spaceKey));
      } catch (err) {
        msg.textContent = errorText(err);
        make.disabled = false;
      }
    });
  }
}
