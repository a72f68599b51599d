#!/usr/bin/env node
// i18n-check.js - the portal's text table is complete: every key has an English
// and a Simplified Chinese text, the Chinese one really is Chinese (or is listed
// below as the same in both), placeholders match, and every key the code names
// (t('x.y'), data-i18n="x.y", keys handed to ui.js helpers) exists once, and the
// token page offers every scope of api/openapi.json with an explanation.
// Usage: node tests/portal/i18n-check.js [portal-dir]
'use strict';
const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

const portal = path.resolve(process.argv[2] || path.join(__dirname, '../../portal'));
// i18n.js reads the saved choice at load; give it what a browser would
globalThis.localStorage = { getItem: () => null, setItem: () => {} };
Object.defineProperty(globalThis, 'navigator', { value: { language: 'en' }, configurable: true });

// texts that are the same in both languages on purpose
const SAME = new Set(['aidc', 'CSV', 'NDJSON', 'JSON', 'ID', 'IP', 'GPU', 'CPU', 'URL', 'API']);
const PREFIX = /^(app|nav|login|state|dash|job|jobs|files|sess|images|usage|tokens|tadmin|padmin|fin|audit)\./;

function walk(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'vendor' ? [] : walk(p);
    return /\.(js|html)$/.test(e.name) ? [p] : [];
  });
}

(async () => {
  const i18n = await import(pathToFileURL(path.join(portal, 'js/i18n.js')).href);
  const table = i18n.table();
  const problems = [];
  const placeholders = (s) => [...s.matchAll(/\{(\w+)\}/g)].map((m) => m[1]).sort().join(',');
  for (const [key, row] of Object.entries(table)) {
    if (!Array.isArray(row) || row.length !== 2) { problems.push(`${key}: not [English, 中文]`); continue; }
    const [en, zh] = row;
    if (typeof en !== 'string' || !en.trim()) problems.push(`${key}: no English text`);
    if (typeof zh !== 'string' || !zh.trim()) problems.push(`${key}: no Chinese text`);
    else if (!/[\u3400-\u9fff]/.test(zh) && !SAME.has(zh) && zh === en)
      problems.push(`${key}: the Chinese text is the English one ("${zh}")`);
    if (typeof en === 'string' && typeof zh === 'string' && placeholders(en) !== placeholders(zh))
      problems.push(`${key}: placeholders differ ({${placeholders(en)}} vs {${placeholders(zh)}})`);
  }
  // a key written twice keeps only its last text, silently (one page's label replaced
  // by another's): every key is defined once across the table's files
  const defined = new Map();
  for (const file of walk(path.join(portal, 'js')).filter((f) => /[/\\]i18n(\.js$|[/\\])/.test(f))) {
    for (const m of fs.readFileSync(file, 'utf8').matchAll(/^\s*'([a-z]+\.[A-Za-z0-9_.]+)':\s*\[/gm)) {
      const where = path.relative(portal, file);
      if (defined.has(m[1])) problems.push(`${m[1]}: defined twice (${defined.get(m[1])} and ${where})`);
      else defined.set(m[1], where);
    }
  }
  const used = new Map();
  for (const file of walk(portal)) {
    if (/[/\\]i18n(\.js$|[/\\])/.test(file)) continue; // the table itself
    const src = fs.readFileSync(file, 'utf8');
    for (const m of src.matchAll(/['"`]([a-z]+\.[a-z0-9_]+(?:\.[a-z0-9_]+)*)['"`]/g)) {
      if (!PREFIX.test(m[1]) || /\.(js|html|css|json|png)$/.test(m[1])) continue;
      if (!used.has(m[1])) used.set(m[1], path.relative(portal, file));
    }
  }
  // a server problem's code compared in a page (err.code === 'files.not_empty') is no
  // text key: its text is the table's err.<code>
  for (const [key, file] of used)
    if (!(key in table) && !(`err.${key}` in table)) problems.push(`${key}: used in ${file} but not in the table`);
  // the token page offers every scope of the API, each with its explanation
  const spec = JSON.parse(fs.readFileSync(path.join(portal, '../api/openapi.json'), 'utf8'));
  const tokensSrc = fs.readFileSync(path.join(portal, 'js/pages/tokens.js'), 'utf8');
  for (const scope of spec.components.schemas.Scope.enum) {
    if (!tokensSrc.includes(`'${scope}'`)) problems.push(`scope ${scope}: not offered by js/pages/tokens.js`);
    if (!(`tokens.scope.${scope.replace(':', '_')}` in table)) problems.push(`scope ${scope}: no tokens.scope.* text`);
  }
  const unused = Object.keys(table).filter((k) => !used.has(k) && !/^state\./.test(k));
  if (unused.length) console.log(`note: ${unused.length} keys not named literally (dynamic?): ${unused.slice(0, 20).join(' ')}`);
  if (problems.length) {
    console.error(problems.join('\n'));
    console.error(`i18n-check: ${problems.length} problem(s)`);
    process.exit(1);
  }
  console.log(`i18n-check: ${Object.keys(table).length} keys, ${used.size} used, all in English and Chinese`);
})().catch((e) => { console.error(e); process.exit(1); });
