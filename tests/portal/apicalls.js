// apicalls.js - REST calls specs make beside the browser (a second user's submit,
// cleaning up), through Playwright's `request` fixture with a bearer token.
const { expect } = require('@playwright/test');
const { world } = require('./fixtures');

// A login token of a seeded user (the world's password unless given).
async function token(request, username, password = world.password) {
  const res = await request.post('/api/v1/auth/login', { data: { username, password } });
  expect(res.status(), `login of ${username}`).toBe(200);
  return (await res.json()).access_token;
}

const bearer = (tok) => ({ Authorization: `Bearer ${tok}` });

// Submit a job; returns the job object.
async function submitJob(request, tok, tenant, body) {
  const res = await request.post(`/api/v1/tenants/${tenant}/jobs`, { headers: bearer(tok), data: body });
  expect(res.status(), `submit to ${tenant}: ${await res.text()}`).toBe(201);
  return res.json();
}

// Wait (polling the API, no fixed sleep) until the job reaches one of states.
async function waitForState(request, tok, tenant, id, states, timeout = 60_000) {
  await expect.poll(async () => {
    const res = await request.get(`/api/v1/tenants/${tenant}/jobs/${id}`, { headers: bearer(tok) });
    return (await res.json()).state;
  }, { timeout, message: `job ${id} to reach ${states}` }).toMatch(new RegExp(`^(${states.join('|')})$`));
}

// Cancel a job if it is still going (202), or accept that it ended (409).
async function cancelQuietly(request, tok, tenant, id) {
  if (!id) return;
  const res = await request.post(`/api/v1/tenants/${tenant}/jobs/${id}/cancel`, { headers: bearer(tok) });
  expect([202, 409], `cancel ${tenant}/${id}`).toContain(res.status());
}

module.exports = { token, bearer, submitJob, waitForState, cancelQuietly };
