// api.js - the only place that talks to the server. Every call goes to the
// public REST API with the session cookie (HttpOnly, set by login) and the
// X-Requested-With header the server demands of cookie-authenticated writes.
// Failures become ApiError carrying the problem+json document, so pages can
// show each message next to the field it names.

import { problemText } from './i18n.js';

export const BASE = '/api/v1';

// The messages of a problem are shown in the reader's language: each carries a
// stable code and the params its text was filled from (docs/errors.md), and
// the portal knows every code of its server; for one it does not know (a newer
// server) the server's English stays.
export class ApiError extends Error {
  constructor(status, problem, retryAfter) {
    const p = problem || {};
    const english = p.detail || p.title || `HTTP ${status}`;
    const text = problemText(p.code, p.params, english);
    // one invalid field: the problem is that field's, its detail "field: message"
    const field = p.params && p.params.field && Array.isArray(p.errors) && text !== english;
    super(field ? `${p.params.field}: ${text}` : text);
    this.status = status;
    this.code = p.code || '';
    this.params = p.params || {};
    this.title = p.title || '';
    this.errors = Array.isArray(p.errors)
      ? p.errors.map((e) => ({ ...e, english: e.message, message: problemText(e.code, e.params, e.message) }))
      : [];
    this.requestId = problem && problem.request_id;
    this.retryAfter = retryAfter;
  }
}

// Listeners for "the session is gone" (401 on anything but login).
const onUnauthorized = new Set();
export function whenUnauthorized(fn) { onUnauthorized.add(fn); }

// The session cookie is HttpOnly, so the portal cannot see whether there is one.
// Login also sets aidc_signed_in=1 (no secret, same lifetime), which logout and
// ending the session clear: without it, asking GET /me would only earn a 401 (a
// console error and an audit event per visit), so the portal goes to login instead.
const HINT = 'aidc_signed_in';
export function signedIn() {
  return document.cookie.split(';').some((c) => c.trim() === `${HINT}=1`);
}
// A session that ended elsewhere (expired, revoked) leaves the hint behind.
export function forgetSignedIn() {
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `${HINT}=; Path=/; Max-Age=0; SameSite=Strict${secure}`;
}

function url(path, query) {
  const u = new URL(path.startsWith('/') ? path : `${BASE}/${path}`, location.origin);
  for (const [k, v] of Object.entries(query || {}))
    if (v !== undefined && v !== null && v !== '') u.searchParams.set(k, String(v));
  return u.pathname + u.search;
}

// raw: bytes (a Blob) sent as they are (uploads); signal: an AbortSignal. A call
// the signal stopped fails with an ApiError whose aborted is true.
async function call(method, path, { query, body, raw, accept = 'application/json', headers = {}, signal } = {}) {
  const init = {
    method,
    credentials: 'same-origin',
    headers: { Accept: accept, 'X-Requested-With': 'aidc-portal', ...headers },
  };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  if (raw !== undefined) {
    init.headers['Content-Type'] = 'application/octet-stream';
    init.body = raw;
  }
  if (signal) init.signal = signal;
  let res;
  try {
    res = await fetch(url(path, query), init);
  } catch (e) {
    const aborted = !!(signal && signal.aborted);
    throw Object.assign(new ApiError(0, { title: aborted ? 'Aborted' : 'Network error',
      detail: String(e.message || e) }), { aborted });
  }
  if (!res.ok) {
    const problem = await res.json().catch(() => null);
    const err = new ApiError(res.status, problem, res.headers.get('Retry-After'));
    if (res.status === 401 && !path.endsWith('/auth/login')) {
      forgetSignedIn();
      for (const fn of onUnauthorized) fn(err);
    }
    throw err;
  }
  return res;
}

async function json(method, path, opts) {
  const res = await call(method, path, opts);
  if (res.status === 204) return null;
  return res.json();
}

export const api = {
  get: (path, query) => json('GET', path, { query }),
  post: (path, body, query, headers) => json('POST', path, { body, query, headers }),
  put: (path, body) => json('PUT', path, { body }),
  patch: (path, body) => json('PATCH', path, { body }),
  del: (path, query) => json('DELETE', path, { query }),
  // bytes to a file (the files API's PUT): the JSON answer; headers may carry
  // Content-Range (one part of an upload)
  putBytes: (path, blob, headers, signal) => json('PUT', path, { raw: blob, headers, signal }),
  // text bodies (CSV exports): the text and the suggested file name
  async text(path, query, accept = 'text/csv') {
    const res = await call('GET', path, { query, accept });
    const cd = res.headers.get('Content-Disposition') || '';
    const m = /filename="?([^";]+)"?/.exec(cd);
    return {
      text: await res.text(), filename: m ? m[1] : null, type: res.headers.get('Content-Type'),
      next: res.headers.get('X-Next-Cursor'), // a list's next page, where the text is one page
    };
  },
  // every page of a list (bounded: lists here are admin-sized)
  async all(path, query = {}, max = 2000) {
    const items = [];
    let cursor = null;
    do {
      const page = await json('GET', path, { query: { ...query, limit: 200, cursor } });
      items.push(...page.items);
      cursor = page.next_cursor;
    } while (cursor && items.length < max);
    return items;
  },
};

// An Idempotency-Key for a create: the same key while the same body is retried
// (a lost answer then returns the first job instead of making a second), a new
// one as soon as the body changes (the same key with another body is a 409).
export function idempotency() {
  let lastBody = null;
  let key = null;
  return (body) => {
    const json = JSON.stringify(body);
    if (json !== lastBody) {
      const bytes = crypto.getRandomValues(new Uint8Array(16)); // randomUUID needs https
      key = Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
      lastBody = json;
    }
    return { 'Idempotency-Key': key };
  };
}

// A path below a files URL (tenants/T/files/projects/P, tenants/T/jobs/ID/files):
// fpath(base, 'runs/a b.txt') -> base + "/runs/a%20b.txt"; '' is the base itself.
// Each name is encoded whole (a "?" or "#" in a file's name stays in the name).
export function fpath(base, rel) {
  const names = rel ? String(rel).split('/') : [];
  if (names.some((p) => p === '' || p === '.' || p === '..'))
    throw new ApiError(400, { title: 'Bad Request', detail: `not a valid path: ${rel}` });
  return [base, ...names.map(encodeURIComponent)].join('/');
}

// The address of a file for a link (a download: the session cookie authenticates GET).
export const fileHref = (path) => `${BASE}/${path}`;

// tenant-scoped path: tpath('physics', 'jobs', id) -> "tenants/physics/jobs/<id>"
// A "." or ".." segment would be resolved by the browser before sending (a link
// naming tenant ".." must not reach another path), so it is refused here.
export function tpath(tenant, ...parts) {
  const segs = ['tenants', tenant, ...parts].map(String);
  if (segs.some((p) => p === '' || p === '.' || p === '..'))
    throw new ApiError(400, { title: 'Bad Request', detail: `not a valid path: ${segs.join('/')}` });
  return segs.map(encodeURIComponent).join('/');
}
