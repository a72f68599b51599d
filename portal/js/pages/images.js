// images.js - the image catalog: public images and the current tenant's own,
// searchable (name, tag or label value), filterable by label and visibility,
// with their labels, digest, size and immutability; members and tenant admins
// register the tenant's own images here (metadata: the bytes stay in the registry).
import { api, tpath } from '../api.js';
import { t, fmtTime } from '../i18n.js';
import { h, clear, section, table, field, onSubmit, showErrors, clearErrors, copyButton, toast, alertBox, formValues } from '../ui.js';
import { canSubmit, platformAdmin } from '../roles.js';

const TITLE = 'org.opencontainers.image.title';
const PAGE = 50;

export function humanBytes(n) {
  const x = Number(n);
  if (!Number.isFinite(x)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = x;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 2 : 1).replace(/\.?0+$/, '')} ${units[i]}`;
}

export function shortDigest(d) {
  const m = /^(sha256:)([0-9a-f]{12})/.exec(d || '');
  return m ? `${m[1]}${m[2]}…` : (d || '—');
}

// "KEY=VALUE" lines into an object; throws {line} on a line without '='.
export function parseLabels(text) {
  const out = {};
  const lines = (text || '').split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (!line || line.startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw Object.assign(new Error('label'), { line: i + 1 });
    out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
  }
  return out;
}

function labelsCell(img) {
  const labels = img.labels || {};
  const fw = labels.framework;
  const title = labels[TITLE];
  const rest = Object.keys(labels).filter((k) => k !== 'framework' && k !== TITLE).sort();
  return h('div', { class: 'labels' },
    title ? h('div', {}, h('strong', {}, title)) : null,
    fw ? h('div', {}, h('span', { class: 'badge' }, `${t('images.framework')}: ${fw}`)) : null,
    rest.length
      ? h('details', {},
        h('summary', {}, t('images.more_labels', { n: rest.length })),
        h('dl', { class: 'props' }, rest.map((k) => [h('dt', {}, k), h('dd', {}, labels[k])])))
      : null,
    !fw && !title && !rest.length ? '—' : null);
}

function digestCell(img) {
  return h('div', { class: 'actions' },
    h('code', { title: img.digest, 'aria-hidden': 'true' }, shortDigest(img.digest)),
    h('span', { class: 'sr-only' }, img.digest),
    copyButton(img.digest, 'images.copy_digest'));
}

function visibilityCell(img) {
  return img.visibility === 'public' ? t('images.public') : t('images.tenant_only', { tenant: img.tenant || '' });
}

export async function render(ctx) {
  const maySubmit = canSubmit(ctx.me, ctx.tenant) || (platformAdmin(ctx.me) && !!ctx.tenant);
  const registries = maySubmit && platformAdmin(ctx.me) ? await api.all('registries').catch(() => []) : null;

  // --- the catalog with its filters ---
  const filters = h('form', { class: 'filters', role: 'search', 'aria-label': t('images.search') },
    field('q', 'images.q', { type: 'search', value: ctx.query.get('q') || '', placeholder: 'pytorch' }),
    field('label', 'images.label', { value: ctx.query.get('label') || '', placeholder: 'framework=pytorch' }),
    field('visibility', 'images.visibility', {
      kind: 'select',
      options: [['', t('images.all')], ['public', t('images.public')], ['tenant', t('images.tenant_own')]],
    }),
    h('div', { class: 'actions' },
      h('button', { type: 'submit' }, t('images.search')),
      h('button', { type: 'reset', class: 'secondary' }, t('images.clear'))));
  filters.querySelector('select').value = ['public', 'tenant'].includes(ctx.query.get('visibility'))
    ? ctx.query.get('visibility') : '';
  const listSlot = h('div', {});
  const countLine = h('p', { class: 'hint', role: 'status' });
  let items = [];
  let cursor = null;
  let filterValues = {};

  function columns() {
    return [
      { label: t('images.image'), render: (i) => h('strong', { class: 'image-ref' }, `${i.repository}:${i.tag}`) },
      { label: t('images.labels'), render: labelsCell },
      { label: t('images.visibility'), render: visibilityCell },
      { label: t('images.digest'), render: digestCell },
      { label: t('images.size'), render: (i) => humanBytes(i.size_bytes) },
      { label: t('images.immutable'), render: (i) => t(i.immutable ? 'app.yes' : 'app.no') },
      { label: t('images.registry'), render: (i) => i.registry || '—' },
      { label: t('images.created'), render: (i) => fmtTime(i.created_at) },
    ];
  }

  function drawList() {
    const more = cursor
      ? h('button', { type: 'button', class: 'secondary', onclick: loadMore }, t('app.more'))
      : null;
    countLine.textContent = (items.length === 1 ? t('images.count_one') : t('images.count', { n: items.length })) + (cursor ? ` ${t('images.count_more')}` : '');
    clear(listSlot,
      table(columns(), items, {
        caption: t('images.catalog'), empty: 'images.none',
        rowAttrs: (i) => ({ dataset: { image: `${i.repository}:${i.tag}` } }),
      }),
      more ? h('div', { class: 'actions' }, more) : null);
  }

  async function fetchPage(after) {
    const q = { tenant: ctx.tenant, limit: PAGE, cursor: after };
    for (const k of ['q', 'label', 'visibility']) if (filterValues[k]) q[k] = filterValues[k];
    return api.get('images', q);
  }

  async function search() {
    filterValues = formValues(filters);
    const qs = new URLSearchParams(filterValues).toString();
    history.replaceState(null, '', `#/images${qs ? `?${qs}` : ''}`);
    clearErrors(filters);
    try {
      const page = await fetchPage(null);
      if (!ctx.isCurrent()) return;
      items = page.items;
      cursor = page.next_cursor;
      drawList();
    } catch (err) {
      if (!ctx.isCurrent()) return;
      items = [];
      cursor = null;
      countLine.textContent = '';
      if (err.errors.length) {
        showErrors(filters, err);
        clear(listSlot);
      } else clear(listSlot, alertBox(err));
    }
  }

  async function loadMore(ev) {
    const button = ev.target;
    button.disabled = true;
    try {
      const page = await fetchPage(cursor);
      if (!ctx.isCurrent()) return;
      const first = items.length;
      items = items.concat(page.items);
      cursor = page.next_cursor;
      drawList();
      const row = listSlot.querySelectorAll('tbody tr')[first];
      const target = row ? row.querySelector('strong') : null;
      if (target) {
        target.setAttribute('tabindex', '-1');
        target.focus();
      }
    } catch (err) {
      button.disabled = false;
      toast(err.message);
    }
  }

  filters.addEventListener('submit', (ev) => {
    ev.preventDefault();
    search();
  });
  filters.addEventListener('reset', () => {
    // after the browser reset the controls (and the default values from the URL)
    setTimeout(() => {
      for (const c of filters.querySelectorAll('input,select')) c.value = '';
      search();
    }, 0);
  });

  // --- registering a tenant image ---
  let registerSection = null;
  if (maySubmit) {
    const registryField = registries
      ? field('registry', 'images.registry', {
        kind: 'select',
        options: [['', t('images.no_registry')], ...registries.map((r) => [r.name, `${r.name} (${r.url})`])],
        hint: t('images.registry_hint'),
      })
      : field('registry', 'images.registry', { autocomplete: 'off', hint: t('images.registry_hint') });
    const immutableId = `img-immutable-${Math.random().toString(36).slice(2, 8)}`;
    const form = h('form', { class: 'form-grid', novalidate: true },
      field('repository', 'images.repository', {
        required: true, autocomplete: 'off', placeholder: `${ctx.tenant}/trainer`, hint: t('images.repository_hint'),
      }),
      field('tag', 'images.tag', { required: true, autocomplete: 'off', placeholder: 'v1.0' }),
      h('div', { class: 'wide' },
        field('digest', 'images.digest', {
          required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'sha256:…', hint: t('images.digest_hint'),
        })),
      field('size_bytes', 'images.size_bytes', {
        type: 'number', min: 0, step: 1, required: true, inputmode: 'numeric', hint: t('images.size_hint'),
      }),
      registryField,
      h('div', { class: 'wide' },
        field('labels', 'images.labels_input', {
          kind: 'textarea', rows: 3, spellcheck: 'false', placeholder: 'framework=pytorch', hint: t('images.labels_hint'),
        })),
      h('div', { class: 'field wide', dataset: { field: 'immutable' } },
        h('div', {},
          h('input', { type: 'checkbox', id: immutableId, name: 'immutable', value: 'true', 'aria-describedby': `${immutableId}-hint` }),
          ' ',
          h('label', { for: immutableId }, t('images.immutable'))),
        h('small', { id: `${immutableId}-hint`, class: 'hint' }, t('images.immutable_hint')),
        h('span', { class: 'field-error', role: 'alert' })),
      h('div', { class: 'actions wide' }, h('button', { type: 'submit' }, t('images.register'))));
    const sizeInput = form.querySelector('[name="size_bytes"]');
    const sizeHint = form.querySelector(`#${CSS.escape(sizeInput.id)}-hint`);
    sizeInput.addEventListener('input', () => {
      const n = Number(sizeInput.value);
      sizeHint.textContent = sizeInput.value !== '' && Number.isFinite(n)
        ? `${t('images.size_hint')} = ${humanBytes(n)}` : t('images.size_hint');
    });

    onSubmit(form, async (v) => {
      let labels;
      try {
        labels = parseLabels(form.querySelector('[name="labels"]').value);
      } catch (e) {
        throw Object.assign(new Error(t('app.form_errors')),
          { errors: [{ field: 'labels', message: t('images.labels_bad', { line: e.line }) }] });
      }
      const size = Number(v.size_bytes);
      const body = {
        repository: v.repository,  // undefined ones are left out: the server says "required"
        tag: v.tag,
        digest: v.digest,
        size_bytes: v.size_bytes !== undefined && Number.isInteger(size) ? size : v.size_bytes,
        labels,
        immutable: form.querySelector('[name="immutable"]').checked,
      };
      if (v.registry) body.registry = v.registry;
      return api.post(tpath(ctx.tenant, 'images'), body);
    }, async (img) => {
      toast(t('images.registered', { ref: `${img.repository}:${img.tag}` }));
      form.reset();
      sizeHint.textContent = t('images.size_hint');
      // show the new image: search the catalog for it
      for (const c of filters.querySelectorAll('input,select')) c.value = '';
      filters.querySelector('[name="q"]').value = `${img.repository}:${img.tag}`;
      await search();
      const row = listSlot.querySelector('tbody tr strong');
      if (row) {
        row.setAttribute('tabindex', '-1');
        row.focus();
      }
    });
    registerSection = section('images.register_title',
      h('p', { class: 'hint' }, t('images.register_lead', { tenant: ctx.tenant })), form);
  }

  ctx.main.append(
    h('div', { class: 'page-head' }, h('h1', {}, t('images.title'), ' · ', ctx.tenant)),
    section('images.catalog', filters, countLine, listSlot));
  if (registerSection) ctx.main.append(registerSection);
  filterValues = formValues(filters);
  try {
    const page = await fetchPage(null);
    items = page.items;
    cursor = page.next_cursor;
    drawList();
  } catch (err) {
    if (!err.errors.length) throw err;
    showErrors(filters, err);  // a bad filter in a shared link: say so next to it
  }
}
