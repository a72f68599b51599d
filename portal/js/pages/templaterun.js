// templaterun.js - submit a job (or start a session) from a template: the
// project, a form made from the template's parameters (typed inputs, their
// defaults, required ones marked) and, folded away, overrides of what the
// template sets. The server renders the template (docs/templates.md); its
// messages name "parameters.<name>", which is each input's name here.
// #/jobs/template?name=NAME
import { api, tpath, idempotency } from '../api.js';
import { t } from '../i18n.js';
import { h, field, showErrors, clearErrors, toast } from '../ui.js';
import { jobHref } from './jobs.js';
import { sessionHref } from './sessions.js';
import { usableTemplates } from '../templatelist.js';

const OVERRIDES = [
  ['name', 'tpl.o.name', { maxlength: 200 }],
  ['image', 'tpl.o.image', { spellcheck: 'false', autocapitalize: 'none' }],
  ['gpus', 'tpl.o.gpus', { type: 'number', min: 0, max: 64, step: 1 }],
  ['gpu_type', 'tpl.o.gpu_type', { spellcheck: 'false', autocapitalize: 'none' }],
  ['cpus', 'tpl.o.cpus', { type: 'number', min: 1, step: 1 }],
  ['memory_gib', 'tpl.o.memory_gib', { type: 'number', min: 1, step: 1 }],
  ['time_limit_minutes', 'tpl.o.time_limit_minutes', { type: 'number', min: 1, step: 1 }],
];
const NUMERIC = new Set(['gpus', 'cpus', 'memory_gib', 'time_limit_minutes']);

// The input of one declared parameter (its field is "parameters.<name>").
function paramField(p) {
  const name = `parameters.${p.name}`;
  const label = `${p.name}${p.required ? ' *' : ''}`;
  const hintBits = [p.description || ''];
  if (p.min !== undefined && p.min !== null) hintBits.push(t('tpl.p.min', { min: p.min }));
  if (p.max !== undefined && p.max !== null) hintBits.push(t('tpl.p.max', { max: p.max }));
  if (p.pattern) hintBits.push(t('tpl.p.pattern', { pattern: p.pattern }));
  const hint = hintBits.filter(Boolean).join(' · ') || ' ';
  const has = p.default !== undefined && p.default !== null;
  let f;
  if (p.type === 'boolean') {
    f = field(name, 'tpl.p.label', { type: 'checkbox', value: 'true', hint });
    if (has && p.default === true) f.querySelector('input').checked = true;
  } else if (p.type === 'choice') {
    const opts = (p.choices || []).map((c) => [c, c]);
    f = field(name, 'tpl.p.label', { kind: 'select', hint,
      options: p.required || has ? opts : [['', t('tpl.p.unset')], ...opts] });
    if (has) f.querySelector('select').value = p.default;
  } else {
    const numeric = p.type === 'integer' || p.type === 'number';
    f = field(name, 'tpl.p.label', { hint, autocomplete: 'off', spellcheck: 'false',
      ...(numeric ? { type: 'number', step: p.type === 'integer' ? 1 : 'any', inputmode: 'decimal' } : {}),
      ...(numeric && p.min !== undefined && p.min !== null ? { min: p.min } : {}),
      ...(numeric && p.max !== undefined && p.max !== null ? { max: p.max } : {}) });
    if (has) f.querySelector('input').value = String(p.default);
  }
  const control = f.querySelector('input,select');
  if (p.required) control.setAttribute('aria-required', 'true');
  control.dataset.type = p.type;
  f.querySelector('label').textContent = label; // the parameter's own name, not a text key
  return f;
}

// A parameter's value as its type wants it; text the server will name when it is not.
function paramValue(control) {
  const type = control.dataset.type;
  if (type === 'boolean') return control.checked;
  const v = control.value.trim();
  if (v === '') return undefined;
  if (type === 'integer' && /^-?\d+$/.test(v)) return Number(v);
  if (type === 'number' && v !== '' && Number.isFinite(Number(v))) return Number(v);
  return type === 'string' ? control.value : v;
}

export async function render(ctx) {
  const tenant = ctx.tenant;
  const name = ctx.query.get('name') || '';
  const [templates, projects] = await Promise.all([usableTemplates(tenant), api.all(tpath(tenant, 'projects'))]);
  const tpl = templates.find((x) => x.name === name);
  ctx.main.append(h('div', { class: 'page-head' }, h('h1', {}, t('tpl.run.title'), ' · ', name || '?')));
  if (!tpl) {
    ctx.main.append(h('p', { class: 'alert', role: 'alert' }, t('tpl.run.unknown', { name })),
      h('a', { href: '#/jobs/new', class: 'button secondary' }, t('tpl.run.back')));
    return;
  }
  const interactive = tpl.kind === 'interactive';
  const params = tpl.parameters || [];
  const projectF = field('project', 'job.project', { kind: 'select',
    options: projects.map((p) => [p.slug, p.name && p.name !== p.slug ? `${p.slug} (${p.name})` : p.slug]) });
  const overrides = OVERRIDES.filter(([k]) => !(interactive && k === 'nodes'))
    .map(([k, key, attrs]) => field(k, key, { ...attrs, autocomplete: 'off', placeholder: t('tpl.o.from_template') }));
  const submit = h('button', { type: 'submit' }, t(interactive ? 'tpl.run.start' : 'tpl.run.submit'));
  const form = h('form', { id: 'template-form', novalidate: true },
    h('section', { class: 'card', 'aria-labelledby': 'tpl-what' },
      h('h2', { id: 'tpl-what' }, tpl.name),
      h('p', {}, tpl.description || '',
        ' ', h('span', { class: 'badge' }, t(tpl.scope === 'tenant' ? 'tpl.scope.tenant' : 'tpl.scope.platform'))),
      h('div', { class: 'form-grid' }, projectF)),
    h('section', { class: 'card', 'aria-labelledby': 'tpl-params' },
      h('h2', { id: 'tpl-params' }, t('tpl.run.parameters')),
      params.length ? h('p', { class: 'note' }, t('tpl.run.required_note')) : h('p', {}, t('tpl.run.no_parameters')),
      h('div', { class: 'form-grid' }, params.map(paramField))),
    h('details', { class: 'card' },
      h('summary', {}, t('tpl.run.overrides')),
      h('p', { class: 'note' }, t('tpl.run.overrides_note')),
      h('div', { class: 'form-grid' }, overrides)),
    h('div', { class: 'actions' }, submit,
      h('a', { href: '#/jobs/new', class: 'button secondary' }, t('app.cancel'))),
    h('p', { class: 'form-error', role: 'alert' }));

  const idemKey = idempotency();
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    clearErrors(form);
    const body = { template: tpl.name, project: form.elements.project.value, parameters: {} };
    for (const c of form.querySelectorAll('[name^="parameters."]')) {
      const v = paramValue(c);
      if (v !== undefined) body.parameters[c.name.slice('parameters.'.length)] = v;
    }
    for (const [k] of OVERRIDES) {
      const c = form.elements[k];
      const v = c ? c.value.trim() : '';
      if (v !== '') body[k] = NUMERIC.has(k) && /^-?\d+$/.test(v) ? Number(v) : v;
    }
    submit.disabled = true;
    try {
      if (interactive) {
        const s = await api.post(tpath(tenant, 'sessions'), body, undefined, idemKey(body));
        toast(t('tpl.run.started'));
        if (ctx.isCurrent()) ctx.go(sessionHref(s.id));
      } else {
        const job = await api.post(tpath(tenant, 'jobs'), body, undefined, idemKey(body));
        toast(t('jobs.submit.done', { name: job.name }));
        if (ctx.isCurrent()) ctx.go(jobHref(job.tenant || tenant, job.id));
      }
    } catch (err) {
      if (ctx.isCurrent()) showErrors(form, err);
    } finally {
      submit.disabled = false;
    }
  });
  ctx.main.append(h('p', { class: 'lead' }, t(interactive ? 'tpl.run.lead_session' : 'tpl.run.lead')), form);
}
