// global-setup.js - start the world (tests/portal/world.c, built as portal_world):
// a fresh database and a real aidcd seeded with the users, tenants, quotas,
// prices, image and past usage every spec stands on. It prints one line
// "AIDC_WORLD {json}" when ready; the JSON goes to a file named by
// AIDC_WORLD_FILE, which Playwright passes on to the workers (fixtures.js reads
// it). The world serves until global-teardown.js closes its stdin.
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const READY_TIMEOUT_MS = 90_000;

module.exports = async function globalSetup() {
  const build = process.env.AIDC_BUILD_DIR || path.resolve(__dirname, '../../build');
  const bin = process.env.AIDC_PORTAL_WORLD || path.join(build, 'tests', 'portal_world');
  if (!fs.existsSync(bin))
    throw new Error(`portal_world not found at ${bin} (build it: cmake --build ${build}; or set AIDC_PORTAL_WORLD)`);

  // stdin stays a pipe we hold open: its EOF is the world's signal to stop
  const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'pipe'] });
  const state = { child, stderr: '', exited: null };
  // global-teardown.js runs in this same process and finds the world here
  globalThis.__aidcWorld = state;
  child.on('exit', (code, signal) => { state.exited = { code, signal }; });
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (d) => {
    state.stderr += d;
    // once the tests run, pass it on (e.g. a sanitizer report at teardown)
    if (state.ready) process.stderr.write(d.replace(/^(?=.)/gm, '[world] '));
  });

  const line = await new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`no AIDC_WORLD line within ${READY_TIMEOUT_MS / 1000} s`)),
      READY_TIMEOUT_MS);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d) => {
      out += d;
      const m = out.match(/^AIDC_WORLD (.*)$/m);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    });
    child.on('error', (e) => { clearTimeout(timer); reject(e); });
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(code === 77 ? 'skipped: no test PostgreSQL (AIDC_TEST_APP_URL)'
                                   : `portal_world exited (${signal || code}) before AIDC_WORLD`));
    });
  }).catch((e) => {
    state.setupFailed = true; // reported here: teardown only waits for it to exit
    if (!state.exited) child.kill('SIGTERM'); // it stops aidcd and drops its database
    process.stderr.write(`portal_world stderr:\n${state.stderr}\n`);
    throw e;
  });
  state.ready = true;
  child.stdout.resume(); // nothing more is expected; never let a full pipe block it

  const world = JSON.parse(line);
  state.log = world.log;
  state.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aidc-portal-world-'));
  const file = path.join(state.dir, 'world.json');
  fs.writeFileSync(file, JSON.stringify(world, null, 2));
  process.env.AIDC_WORLD_FILE = file;
  console.log(`world: ${world.base} (aidcd log ${world.log})`);
};
