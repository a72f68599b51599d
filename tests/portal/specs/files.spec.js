// files.spec.js - the Files page (#/files) and a job's output files (issue 23): a member
// opens a project's space, makes a folder, uploads a file through the file input and one
// dropped on the folder (in parts of 8 MiB: the progress bar is seen between 0 and 100),
// downloads it back byte for byte, renames, deletes (a folder with files in it only after
// the second, explicit question); an upload whose parts fail on the way (one lost before
// the server, one whose answer is lost after it) resumes and ends whole; a tenant admin
// makes a dataset that members read only; the Chinese page speaks Chinese; a job's page
// lists stdout, stderr and its work folder to download; the submit form sends the mounts
// chosen. Screenshots in English and Chinese; axe on every view.
const fs = require('fs');
const { test, expect, login, visit, allowHttp, shot, checkA11y } = require('../fixtures');
const { token, bearer, submitJob, waitForState } = require('../apicalls');

const MiB = 1024 * 1024;
const PART = 8 * MiB; // upload.js's PART

// n bytes of a pattern that no two seeds share (the page builds the same with its own copy)
function pattern(n, seed) {
  const b = Buffer.alloc(n);
  for (let i = 0; i < n; i++) b[i] = (i * 7 + seed + (i >> 10)) & 255;
  return b;
}

// Drop a file of the pattern on the folder, as a browser would hand it over.
async function dropFile(page, name, n, seed) {
  await page.evaluate(({ name: fname, n: size, seed: s }) => {
    const data = new Uint8Array(size);
    for (let i = 0; i < size; i++) data[i] = (i * 7 + s + (i >> 10)) & 255;
    const dt = new DataTransfer();
    dt.items.add(new File([data], fname, { type: 'application/octet-stream' }));
    const zone = document.querySelector('section.dropzone');
    for (const type of ['dragenter', 'dragover', 'drop'])
      zone.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: dt }));
  }, { name, n, seed });
}

// Every value each progress bar takes, in order, by its accessible name.
async function recordProgress(page) {
  await page.evaluate(() => {
    window.seenProgress = {};
    new MutationObserver((changes) => {
      for (const c of changes) {
        const name = c.target.getAttribute('aria-label');
        (window.seenProgress[name] ||= []).push(Number(c.target.getAttribute('aria-valuenow')));
      }
    }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ['aria-valuenow'] });
  });
}
const progressOf = (page, label) => page.evaluate((l) => (window.seenProgress || {})[l] || [], label);

// The first byte of each part PUT to a path ending in name, in the order sent.
function watchParts(page, name) {
  const starts = [];
  page.on('request', (req) => {
    if (req.method() !== 'PUT' || !decodeURIComponent(new URL(req.url()).pathname).endsWith(`/${name}`)) return;
    const range = req.headers()['content-range'];
    starts.push(range ? Number(/^bytes (\d+)-/.exec(range)[1]) : 'whole');
  });
  return starts;
}

// A file's bytes as the API serves them (with the page's own session cookie).
async function serverBytes(page, path) {
  const res = await page.request.get(`/api/v1/tenants/physics/files/${path}`);
  expect(res.status(), `GET ${path}`).toBe(200);
  return res.body();
}

const row = (page, name) => page.locator('tbody tr').filter({ has: page.locator('td:first-child', { hasText: new RegExp(`^${name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/?$`) }) });

test('a member uses a project\'s files: folder, uploads, download, rename, delete', async ({ page }) => {
  test.setTimeout(120_000);
  const folder = `run-${Date.now().toString(36)}`;
  await login(page, 'alice');
  await expect(page.locator('#nav').getByRole('link', { name: 'Files' })).toBeAttached();
  await visit(page, '#/files?space=projects/qcd', null);
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Files · physics');
  await expect(page.getByLabel('Space', { exact: true })).toHaveValue('projects/qcd');
  await expect(page.getByRole('heading', { level: 2, name: 'Project qcd' })).toBeVisible();

  // a new folder, then into it (its link)
  await page.getByLabel('New folder').fill(folder);
  await page.getByRole('button', { name: 'Create folder' }).click();
  await expect(row(page, folder)).toContainText('folder');
  await page.getByRole('link', { name: `Open folder ${folder}` }).click();
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await expect(page.locator('nav.crumbs [aria-current="location"]')).toHaveText(folder);
  await expect(page.getByText('This folder is empty.')).toBeVisible();

  // through the file input: 20 MiB, three parts; the bar is seen on its way
  await recordProgress(page);
  const big = pattern(20 * MiB, 1);
  const bigParts = watchParts(page, 'weights.bin');
  await page.getByLabel('Upload files').setInputFiles({ name: 'weights.bin', mimeType: 'application/octet-stream', buffer: big });
  const bar = page.getByRole('progressbar', { name: 'Upload of weights.bin' });
  await expect(bar).toHaveAttribute('aria-valuenow', '100', { timeout: 60_000 });
  expect(bigParts).toEqual([0, PART, 2 * PART]);
  const seen = await progressOf(page, 'Upload of weights.bin');
  expect(seen.some((v) => v > 0 && v < 100), `values seen: ${seen}`).toBe(true);
  expect(seen[seen.length - 1]).toBe(100);
  await expect(row(page, 'weights.bin')).toContainText('20 MiB');

  // dropped on the folder: 12 MiB, two parts
  const dropParts = watchParts(page, 'dropped.bin');
  await dropFile(page, 'dropped.bin', 12 * MiB, 2);
  await expect(page.getByRole('progressbar', { name: 'Upload of dropped.bin' })).toHaveAttribute('aria-valuenow', '100', { timeout: 60_000 });
  expect(dropParts).toEqual([0, PART]);
  const dropSeen = await progressOf(page, 'Upload of dropped.bin');
  expect(dropSeen.some((v) => v > 0 && v < 100), `values seen: ${dropSeen}`).toBe(true);
  await expect(row(page, 'dropped.bin')).toContainText('12 MiB');
  expect((await serverBytes(page, `projects/qcd/${folder}/dropped.bin`)).equals(pattern(12 * MiB, 2))).toBe(true);
  await shot(page, 'files-en');
  await checkA11y(page);

  // downloaded back through its link: the same bytes
  const [download] = await Promise.all([page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download weights.bin' }).click()]);
  expect(download.suggestedFilename()).toBe('weights.bin');
  expect(fs.readFileSync(await download.path()).equals(big)).toBe(true);

  // renamed (a name with a space and Chinese in it travels encoded)
  await page.getByRole('button', { name: 'Rename weights.bin' }).click();
  const dialog = page.getByRole('dialog', { name: 'Rename file weights.bin' });
  await expect(dialog).toBeVisible();
  await checkA11y(page);
  await dialog.getByLabel('New name').fill('model 权重.bin');
  await dialog.getByRole('button', { name: 'Rename' }).click();
  await expect(dialog).toBeHidden();
  await expect(row(page, 'model 权重.bin')).toContainText('20 MiB');
  await expect(page.getByRole('link', { name: 'Download model 权重.bin' })).toBeFocused();
  await expect(row(page, 'weights.bin')).toHaveCount(0);
  expect((await serverBytes(page, `projects/qcd/${folder}/${encodeURIComponent('model 权重.bin')}`)).length).toBe(20 * MiB);

  // a file: one question, and "Cancel" keeps it
  await page.getByRole('button', { name: 'Delete dropped.bin' }).click();
  let ask = page.getByRole('dialog', { name: 'Delete file dropped.bin?' });
  await expect(ask.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await ask.getByRole('button', { name: 'Cancel' }).click();
  await expect(row(page, 'dropped.bin')).toHaveCount(1);
  await page.getByRole('button', { name: 'Delete dropped.bin' }).click();
  await ask.getByRole('button', { name: 'Delete' }).click();
  await expect(row(page, 'dropped.bin')).toHaveCount(0);
  await expect(page.locator('nav.crumbs [aria-current="location"]')).toBeFocused();

  // the folder with a file in it: a second question, that needs its tick
  await page.locator('nav.crumbs').getByRole('link', { name: 'Project qcd' }).click();
  await expect(page.locator('#main[aria-busy="false"]')).toBeAttached();
  await page.getByRole('button', { name: `Delete ${folder}` }).click();
  ask = page.getByRole('dialog', { name: `Delete folder ${folder}?` });
  await ask.getByRole('button', { name: 'Delete' }).click();
  await expect(ask).toContainText(`Folder ${folder} is not empty.`);
  const all = ask.getByRole('button', { name: 'Delete everything' });
  await expect(all).toBeDisabled();
  await shot(page, 'files-delete-en');
  await checkA11y(page);
  await ask.getByLabel(`Yes, delete ${folder} and everything in it`).check();
  await all.click();
  await expect(ask).toBeHidden();
  await expect(row(page, folder)).toHaveCount(0);
  const gone = await page.request.get(`/api/v1/tenants/physics/files/projects/qcd/${folder}`);
  expect(gone.status()).toBe(404);
});

test('an upload whose parts fail on the way resumes and ends whole', async ({ page }) => {
  test.setTimeout(120_000);
  const name = `resume-${Date.now().toString(36)}.bin`;
  const size = 26 * MiB; // parts at 0, 8, 16 and 24 MiB
  const data = pattern(size, 3);
  await login(page, 'alice');
  await visit(page, '#/files?space=home/alice', null);
  await expect(page.getByRole('heading', { level: 2, name: 'My home' })).toBeVisible();

  // the part at 8 MiB is lost before the server (sent again); the answer to the part at
  // 16 MiB is lost after the server kept it (sent again, the server says it holds 24 MiB:
  // the upload goes on from there)
  const failed = new Set();
  await page.route((u) => u.pathname.endsWith(`/home/alice/${name}`), async (route) => {
    const range = route.request().headers()['content-range'] || '';
    const first = Number((/^bytes (\d+)-/.exec(range) || [])[1]);
    if (first === PART && !failed.has(first)) {
      failed.add(first);
      return route.abort('failed');
    }
    if (first === 2 * PART && !failed.has(first)) {
      failed.add(first);
      const res = await route.fetch();
      expect(res.status()).toBe(202);
      return route.abort('failed');
    }
    return route.continue();
  });
  allowHttp(page, 'failed', `/home/alice/${name}`);
  allowHttp(page, 409, `/home/alice/${name}`);
  const answers = [];
  page.on('response', (r) => { if (r.url().endsWith(`/home/alice/${name}`)) answers.push(r.status()); });
  const parts = watchParts(page, name);

  await page.getByLabel('Upload files').setInputFiles({ name, mimeType: 'application/octet-stream', buffer: data });
  await expect(page.getByRole('progressbar', { name: `Upload of ${name}` })).toHaveAttribute('aria-valuenow', '100', { timeout: 60_000 });
  expect(parts).toEqual([0, PART, PART, 2 * PART, 2 * PART, 3 * PART]);
  expect(answers).toEqual([202, 202, 409, 201]);
  await expect(row(page, name)).toContainText('26 MiB');
  const back = await serverBytes(page, `home/alice/${name}`);
  expect(back.length).toBe(size);
  expect(back.equals(data)).toBe(true);
});

test('an upload stopped by a refusal goes on with "Try again"; one cancelled leaves nothing', async ({ page }) => {
  test.setTimeout(150_000);
  const name = `retry-${Date.now().toString(36)}.bin`;
  const data = pattern(10 * MiB, 5);
  await login(page, 'alice');
  await visit(page, '#/files?space=home/alice', null);

  // the part at 8 MiB is refused once (a stand-in answer): the upload stops and says why
  // in the reader's words; "Try again" goes on from 8 MiB
  let refused = false;
  await page.route((u) => u.pathname.endsWith(`/home/alice/${name}`), async (route) => {
    if (!refused && (route.request().headers()['content-range'] || '').startsWith(`bytes ${PART}-`)) {
      refused = true;
      return route.fulfill({ status: 507, contentType: 'application/problem+json', json: {
        type: 'about:blank', title: 'Insufficient Storage', status: 507, code: 'files.disk_full',
        detail: 'the storage is full; nothing was kept', params: {} } });
    }
    return route.continue();
  });
  allowHttp(page, 507, `/home/alice/${name}`);
  const parts = watchParts(page, name);
  await page.getByLabel('Upload files').setInputFiles({ name, mimeType: 'application/octet-stream', buffer: data });
  const item = page.locator('ul.uploads li').filter({ hasText: name });
  // an 8 MiB part through the route handler took over 10 s on a busy CI machine
  await expect(item).toContainText('Stopped (the storage is full; nothing was kept). "Try again" goes on from where it stopped.', { timeout: 60_000 });
  await expect(page.getByRole('progressbar', { name: `Upload of ${name}` })).toHaveAttribute('aria-valuenow', '80');
  await checkA11y(page);
  await item.getByRole('button', { name: `Try the upload of ${name} again` }).click();
  await expect(page.getByRole('progressbar', { name: `Upload of ${name}` })).toHaveAttribute('aria-valuenow', '100', { timeout: 60_000 });
  expect(parts).toEqual([0, PART, PART]);
  expect((await serverBytes(page, `home/alice/${name}`)).equals(data)).toBe(true);

  // cancelled while its second part is on the way: nothing is listed, nothing is kept
  const gone = `cancel-${Date.now().toString(36)}.bin`;
  let release;
  const held = new Promise((resolve) => { release = resolve; });
  await page.route((u) => u.pathname.endsWith(`/home/alice/${gone}`), async (route) => {
    if ((route.request().headers()['content-range'] || '').startsWith(`bytes ${PART}-`)) {
      // the page gave up on it meanwhile: it never reaches the server (continuing a
      // request the page aborted may still deliver it, which is not what a cancel
      // before sending is)
      await held;
      return route.abort('aborted').catch(() => {});
    }
    return route.continue().catch(() => {});
  });
  allowHttp(page, 'failed', `/home/alice/${gone}`);
  await page.getByLabel('Upload files').setInputFiles({ name: gone, mimeType: 'application/octet-stream', buffer: data });
  const goneItem = page.locator('ul.uploads li').filter({ hasText: gone });
  await expect(page.getByRole('progressbar', { name: `Upload of ${gone}` })).toHaveAttribute('aria-valuenow', '80', { timeout: 60_000 });
  await goneItem.getByRole('button', { name: `Cancel the upload of ${gone}` }).click();
  await expect(goneItem).toContainText('Cancelled.');
  release();
  await page.getByRole('button', { name: 'Refresh' }).click();
  await expect(row(page, name)).toHaveCount(1);
  await expect(row(page, gone)).toHaveCount(0);
  await page.getByRole('button', { name: 'Clear finished uploads' }).click();
  await expect(page.locator('ul.uploads li')).toHaveCount(0);
});

test('a long folder comes in pages: "Load more"', async ({ page, request }) => {
  test.setTimeout(90_000);
  const tok = await token(request, 'alice');
  const dir = `many-${Date.now().toString(36)}`;
  const at = `/api/v1/tenants/physics/files/projects/lattice/${dir}`;
  expect((await request.post(`${at}?op=mkdir`, { headers: bearer(tok) })).status()).toBe(201);
  for (let i = 0; i < 105; i += 15)
    await Promise.all(Array.from({ length: Math.min(15, 105 - i) }, (_, k) => request.put(
      `${at}/f${String(i + k).padStart(3, '0')}.txt`, { headers: { ...bearer(tok), 'Content-Type': 'application/octet-stream' },
        data: Buffer.from(`file ${i + k}\n`) }).then((r) => expect(r.status()).toBe(201))));
  await login(page, 'alice');
  await visit(page, `#/files?space=projects/lattice&path=${dir}`, null);
  await expect(page.locator('tbody tr')).toHaveCount(100);
  const more = page.getByRole('button', { name: 'Load more' });
  await more.click();
  await expect(page.locator('tbody tr')).toHaveCount(105);
  await expect(more).toBeHidden();
  await expect(page.getByRole('link', { name: 'Download f100.txt' })).toBeFocused();
  await expect(page.locator('tbody tr').last()).toContainText('f104.txt');

  // a phone: the rows fold into cards, nothing wider than the screen
  await page.setViewportSize({ width: 390, height: 844 });
  await visit(page, `#/files?space=projects/lattice`, 'files-phone');
  expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
});

test.describe('中文', () => {
  test.use({ locale: 'zh-CN' });

  test('文件页面说中文', async ({ page }) => {
    await login(page, 'alice');
    await expect(page.locator('#nav').getByRole('link', { name: '文件' })).toBeAttached();
    await visit(page, '#/files?space=projects/lattice', null);
    await expect(page.getByRole('heading', { level: 1 })).toHaveText('文件 · physics');
    await expect(page.getByRole('heading', { level: 2, name: '项目 lattice' })).toBeVisible();
    const folder = `结果-${Date.now().toString(36)}`;
    await page.getByLabel('新建文件夹').fill(folder);
    await page.getByRole('button', { name: '创建文件夹' }).click();
    await expect(row(page, folder)).toContainText('文件夹');
    await page.getByLabel('上传文件').setInputFiles({ name: 'notes.txt', mimeType: 'text/plain', buffer: pattern(1536, 4) });
    await expect(page.getByRole('progressbar', { name: 'notes.txt 的上传进度' })).toHaveAttribute('aria-valuenow', '100');
    await expect(page.locator('ul.uploads')).toContainText('已上传（1.5 KiB）');
    await expect(row(page, 'notes.txt')).toContainText('1.5 KiB');
    // an empty file, with a Chinese name: one plain PUT
    await page.getByLabel('上传文件').setInputFiles({ name: '空文件.txt', mimeType: 'text/plain', buffer: Buffer.alloc(0) });
    await expect(page.getByRole('progressbar', { name: '空文件.txt 的上传进度' })).toHaveAttribute('aria-valuenow', '100');
    await expect(row(page, '空文件.txt')).toContainText('0 字节');
    for (const th of ['名称', '类型', '大小', '修改时间', '操作']) await expect(page.locator('thead')).toContainText(th);
    await expect(page.getByText('也可以把文件拖放到此文件夹')).toBeVisible();
    await shot(page, 'files-zh');
    await checkA11y(page);
    await page.getByRole('button', { name: `删除 ${folder}` }).click();
    const ask = page.getByRole('dialog', { name: `删除文件夹 ${folder}？` });
    await expect(ask).toContainText('将被永久删除');
    await shot(page, 'files-delete-zh');
    await checkA11y(page);
    await ask.getByRole('button', { name: '删除' }).click();
    await expect(row(page, folder)).toHaveCount(0);
  });
});

test('a tenant admin makes a dataset; members read it only', async ({ page }) => {
  const name = `corpus-${Date.now().toString(36)}`;
  await login(page, 'tom');
  await visit(page, '#/files', null);
  await page.getByLabel('Dataset name').fill(name);
  allowHttp(page, 404, `/files/datasets/${name}`);
  await page.getByRole('button', { name: 'Open dataset' }).click();
  await expect(page.getByText(`There is no dataset ${name} in this tenant yet.`)).toBeVisible();
  await page.getByRole('button', { name: `Make dataset ${name}` }).click();
  await expect(page.getByRole('heading', { level: 2, name: `Dataset ${name}` })).toBeVisible();
  await expect(page.getByText('Nothing here yet.')).toBeVisible();
  await page.getByLabel('Upload files').setInputFiles({ name: 'labels.txt', mimeType: 'text/plain', buffer: Buffer.from('cat\ndog\n') });
  await expect(row(page, 'labels.txt')).toContainText('8 B');
  await page.locator('#logout').click();
  // signed out for sure before the next login reloads the page: a reload while the logout
  // is in flight would show tom's dashboard, whose calls then answer 401 (a CI flake)
  await expect(page.locator('#username')).toBeVisible();

  await login(page, 'alice');
  await visit(page, `#/files?space=datasets/${name}`, 'files-dataset-member');
  await expect(page.locator('ul.uploads li')).toHaveCount(0); // tom's went with his sign-out
  await expect(page.locator('p.note')).toContainText('Datasets are read-only to members');
  await expect(page.getByLabel('Upload files')).toHaveCount(0);
  await expect(page.getByRole('button', { name: 'Delete labels.txt' })).toHaveCount(0);
  const [download] = await Promise.all([page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download labels.txt' }).click()]);
  expect(fs.readFileSync(await download.path(), 'utf8')).toBe('cat\ndog\n');
});

test('a job\'s page lists its output files: stdout, stderr and its work folder', async ({ page, request }) => {
  test.setTimeout(120_000);
  const marker = `outputs-${Date.now()}`;
  const tok = await token(request, 'alice');
  const job = await submitJob(request, tok, 'physics', { project: 'lattice', name: 'writes-files',
    script: `mkdir -p out\necho "${marker}" > out/result.txt\necho "${marker}"\necho warn >&2` });
  await waitForState(request, tok, 'physics', job.id, ['succeeded']);
  const listed = await request.get(`/api/v1/tenants/physics/jobs/${job.id}/files/`, { headers: bearer(tok) });
  expect(listed.status()).toBe(200);

  await login(page, 'alice');
  await visit(page, `#/jobs/physics/${job.id}`, 'job-outputs');
  const out = page.locator('section[aria-labelledby="job-out-h"]');
  await expect(out.getByRole('heading', { name: 'Output files' })).toBeVisible();
  for (const name of ['stdout', 'stderr']) await expect(out.getByRole('link', { name: `Download ${name}` })).toBeVisible();
  await expect(out.getByRole('button', { name: 'Open folder work' })).toBeVisible();
  await expect(out.getByRole('button', { name: /^Delete|^Rename/ })).toHaveCount(0); // read-only

  const [stdout] = await Promise.all([page.waitForEvent('download'), out.getByRole('link', { name: 'Download stdout' }).click()]);
  expect(fs.readFileSync(await stdout.path(), 'utf8')).toBe(`${marker}\n`);

  await out.getByRole('button', { name: 'Open folder work' }).click();
  await expect(out.locator('nav.crumbs [aria-current="location"]')).toHaveText('work');
  await expect(out.locator('nav.crumbs [aria-current="location"]')).toBeFocused();
  await out.getByRole('button', { name: 'Open folder out' }).click();
  const [result] = await Promise.all([page.waitForEvent('download'), out.getByRole('link', { name: 'Download result.txt' }).click()]);
  expect(result.suggestedFilename()).toBe('result.txt');
  expect(fs.readFileSync(await result.path(), 'utf8')).toBe(`${marker}\n`);
  await shot(page, 'job-outputs-work');
  await checkA11y(page);
  // back up through the breadcrumbs
  await out.getByRole('button', { name: 'outputs' }).click();
  await expect(out.getByRole('link', { name: 'Download stderr' })).toBeVisible();
});

test('the submit form sends the mounts chosen', async ({ page }) => {
  await login(page, 'alice');
  await visit(page, '#/jobs/new', 'job-submit-mounts');
  const form = page.locator('#job-form');
  await form.getByLabel('Job name').fill('with-mounts');
  await form.getByLabel('Project', { exact: true }).selectOption('qcd');
  await form.getByLabel('Commands to run').fill('ls /data');
  await form.getByLabel('The project\'s space (at /data/project)').check();
  await form.getByLabel('My home (at /home/alice)').check();
  const datasets = form.getByLabel('Datasets (read-only)');

  // a name that cannot be a dataset's: said at the group, nothing sent
  let sent = 0;
  page.on('request', (r) => { if (r.method() === 'POST' && r.url().endsWith('/tenants/physics/jobs')) sent++; });
  await datasets.fill('imagenet, Bad Name');
  await form.getByRole('button', { name: 'Submit job' }).click();
  await expect(form.locator('[data-field="mounts"] .field-error')).toContainText('"Bad Name" is not a dataset name');
  expect(sent).toBe(0);

  // the body: the project's space, the home, each dataset read-only (the server's answer
  // is stood in for: the mounts are built on another branch)
  let body = null;
  await page.route((u) => u.pathname === '/api/v1/tenants/physics/jobs', async (route) => {
    body = route.request().postDataJSON();
    await route.fulfill({ status: 400, contentType: 'application/problem+json', json: {
      type: 'about:blank', title: 'Bad Request', status: 400, code: 'files.space_not_found',
      detail: 'mounts[2].name: there is no storage space datasets/coco in tenant "physics"',
      params: { space: 'datasets/coco', tenant: 'physics', field: 'mounts[2].name' },
      errors: [{ field: 'mounts[2].name', code: 'files.space_not_found', message: 'there is no storage space datasets/coco in tenant "physics"',
        params: { space: 'datasets/coco', tenant: 'physics' } }] } });
  });
  allowHttp(page, 400, '/api/v1/tenants/physics/jobs');
  await datasets.fill('imagenet, coco, imagenet');
  await form.getByRole('button', { name: 'Submit job' }).click();
  await expect(form.locator('[data-field="mounts"] .field-error')).toContainText('there is no storage space datasets/coco in tenant "physics"');
  expect(body).toMatchObject({ project: 'qcd', name: 'with-mounts', script: 'ls /data' });
  expect(body.mounts).toEqual([{ space: 'project' }, { space: 'home' },
    { space: 'dataset', name: 'imagenet', read_only: true }, { space: 'dataset', name: 'coco', read_only: true }]);
  await checkA11y(page);
});
