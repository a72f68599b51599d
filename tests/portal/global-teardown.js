// global-teardown.js - stop the world started by global-setup.js (same
// process): close its stdin, wait for it to stop aidcd and drop the
// database, and fail the run when it exits non-zero - the harness's verdict
// that aidcd exited badly or left a sanitizer report in its log.
const fs = require('fs');

const STOP_TIMEOUT_MS = 60_000;

module.exports = async function globalTeardown() {
  const state = globalThis.__aidcWorld;
  if (!state) return; // global setup failed before it started one
  if (state.dir) fs.rmSync(state.dir, { recursive: true, force: true });
  const { child } = state;
  if (!state.exited) {
    await new Promise((resolve) => {
      const timer = setTimeout(() => { child.kill('SIGTERM'); }, STOP_TIMEOUT_MS);
      child.on('exit', () => { clearTimeout(timer); resolve(); });
      child.stdin.end();
    });
  }
  const { code, signal } = state.exited;
  if (code !== 0 && !state.setupFailed)
    throw new Error(`portal_world exited with ${signal || code}: aidcd crashed, exited badly or ` +
      `left a sanitizer report (see the [world] lines above and the aidcd log ${state.log})`);
};
