// sso.spec.js - single sign-on as a researcher meets it, in English and in Chinese: the
// sign-in page offers "Sign in with <provider>", the provider's own page takes the
// password, the portal opens signed in with the roles the provider's groups map to; a
// sign-in the portal must refuse comes back to the sign-in page saying why; signing out
// offers to end the provider's session too. Against the real OpenID provider the test
// run starts (tests/oidc/provider.mjs); skipped without AIDC_TEST_OIDC_ISSUER.
const { test, expect, world, visit, shot, allowHttp, checkA11y } = require('../fixtures');
const { token, bearer } = require('../apicalls');

const ISSUER = process.env.AIDC_TEST_OIDC_ISSUER;
const NAME = 'campus-e2e';

test.describe('single sign-on', () => {
  test.skip(!ISSUER, 'no OpenID provider (AIDC_TEST_OIDC_ISSUER; tests/run.sh starts one)');
  test.describe.configure({ mode: 'serial' });

  test.beforeAll(async ({ request }) => {
    const adm = await token(request, 'admin', world.admin_password);
    const res = await request.post('/api/v1/identity-providers', {
      headers: bearer(adm),
      data: {
        name: NAME, kind: 'oidc', display_name: 'Test University', issuer: ISSUER,
        client_id: 'aidc-portal', client_secret_ref: 'env:AIDC_TEST_SSO_SECRET',
        scopes: ['openid', 'profile', 'email', 'groups'],
        role_rules: [{ claim: 'groups', value: 'physics-staff', tenant: 'physics', role: 'member' }],
      },
    });
    expect(res.status(), await res.text()).toBe(201);
  });

  test.afterAll(async ({ request }) => {
    const adm = await token(request, 'admin', world.admin_password);
    await request.delete(`/api/v1/identity-providers/${NAME}`, { headers: bearer(adm) });
  });

  // the provider's pages are another site: its missing favicon is not the portal's
  const provider = (page) => allowHttp(page, 404, new URL(ISSUER).origin);

  for (const [lang, words] of Object.entries({
    en: { button: 'Sign in with Test University', refused: 'could not be trusted', also: 'Also sign out of Test University' },
    zh: { button: '使用 Test University 登录', refused: '无法信任', also: '同时退出 Test University' },
  })) {
    test(`signs in through the provider (${lang})`, async ({ page }) => {
      provider(page);
      await page.goto('/#/login');
      if (lang === 'zh') await page.locator('#lang').click();
      const button = page.getByRole('link', { name: words.button });
      await expect(button).toBeVisible();
      await shot(page, `sso-login-${lang}`);
      await checkA11y(page);
      await button.click();
      // the provider's own sign-in page
      await expect(page).toHaveURL(new RegExp(`^${ISSUER}/interaction/`));
      await page.getByLabel('User name').fill('carol');
      await page.getByLabel('Password').fill('carol-pw');
      await page.getByRole('button', { name: 'Sign in' }).click();
      // back in the portal, signed in, a member of physics as the rule says
      await expect(page.locator('#logout')).toBeVisible();
      expect(page.url().startsWith(world.base)).toBe(true);
      const me = await (await page.request.get('/api/v1/me')).json();
      expect(me.username).toMatch(/^carol(-\d+)?$/);
      expect(me.memberships.map((m) => [m.tenant, m.role])).toContainEqual(['physics', 'member']);
      await visit(page, '#/', `sso-home-${lang}`);
      // signing out offers the provider's sign-out too
      await page.locator('#logout').click();
      await expect(page.getByRole('link', { name: words.also })).toBeVisible();
      await shot(page, `sso-signed-out-${lang}`);
      await checkA11y(page);
    });

    test(`a sign-in the portal must refuse says why (${lang})`, async ({ page }) => {
      provider(page);
      await page.goto('/#/login');
      if (lang === 'zh') await page.locator('#lang').click();
      await page.getByRole('link', { name: words.button }).click();
      await page.getByLabel('User name').fill('expired'); // its ID token has expired
      await page.getByLabel('Password').fill('x-pw');
      await page.getByRole('button', { name: 'Sign in' }).click();
      await expect(page).toHaveURL(/#\/login\?sso_error=sso\.token/);
      await expect(page.locator('#login-error')).toContainText(words.refused);
      await expect(page.locator('#logout')).toBeHidden();
      await shot(page, `sso-refused-${lang}`);
      await checkA11y(page);
    });
  }
});
