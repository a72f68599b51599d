// @ts-check
// Browser end-to-end tests of the portal: @playwright/test driving Debian's
// /usr/bin/chromium (no browser download; see shared/examples/browser-test).
// Install: PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci. Run: ./run-e2e.sh BUILD_DIR.
// The server is not a webServer here: global-setup.js starts portal_world,
// which seeds a fresh aidcd, and fixtures.js points baseURL at it.
const { defineConfig } = require('@playwright/test');
const path = require('path');

module.exports = defineConfig({
  testDir: 'specs',
  timeout: 60_000,
  expect: { timeout: 10_000 },  // a 2-core machine with aidcd, PostgreSQL and chromium on it
  workers: 1,                   // one browser, one world: specs share its data
  fullyParallel: false,
  retries: 0,
  forbidOnly: !!process.env.CI,
  reporter: [['list']],
  // under the build dir when run from ctest (run-e2e.sh sets it): screenshots per test
  outputDir: process.env.AIDC_PORTAL_OUT || path.join(__dirname, 'test-results'),
  globalSetup: require.resolve('./global-setup.js'),
  globalTeardown: require.resolve('./global-teardown.js'),
  use: {
    browserName: 'chromium',
    headless: true,
    viewport: { width: 1280, height: 800 },
    locale: 'en-US',
    timezoneId: 'UTC',
    trace: 'off',
    screenshot: 'only-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
      chromiumSandbox: false, // --no-sandbox: tests run as root
      args: ['--disable-gpu', '--disable-quic', '--disable-sync', '--no-first-run',
             '--disable-background-networking', '--disable-component-update'],
    },
  },
});
