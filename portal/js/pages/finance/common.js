// finance/common.js - small helpers of the finance and audit pages: keyset
// "load more" lists, exact decimal text (money is never a float here), the
// tenants a finance user or auditor may pick, and the current month in UTC.
import { api } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, alertBox } from '../../ui.js';

/**
 * A keyset-paged list. fetchPage(cursor, query) resolves to {items, next_cursor};
 * show(newItems, allItems, fresh) draws them into list.body (fresh: a new
 * search, the old items are gone). reload(query) starts a new search with
 * query (the filters as they were when the user asked: the caller reads its
 * form once), more() goes on with the query of the search that succeeded last,
 * so editing the form without searching never mixes two result sets. A failed
 * new search leaves the old results, their query and cursor as they were.
 * Late answers of a superseded search are dropped.
 *
 * Focus: "Load more" stays focusable while it loads (aria-disabled, not
 * disabled, which would drop the focus); when the last page came in the button
 * hides and the focus moves to the first new row (rowsOf(body) lists the rows
 * in order; default: table body rows or list items), so it is never lost.
 */
export function pagedList(fetchPage, show, { countKey, rowsOf = defaultRows } = {}) {
  const body = h('div', {});
  const count = h('p', { class: 'hint', role: 'status' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('app.more'));
  const error = h('div', {});
  let items = [];
  let cursor = null;
  let applied = {};
  let seq = 0;
  let busy = false;

  async function load(fresh, query) {
    const mine = ++seq;
    busy = true;
    more.setAttribute('aria-disabled', 'true');
    body.setAttribute('aria-busy', 'true');
    clear(error);
    try {
      const page = await fetchPage(fresh ? null : cursor, query);
      if (mine !== seq) return;
      const before = fresh ? 0 : items.length;
      const hadFocus = document.activeElement === more;
      items = fresh ? page.items : items.concat(page.items);
      cursor = page.next_cursor;
      applied = query;
      show(page.items, items, fresh);
      if (countKey) count.textContent = t(countKey, { n: items.length, more: cursor ? '+' : '' });
      if (!cursor && hadFocus) focusRow(rowsOf(body)[before] || count);
      more.hidden = !cursor;
    } catch (err) {
      if (mine !== seq) return;
      if (!fresh) clear(error, alertBox(err)); // a new search's caller shows its own errors
      throw err;
    } finally {
      if (mine === seq) {
        busy = false;
        more.removeAttribute('aria-disabled');
        body.setAttribute('aria-busy', 'false');
      }
    }
  }
  more.addEventListener('click', () => {
    if (!busy && cursor) load(false, applied).catch(() => {});
  });
  return {
    el: h('div', {}, count, body, error, h('p', { class: 'actions' }, more)),
    body,
    reload: (query = {}) => load(true, query),
    // the filters of the search on screen (for a refresh or an export)
    query: () => applied,
    items: () => items,
  };
}

function defaultRows(body) {
  return body.querySelectorAll('tbody > tr, ul > li, ol > li');
}

// A row gets the focus itself (tabindex -1: reachable by script, not by Tab);
// an item that is a <details> gives it to its summary, the control it is.
function focusRow(row) {
  const target = row.querySelector && row.querySelector(':scope > details > summary');
  if (target) target.focus();
  else {
    if (!row.hasAttribute('tabindex')) row.setAttribute('tabindex', '-1');
    row.focus();
  }
}

// "10.000000" -> "10", "2.500000" -> "2.5": the same exact number, shorter (text only).
export function trimDecimal(s) {
  if (typeof s !== 'string' || !/^-?\d+\.\d+$/.test(s)) return s ?? '—';
  return s.replace(/0+$/, '').replace(/\.$/, '');
}

// Mark columns (0-based) of a ui.js table() as numeric (right-aligned).
export function numericColumns(wrap, indices) {
  if (!wrap.querySelector) return wrap;
  for (const row of wrap.querySelectorAll('tr'))
    for (const i of indices) {
      const cell = row.children[i];
      if (cell) cell.classList.add('num');
    }
  return wrap;
}

// Every tenant slug (finance, auditors and platform admins may list them all).
export async function tenantSlugs() {
  const list = await api.all('tenants').catch(() => []);
  return list.map((x) => x.slug).sort();
}

// "YYYY-MM" of this month (offset 0) or another one, in UTC like the server.
export function monthUTC(offset = 0) {
  const now = new Date();
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + offset, 1));
  return `${d.getUTCFullYear()}-${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
}

// Put params into the page's hash (a shareable link) without re-rendering it.
export function replaceHashQuery(page, params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) q.set(k, v);
  const s = q.toString();
  history.replaceState(history.state, '', `#/${page}${s ? `?${s}` : ''}`);
}
