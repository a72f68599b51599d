// provider.mjs - the OpenID provider aidc's single sign-on tests sign in at: oidc-provider
// (a certified implementation), started once per test run by tests/run.sh. NOT for production.
//
//   node provider.mjs     two providers in one process:
//     OP_PORT (15510)      the shared one: users below, every test uses it
//     OP_PORT + 1          the rotation one: POST /_test/rotate puts a new signing key
//                          first (the old one still published), for the key-rotation test only
//   OP_KEYS_DIR          where the signing keys live (mode 0600)
//   OP_AUTO_LOGIN=1      a login_hint naming a user signs it in without the form (tests in C)
//
// Redirect URIs: any http://127.0.0.1:<port>/api/v1/auth/oidc/<name>/callback (every test's
// aidcd listens on a port of its own). Some users make the token endpoint answer an ID token
// a relying party must refuse (re-signed here from the real one): "expired", "wrongaud",
// "hs256" (HMAC keyed with the provider's public key), "none" (unsigned), "badnonce".
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createHash, createHmac, createPrivateKey, createPublicKey, createSign,
  generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { text } from 'node:stream/consumers';
import Provider from 'oidc-provider';

const PORT = Number(process.env.OP_PORT || 15510);
const KEYS_DIR = process.env.OP_KEYS_DIR || new URL('keys', import.meta.url).pathname;
const CLIENT_ID = process.env.OP_CLIENT_ID || 'aidc-portal';
const CLIENT_SECRET = process.env.OP_CLIENT_SECRET || 'aidc-test-secret';
const CALLBACK = /^http:\/\/127\.0\.0\.1:\d{1,5}\/api\/v1\/auth\/oidc\/[a-z][a-z0-9-]{1,31}\/callback$/;

function newKey() { // RSA 2048 private JWK, kid = RFC 7638 thumbprint
  const k = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });
  const kid = createHash('sha256').update(JSON.stringify({ e: k.e, kty: 'RSA', n: k.n })).digest('base64url');
  return { ...k, kid, alg: 'RS256', use: 'sig' };
}
function loadKeys(file, rotate) {
  const jwks = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : { keys: [] };
  if (rotate || jwks.keys.length === 0) {
    jwks.keys = [newKey(), ...jwks.keys].slice(0, 2); // the first signs, the previous is kept
    mkdirSync(KEYS_DIR, { recursive: true, mode: 0o700 });
    writeFileSync(file, JSON.stringify(jwks), { mode: 0o600 });
  }
  return jwks;
}

const USERS = { // sub is opaque and stable, never the user name
  alice: { sub: 'a1f5e0c2-7d1b-4c1e-9a55-000000000001', password: 'alice-pw', email: 'alice@example.org', groups: ['physics-staff'] },
  bob: { sub: 'b2c6f1d3-8e2c-4d2f-8b66-000000000002', password: 'bob-pw', email: 'bob@example.org', groups: [] },
  carol: { sub: 'c3d7a2e4-9f3d-4e3a-9c77-000000000003', password: 'carol-pw', email: 'carol@example.org', groups: ['physics-staff', 'chem-admins'], unverified: true },
  expired: { sub: 'e0000000-0000-4000-8000-00000000000e', password: 'x-pw', groups: [] },
  wrongaud: { sub: 'e0000000-0000-4000-8000-0000000000a1', password: 'x-pw', groups: [] },
  hs256: { sub: 'e0000000-0000-4000-8000-0000000000a2', password: 'x-pw', groups: [] },
  none: { sub: 'e0000000-0000-4000-8000-0000000000a3', password: 'x-pw', groups: [] },
  badnonce: { sub: 'e0000000-0000-4000-8000-0000000000a4', password: 'x-pw', groups: [] },
};
const bySub = (sub) => Object.entries(USERS).find(([, u]) => u.sub === sub);

const b64 = (o) => Buffer.from(JSON.stringify(o)).toString('base64url');
// An ID token a relying party must refuse, made from the real one for the special users.
function spoil(idToken, jwks) {
  const [h, p] = idToken.split('.');
  const header = JSON.parse(Buffer.from(h, 'base64url'));
  const claims = JSON.parse(Buffer.from(p, 'base64url'));
  const hit = bySub(claims.sub);
  const who = hit && hit[0];
  const now = Math.floor(Date.now() / 1000);
  const signRS = (hd, cl) => {
    const input = `${b64(hd)}.${b64(cl)}`;
    const key = createPrivateKey({ key: jwks.keys[0], format: 'jwk' });
    return `${input}.${createSign('RSA-SHA256').update(input).sign(key).toString('base64url')}`;
  };
  if (who === 'expired') return signRS(header, { ...claims, iat: now - 7200, exp: now - 3600 });
  if (who === 'wrongaud') return signRS(header, { ...claims, aud: 'someone-else' });
  if (who === 'badnonce') return signRS(header, { ...claims, nonce: 'not-the-one-sent' });
  if (who === 'none') return `${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`;
  if (who === 'hs256') {
    const pem = createPublicKey({ key: jwks.keys[0], format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    const hd = { alg: 'HS256', typ: 'JWT', kid: header.kid };
    const input = `${b64(hd)}.${b64(claims)}`;
    return `${input}.${createHmac('sha256', pem).update(input).digest('base64url')}`;
  }
  return idToken;
}

function makeProvider(issuer, jwks) {
  const provider = new Provider(issuer, {
    clients: [{
      client_id: CLIENT_ID, client_secret: CLIENT_SECRET,
      redirect_uris: ['http://127.0.0.1:8080/api/v1/auth/oidc/campus/callback'],
      response_types: ['code'], grant_types: ['authorization_code'],
      token_endpoint_auth_method: 'client_secret_basic', id_token_signed_response_alg: 'RS256',
    }],
    pkce: { required: () => true },
    claims: { openid: ['sub'], profile: ['preferred_username', 'name'], email: ['email', 'email_verified'], groups: ['groups'] },
    conformIdTokenClaims: false, // scope claims go into the ID token too
    jwks,
    cookies: { keys: ['aidc-test-cookie-key'] },
    features: { devInteractions: { enabled: false } },
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    async findAccount(ctx, sub) {
      const hit = bySub(sub);
      if (!hit) return undefined;
      const [name, u] = hit;
      return {
        accountId: sub,
        claims: async () => ({ sub, preferred_username: name, name: `${name[0].toUpperCase()}${name.slice(1)} Test`,
          email: u.email, email_verified: u.email ? !u.unverified : undefined, groups: u.groups }),
      };
    },
  });
  // every test's aidcd has a port of its own
  provider.Client.prototype.redirectUriAllowed = function allowed(uri) { return CALLBACK.test(uri); };
  const form = (uid, msg = '') => `<!doctype html><html lang="en"><title>Test university sign-in</title>
<h1>Test university</h1><p>${msg}</p><form method="post" action="/interaction/${uid}/login">
<label>User name <input name="username" autocomplete="username"></label>
<label>Password <input name="password" type="password" autocomplete="current-password"></label>
<button>Sign in</button></form><p><a href="/interaction/${uid}/abort">Cancel</a></p>`;
  provider.use(async (ctx, next) => {
    const m = ctx.path.match(/^\/interaction\/([\w-]+)(\/login|\/abort)?$/);
    if (!m) {
      await next();
      if (ctx.path === '/token' && ctx.body && ctx.body.id_token) ctx.body.id_token = spoil(ctx.body.id_token, jwks);
      return;
    }
    ctx.set('cache-control', 'no-store');
    const { uid, prompt, params, session, grantId } = await provider.interactionDetails(ctx.req, ctx.res);
    let result;
    if (m[2] === '/abort') result = { error: 'access_denied', error_description: 'user cancelled' };
    else if (prompt.name === 'login') {
      let user = process.env.OP_AUTO_LOGIN === '1' ? USERS[params.login_hint] : undefined;
      if (m[2] === '/login' && ctx.method === 'POST') {
        const f = new URLSearchParams(await text(ctx.req));
        user = USERS[f.get('username')];
        if (!user || user.password !== f.get('password')) { ctx.status = 401; ctx.type = 'html'; ctx.body = form(uid, 'invalid credentials'); return; }
      }
      if (!user) { ctx.type = 'html'; ctx.body = form(uid); return; }
      result = { login: { accountId: user.sub } };
    } else { // consent: a first-party client, granted without a screen
      const grant = grantId ? await provider.Grant.find(grantId) : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
      if (prompt.details.missingOIDCScope) grant.addOIDCScope(prompt.details.missingOIDCScope.join(' '));
      if (prompt.details.missingOIDCClaims) grant.addOIDCClaims(prompt.details.missingOIDCClaims);
      result = { consent: { grantId: await grant.save() } };
    }
    ctx.status = 303;
    ctx.redirect(await provider.interactionResult(ctx.req, ctx.res, result, { mergeWithLastSubmission: !result.login }));
  });
  return provider;
}

function serve(port, keyFile, rotatable) {
  const issuer = `http://127.0.0.1:${port}`;
  let handler = makeProvider(issuer, loadKeys(keyFile, false)).callback();
  const server = createServer((req, res) => {
    if (rotatable && req.method === 'POST' && req.url === '/_test/rotate') {
      const jwks = loadKeys(keyFile, true);
      handler = makeProvider(issuer, jwks).callback();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ kid: jwks.keys[0].kid }));
      return;
    }
    handler(req, res);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(issuer));
  });
}

const shared = await serve(PORT, `${KEYS_DIR}/shared.json`, false);
const rotating = await serve(PORT + 1, `${KEYS_DIR}/rotating.json`, true);
console.log(`OP ready: ${shared} (shared), ${rotating} (rotation)`);
