// finance/common.js - small helpers of the finance and audit pages: keyset
// "load more" lists, exact decimal text (money is never a float here), the
// tenants a finance user or auditor may pick, and the current month in UTC.
import { api } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, alertBox } from '../../ui.js';

/**
 * A keyset-paged list. fetchPage(cursor) resolves to {items, next_cursor};
 * show(newItems, allItems, fresh) draws them into list.body (fresh: a new
 * search, the old items are gone). reload() starts over, more() appends.
 * Late answers of a superseded search are dropped.
 */
export function pagedList(fetchPage, show, { countKey } = {}) {
  const body = h('div', {});
  const count = h('p', { class: 'hint', role: 'status' });
  const more = h('button', { type: 'button', class: 'secondary', hidden: true }, t('app.more'));
  const error = h('div', {});
  let items = [];
  let cursor = null;
  let seq = 0;

  async function load(fresh) {
    const mine = ++seq;
    more.disabled = true;
    body.setAttribute('aria-busy', 'true');
    clear(error);
    try {
      const page = await fetchPage(fresh ? null : cursor);
      if (mine !== seq) return;
      items = fresh ? page.items : items.concat(page.items);
      cursor = page.next_cursor;
      show(page.items, items, fresh);
      more.hidden = !cursor;
      if (countKey) count.textContent = t(countKey, { n: items.length, more: cursor ? '+' : '' });
    } catch (err) {
      if (mine !== seq) return;
      if (!fresh) clear(error, alertBox(err)); // a new search's caller shows its own errors
      throw err;
    } finally {
      if (mine === seq) {
        more.disabled = false;
        body.setAttribute('aria-busy', 'false');
      }
    }
  }
  more.addEventListener('click', () => load(false).catch(() => {}));
  return {
    el: h('div', {}, count, body, error, h('p', { class: 'actions' }, more)),
    body,
    reload: () => load(true),
    items: () => items,
  };
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
