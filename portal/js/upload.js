// upload.js - the portal's uploads to the files API: one queue for the whole
// session (an upload goes on while its user looks at other folders or pages,
// and the Files page shows the queue again when it comes back), one file at a
// time. A file larger than one part goes in parts of PART bytes, each a PUT
// with "Content-Range: bytes first-last/total", in order; the server keeps
// the parts it got and makes the file whole when the last one arrives. A part
// that fails on the way (the network, a restarting server) is sent again; an
// answer 409 files.upload_offset says how much the server holds (params.have),
// and the upload goes on from there. Progress is what the server confirmed.
import { api } from './api.js';

export const PART = 8 * 1024 * 1024;
const RETRIES = 5;           // tries of one part in a row before the upload stops
const BUSY_RETRIES = 40; // files.upload_busy: waits of RETRY_MS * 4, past the server's idle timeout
const RETRY_MS = 500;        // first wait before a retry, doubled each time
const TRANSIENT = [0, 502, 503, 504]; // no answer, or a server that may come back

let seq = 0;
const queue = [];            // every upload of this session, oldest first
const listeners = new Set();

// Subscribe to changes of any upload: fn(upload). Returns the unsubscribe function.
export function watch(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

function changed(u) {
  for (const fn of listeners) fn(u);
}

// The uploads of this session (waiting, sending, done, failed, cancelled).
export function uploads() {
  return queue.slice();
}

// Forget the uploads that have ended (done or cancelled).
export function clearEnded() {
  for (let i = queue.length - 1; i >= 0; i--)
    if (queue[i].state === 'done' || queue[i].state === 'cancelled') queue.splice(i, 1);
  changed(null);
}

const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Add file to the queue: it goes to path (the file's API path, fpath()); where
// says which folder it lands in ({key, label}: the page compares key with the
// folder it shows). Returns the upload.
export function enqueue(file, path, where) {
  const u = {
    id: ++seq, file, name: file.name, path, where, total: file.size,
    sent: 0, state: 'waiting', error: null, parts: 0, controller: null,
  };
  queue.push(u);
  changed(u);
  pump();
  return u;
}

// Stop an upload (what the server holds of it stays hidden there until a new
// upload of the same name starts afresh).
export function cancel(u) {
  if (u.state === 'done' || u.state === 'cancelled') return;
  u.state = 'cancelled';
  if (u.controller) u.controller.abort();
  changed(u);
  pump();
}

// Stop every upload and forget them all: the user signed out (the next one to sign
// in on this browser sees none of them).
export function forgetAll() {
  for (const u of queue) {
    if (u.state !== 'done') u.state = 'cancelled';
    if (u.controller) u.controller.abort();
  }
  queue.length = 0;
  changed(null);
}

// Leaving the portal (closing the tab, reloading) stops the uploads going on: the
// browser asks first.
window.addEventListener('beforeunload', (ev) => {
  if (!queue.some((u) => u.state === 'waiting' || u.state === 'sending')) return;
  ev.preventDefault();
  ev.returnValue = ''; // what older browsers look at
});

// Try a failed upload again, from what the server holds.
export function retry(u) {
  if (u.state !== 'failed') return;
  u.state = 'waiting';
  u.error = null;
  changed(u);
  pump();
}

export const percent = (u) => (u.total ? Math.floor((u.sent * 100) / u.total) : (u.state === 'done' ? 100 : 0));

let running = false;
async function pump() {
  if (running) return;
  running = true;
  try {
    for (let u = next(); u; u = next()) await send(u);
  } finally {
    running = false;
  }
}

const next = () => queue.find((u) => u.state === 'waiting');

// One part from u.sent: [first, last] inclusive; the whole file when it fits in one.
function nextPart(u) {
  const first = u.sent;
  const last = Math.min(first + PART, u.total) - 1;
  return { first, last, whole: u.total <= PART };
}

async function send(u) {
  u.state = 'sending';
  changed(u);
  let tries = 0;
  while (u.state === 'sending') {
    const { first, last, whole } = nextPart(u);
    // an empty file or one of one part: a plain PUT, whole or nothing
    const headers = whole ? {} : { 'Content-Range': `bytes ${first}-${last}/${u.total}` };
    const body = whole ? u.file : u.file.slice(first, last + 1);
    u.controller = new AbortController();
    try {
      const answer = await api.putBytes(u.path, body, headers, u.controller.signal);
      u.parts++;
      tries = 0;
      if (whole || last + 1 >= u.total) {
        u.sent = u.total;
        u.state = 'done';
        u.result = answer;
      } else {
        u.sent = answer && Number.isFinite(answer.received) ? answer.received : last + 1;
      }
      changed(u);
    } catch (err) {
      if (u.state !== 'sending') return; // cancelled meanwhile
      if (err.status === 409 && err.code === 'files.upload_offset' && Number.isFinite(Number(err.params.have))) {
        // the server holds another amount (a part that arrived though its answer
        // was lost, or one that broke off): go on from there
        u.sent = Math.min(Number(err.params.have), u.total);
        if (++tries > RETRIES) return fail(u, err);
        changed(u);
        continue;
      }
      // the same part again (the server answers 409 with what it holds when that
      // is not where this part starts); files.upload_busy: a part that broke off
      // still holds the upload until the server notices, a minute at most
      const busy = err.status === 409 && err.code === 'files.upload_busy';
      if (busy && ++tries <= BUSY_RETRIES) {
        await wait(RETRY_MS * 4);
        continue;
      }
      if (TRANSIENT.includes(err.status) && ++tries <= RETRIES) {
        await wait(RETRY_MS * 2 ** (tries - 1));
        continue;
      }
      return fail(u, err);
    } finally {
      u.controller = null;
    }
  }
}

function fail(u, err) {
  u.state = 'failed';
  u.error = err;
  changed(u);
}
