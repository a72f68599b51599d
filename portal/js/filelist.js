// filelist.js - one folder of the files API as a table: breadcrumbs, then each
// entry's name (a folder opens, a file downloads through a plain link: the session
// cookie authenticates GET), type, size and time of change in the reader's
// language, and "Load more" with the API's cursor. The Files page gives it row
// actions and links (#/files?...); the job page uses it read-only, opening folders
// in place.
import { api, fpath, fileHref } from './api.js';
import { t, fmtTime, fmtBytes } from './i18n.js';
import { h, clear, table, alertBox } from './ui.js';

export const PAGE = 100;

// The parent folder of path ('' for a name at the root) and its last name.
export const parentOf = (path) => (path.includes('/') ? path.slice(0, path.lastIndexOf('/')) : '');
export const join = (dir, name) => (dir ? `${dir}/${name}` : name);

/*
 * opts:
 *   base       the API path of the root (tenants/T/files/projects/P, tenants/T/jobs/ID/files)
 *   rootLabel  what the first breadcrumb says
 *   path       the folder shown first ('' = the root)
 *   href(path) the link of a folder (a hash), or absent: folders open in place
 *   actions(row, path) nodes of a row's last column (absent: no such column)
 *   isCurrent  () => false once the page is gone (late answers are dropped)
 *   emptyRoot  the text key for an empty root (default files.empty_root)
 * Returns { el, load(path), reload(), open(path), focusEntry(name), path(), rows() }:
 * load() rejects with the ApiError of the first page (the caller decides how to say
 * it); later failures (open, load more, reload) show inside.
 */
export function fileList(opts) {
  const isCurrent = opts.isCurrent || (() => true);
  const crumbs = h('nav', { class: 'crumbs', 'aria-label': t('files.crumbs') });
  const slot = h('div', {});
  const status = h('div', {});
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('app.more'));
  const el = h('div', { class: 'filelist' }, crumbs, status, slot, h('div', { class: 'actions' }, more));
  let path = opts.path || '';
  let rows = [];
  let cursor = null;
  let seq = 0;

  const folderLink = (p, label, attrs = {}) => (opts.href
    ? h('a', { href: opts.href(p), ...attrs }, label)
    : h('button', { type: 'button', class: 'link', onclick: () => open(p), ...attrs }, label));

  function drawCrumbs() {
    const names = path ? path.split('/') : [];
    const items = [h('li', {}, names.length
      ? folderLink('', opts.rootLabel) : h('span', { 'aria-current': 'location' }, opts.rootLabel))];
    names.forEach((name, i) => {
      const p = names.slice(0, i + 1).join('/');
      items.push(h('li', {}, i === names.length - 1 ? h('span', { 'aria-current': 'location' }, name) : folderLink(p, name)));
    });
    clear(crumbs, h('ol', {}, items));
  }

  function nameCell(r) {
    const p = join(path, r.name);
    if (r.type === 'dir') return folderLink(p, `${r.name}/`, { 'aria-label': t('files.open_folder', { name: r.name }) });
    return h('a', { href: fileHref(fpath(opts.base, p)), download: r.name,
      'aria-label': t('files.download_file', { name: r.name }) }, r.name);
  }

  function draw() {
    drawCrumbs();
    more.hidden = !cursor;
    const columns = [
      { label: t('files.name'), render: nameCell },
      { label: t('files.type'), render: (r) => t(r.type === 'dir' ? 'files.type_dir' : 'files.type_file') },
      { label: t('files.size'), render: (r) => (r.type === 'dir' ? '—' : fmtBytes(r.size)) },
      { label: t('files.mtime'), render: (r) => h('time', { datetime: r.mtime }, fmtTime(r.mtime)) },
    ];
    if (opts.actions) columns.push({ label: t('app.actions'), render: (r) => h('div', { class: 'actions' }, opts.actions(r, join(path, r.name))) });
    const caption = path ? `${opts.rootLabel}/${path}` : opts.rootLabel;
    const tbl = table(columns, rows, { caption, empty: path ? 'files.empty_folder' : (opts.emptyRoot || 'files.empty_root') });
    for (const td of tbl.querySelectorAll('tbody td:first-child')) td.classList.add('name');
    clear(slot, tbl);
  }

  // The first page of folder p (limit: as many rows as were shown, on a reload).
  async function load(p = path, { keep = false } = {}) {
    const mine = ++seq;
    const limit = keep ? Math.min(1000, Math.max(PAGE, rows.length)) : PAGE;
    const page = await api.get(fpath(opts.base, p), { limit });
    if (mine !== seq || !isCurrent()) return;
    path = p;
    rows = page.items;
    cursor = page.next_cursor;
    clear(status);
    draw();
  }

  // In place (no links): open a folder, then put the focus on where the reader is.
  async function open(p) {
    try {
      await load(p);
      const here = crumbs.querySelector('[aria-current]');
      if (here) {
        here.setAttribute('tabindex', '-1');
        here.focus();
      }
    } catch (err) {
      if (isCurrent()) clear(status, alertBox(err));
    }
  }

  // The focus on the link of entry name (after a change), or on the folder's own
  // breadcrumb when there is no such entry (it was deleted).
  function focusEntry(name) {
    const links = [...slot.querySelectorAll('tbody td:first-child')].map((td) => td.querySelector('a, button'));
    const link = name === null ? null : links.find((a) => a && (a.textContent === name || a.textContent === `${name}/`));
    const to = link || crumbs.querySelector('[aria-current]');
    if (!to) return;
    if (!link) to.setAttribute('tabindex', '-1');
    to.focus();
  }

  async function reload() {
    try {
      await load(path, { keep: true });
    } catch (err) {
      if (isCurrent()) clear(status, alertBox(err));
    }
  }

  // The next page below the rows shown; the focus moves to the first added row's
  // link when the button goes away.
  more.addEventListener('click', async () => {
    if (!cursor || more.getAttribute('aria-disabled')) return;
    const mine = seq;
    more.setAttribute('aria-disabled', 'true');
    try {
      const page = await api.get(fpath(opts.base, path), { limit: PAGE, cursor });
      if (mine !== seq || !isCurrent()) return;
      const first = rows.length;
      rows = rows.concat(page.items);
      cursor = page.next_cursor;
      const hadFocus = document.activeElement === more;
      draw();
      if (hadFocus && more.hidden) {
        const links = slot.querySelectorAll('tbody td:first-child a, tbody td:first-child button');
        if (links[first]) links[first].focus();
      }
    } catch (err) {
      if (isCurrent()) clear(status, alertBox(err));
    } finally {
      more.removeAttribute('aria-disabled');
    }
  });

  return { el, load, reload, open, focusEntry, path: () => path, rows: () => rows.slice() };
}
