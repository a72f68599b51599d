// audit/verify.js - verify the audit hash chain (all of it, or the events
// between two times): the verdict shown prominently, a break named by the
// first event whose link does not hold.
import { api } from '../../api.js';
import { t } from '../../i18n.js';
import { h, clear, field, section, onSubmit } from '../../ui.js';
import { timeField, readFilters } from './common.js';

function verdict(v) {
  const facts = h('ul', {},
    h('li', {}, t('audit.verified_n', { n: v.verified })),
    v.checkpoints !== undefined ? h('li', {}, t('audit.checkpoints_n', { n: v.checkpoints })) : null,
    v.unsigned_checkpoints ? h('li', {}, t('audit.unsigned_n', { n: v.unsigned_checkpoints })) : null,
    v.first_seq ? h('li', {}, t('audit.seq_range', { first: v.first_seq, last: v.last_seq })) : null,
    v.unsealed ? h('li', {}, t('audit.unsealed_n', { n: v.unsealed })) : null);
  if (v.ok)
    return h('div', { class: 'note', dataset: { ok: 'true', verified: String(v.verified), lastSeq: String(v.last_seq ?? '') } },
      h('p', { class: 'big' }, '✓ ', t(v.verified ? 'audit.chain_ok' : 'audit.chain_empty')),
      facts,
      v.reason ? h('p', {}, v.reason) : null);
  return h('div', { class: 'alert', dataset: { ok: 'false', brokenAt: String(v.broken_at) } },
    h('p', { class: 'big' }, '✗ ', t('audit.chain_broken')),
    h('p', {}, h('strong', {}, t('audit.broken_at', { id: v.broken_at, seq: v.broken_seq ?? '—' }))),
    v.reason ? h('p', {}, t('audit.reason'), ' ', v.reason) : null,
    v.checkpoint_id ? h('p', {}, t('audit.broken_checkpoint', { id: v.checkpoint_id })) : null,
    facts,
    h('p', {}, t('audit.broken_advice')));
}

export function verifyPart() {
  const result = h('div', { role: 'status', class: 'verify-result' },
    h('p', { class: 'hint' }, t('audit.verify_not_run')));
  const form = onSubmit(h('form', { class: 'filters', 'aria-label': t('audit.verify_title') },
    timeField('from', 'audit.from'),
    timeField('to', 'audit.to'),
    h('button', { type: 'submit' }, t('audit.verify'))),
  async () => {
    clear(result, h('p', { class: 'loading' }, t('audit.verifying')));
    try {
      return await api.get('audit/verify', readFilters(form, ['from', 'to']));
    } catch (err) {
      clear(result);
      throw err;
    }
  },
  (v) => clear(result, verdict(v)));
  return section('audit.verify_title',
    h('p', { class: 'hint' }, t('audit.verify_lead')),
    form,
    result);
}
