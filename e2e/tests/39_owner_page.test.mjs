// 39: the owner page (issue 26; its contract: docs/ui.md) in a real browser,
// Debian's chromium headless driven by playwright-core, and attacked.
//
// The person's workflow: an MCP client asks for a host repository in clone
// mode and gets a pending approval whose message names the page; the
// browser logs in with the one-time URL of `chat2sbx ui`, follows
// /ui/#/approvals/ID (app.js sends it to /ui/approvals#ID), approves through
// the confirmation; the client's sandbox_create then works; the sandbox
// shows on /ui/sandboxes, and its page shows a bash session whose output
// grows without a reload and a preview link that opens the dev server
// served inside; Destroy on the page saves the clone's work, and Apply on
// /ui/exports/ID brings it home (the host repository has the refs, nothing
// else of it changed) and shows the git log / git merge commands. Every page
// is kept as a screenshot in build/e2e-artifacts/ui/.
//
// The attacks: no cookie → 401 with no id on every /ui path, POSTs
// included; a used, an unknown and an expired login code → 403; a POST with
// another Origin (another loopback port), without or with a wrong csrf, or
// with no Origin → 403 with nothing changed; a page on another loopback port
// that auto-submits forms to approve and to destroy, opened in the
// logged-in browser, changes nothing; a foreign Host → 403; POST /ui/code
// over TCP → 404; a second Unix user cannot get a code (with the socket's
// directories closed, and opened by mistake); logout ends the session; the
// Content-Security-Policy and the other security headers are on every
// answer seen, the browser's included.
//
// Without chromium the browser parts are skipped with a message, but only
// when not root: CI runs as root and scripts/deps.sh all installs it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { ARTIFACTS_DIR, chromiumPath, launchBrowser, login, loginUrl, screenshot, uiCommand } from '../lib/browser.mjs';
import { EXPORT_ID_RE, git, hostState, runCli, runCliJson, sh } from '../lib/clones.mjs';
import { BIN, CREATE_TIMEOUT, REPO_ROOT, SANDBOX_ID_RE, SESSION_ID_RE, childEnv, freePort, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

const APPROVAL_ID_RE = /^approval_[a-z2-7]{20}$/;
// Any id the page must not show without a session.
const ANY_ID_RE = /\b(sbx|approval|exp|ws|bash)_[a-z2-7]{20}\b/;
const GITID = 'git -c user.name=model -c user.email=model@sandbox';
const PREVIEW_PORT = 8000;

const BROWSER_SKIP =
  !chromiumPath() && process.getuid() !== 0
    ? "chromium is not installed and this is not root: install Debian's chromium (scripts/deps.sh all) to run the owner page's browser test"
    : false;
if (BROWSER_SKIP) console.log(`e2e 39: ${BROWSER_SKIP}`);
// This run's screenshots only.
fs.rmSync(ARTIFACTS_DIR, { recursive: true, force: true });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// What the tests hand on to each other.
const state = {};

// ---- the security headers of every /ui answer ----

const WANT_CSP = {
  'default-src': "'self'",
  'script-src': "'self'",
  'style-src': "'self'",
  'img-src': "'self'",
  'connect-src': "'self'",
  'form-action': "'self'",
  'frame-ancestors': "'none'",
  'base-uri': "'none'",
  'object-src': "'none'",
};

// Every /ui answer seen in the file (node's and the browser's): where, and
// what was wrong with its headers ('' when nothing).
const headerChecks = [];

function cspProblem(value) {
  if (!value) return 'no Content-Security-Policy';
  const got = {};
  for (const d of value.split(';')) {
    const [name, ...rest] = d.trim().split(/\s+/);
    if (name) got[name.toLowerCase()] = rest.join(' ');
  }
  const diff = [];
  for (const [k, v] of Object.entries(WANT_CSP)) if (got[k] !== v) diff.push(`${k} is ${JSON.stringify(got[k])}, want ${v}`);
  for (const k of Object.keys(got)) if (!(k in WANT_CSP)) diff.push(`unexpected ${k} ${got[k]}`);
  return diff.length ? `Content-Security-Policy "${value}": ${diff.join('; ')}` : '';
}

// headers: a lower-case name -> value object. Records the check; returns
// the problem ('' when none).
function checkHeaders(where, headers) {
  const p = [cspProblem(headers['content-security-policy'])];
  if (headers['x-content-type-options'] !== 'nosniff') p.push(`X-Content-Type-Options: ${headers['x-content-type-options']}`);
  // no-referrer (the contract) or same-origin: both keep the page's URLs
  // from other origins. (Under no-referrer the browser sends "Origin: null"
  // with the page's own form POSTs (Fetch standard, "serializing a request
  // origin"), which the same-origin rule must then refuse: the workflow
  // tests above catch that.)
  if (!['no-referrer', 'same-origin'].includes(headers['referrer-policy'])) p.push(`Referrer-Policy: ${headers['referrer-policy']}`);
  if (!/\bno-store\b/.test(headers['cache-control'] || '')) p.push(`Cache-Control: ${headers['cache-control']}`);
  const problem = p.filter(Boolean).join('; ');
  headerChecks.push({ where, problem });
  return problem;
}

// ---- raw HTTP to serve's TCP listener ----

// One request to 127.0.0.1:<serve port>; resolves {status, headers, body}.
// headers may set Host, Origin and Cookie; form (an object) is sent as
// application/x-www-form-urlencoded. The answer's headers are checked
// (checkHeaders) when the path is under /ui.
function ask(method, urlPath, { headers = {}, form, port = ctx.srv.port } = {}) {
  const body = form === undefined ? undefined : Buffer.from(new URLSearchParams(form).toString());
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        method,
        path: urlPath,
        agent: false,
        timeout: 30_000,
        headers: {
          Host: `127.0.0.1:${port}`,
          ...(body ? { 'Content-Type': 'application/x-www-form-urlencoded', 'Content-Length': body.length } : {}),
          ...headers,
        },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const r = { status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') };
          r.desc = `${method} ${urlPath} (${JSON.stringify(headers)}) -> ${r.status}: ${r.body.slice(0, 300)}`;
          if (urlPath.startsWith('/ui')) checkHeaders(`${method} ${urlPath} -> ${r.status}`, res.headers);
          resolve(r);
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

const origin = () => `http://127.0.0.1:${ctx.srv.port}`;

// Logs in with node: a fresh code, GET /ui/login. Asserts the contract's
// answer (303 to /ui/, the cookie's attributes); returns the Cookie header
// value and the code used.
async function nodeLogin() {
  const { code } = loginUrl(ctx.srv);
  const r = await ask('GET', `/ui/login?code=${code}`);
  assert.equal(r.status, 303, r.desc);
  assert.equal(r.headers.location, '/ui/', r.desc);
  const set = [].concat(r.headers['set-cookie'] || []);
  const c = set.find((x) => x.startsWith('c2s_ui='));
  assert.ok(c, `Set-Cookie c2s_ui: ${JSON.stringify(set)}`);
  const value = /^c2s_ui=([A-Za-z0-9_-]+)/.exec(c)?.[1];
  assert.equal(value?.length, 43, `a 43-character session: ${c}`);
  const attrs = c.split(';').map((x) => x.trim().toLowerCase());
  for (const a of ['path=/ui', 'httponly', 'samesite=strict']) assert.ok(attrs.includes(a), `the cookie has ${a}: ${c}`);
  return { cookie: `c2s_ui=${value}`, code };
}

// The csrf token of a page's forms (the hidden input named csrf).
function csrfOf(html) {
  const input = /<input\b[^>]*\bname="csrf"[^>]*>/.exec(html)?.[0];
  const token = input && /\bvalue="([^"]+)"/.exec(input)?.[1];
  assert.ok(token, `the page's forms carry a csrf input: ${html.slice(0, 500)}`);
  return token;
}

// The form action (a path) that confirms destroying sandboxId, read from its
// page's Destroy link and the confirmation page it leads to.
async function destroyActionOf(cookie, sandboxId) {
  const page = await ask('GET', `/ui/sandboxes/${sandboxId}`, { headers: { Cookie: cookie } });
  assert.equal(page.status, 200, page.desc);
  const a = /<a\b[^>]*\bdata-action="destroy"[^>]*>/.exec(page.body)?.[0];
  const href = a && /\bhref="([^"]+)"/.exec(a)?.[1]?.replace(/&amp;/g, '&');
  assert.ok(href, `the sandbox page has a[data-action=destroy] with an href: ${page.body.slice(0, 500)}`);
  const confirm = await ask('GET', href, { headers: { Cookie: cookie } });
  assert.equal(confirm.status, 200, confirm.desc);
  const at = confirm.body.indexOf('data-action="confirm"');
  assert.ok(at > 0, `the destroy confirmation has button[data-action=confirm]: ${confirm.body.slice(0, 500)}`);
  const forms = [...confirm.body.slice(0, at).matchAll(/<form\b[^>]*>/g)];
  const action = forms.length && /\baction="([^"]+)"/.exec(forms[forms.length - 1][0])?.[1]?.replace(/&amp;/g, '&');
  assert.ok(action, `the confirm button's form has an action: ${confirm.body.slice(0, 800)}`);
  return new URL(action, `${origin()}${href}`).pathname;
}

// ---- host side ----

const home = () => path.join(ctx.srv.root, 'home');
const cli = (args) => runCli(ctx.srv, args);
const cliJson = (args) => runCliJson(ctx.srv, args);
const approvalStatus = (id) => cliJson(['approval', 'list', '--json']).find((a) => a.approval_id === id)?.status;

// A git repository under the allowed root with two branches and a tag,
// not registered (so asking for it needs an approval).
function unregisteredRepo(name) {
  const dir = path.join(home(), 'repositories', name);
  fs.mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'first');
  git(dir, 'checkout', '-qb', 'feature');
  fs.writeFileSync(path.join(dir, 'f.txt'), 'feature\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'on feature');
  git(dir, 'checkout', '-q', 'main');
  git(dir, 'tag', 'v1');
  return dir;
}

// sandbox_create for a path never decided: approval_required, nothing made.
async function requestApproval(tools, workspacePath, mode) {
  const args = { workspace_path: workspacePath, workspace_mode: mode };
  const res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
  assert.ok(!res.isError, `sandbox_create(${JSON.stringify(args)}): ${resultText(res)}`);
  const sc = res.structuredContent ?? JSON.parse(resultText(res));
  assert.equal(sc.status, 'approval_required', JSON.stringify(sc));
  assert.match(String(sc.approval_id), APPROVAL_ID_RE, JSON.stringify(sc));
  return sc;
}

// ---- the browser ----

let browser = null;
ctx.onCleanup(async () => {
  if (browser) await browser.close().catch(() => {});
  browser = null;
});

// A fresh browser context (its own cookies) with a page whose /ui answers
// are checked for the security headers.
async function newPage() {
  if (!browser) browser = await launchBrowser();
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.setDefaultTimeout(30_000);
  context.on('response', async (res) => {
    const u = new URL(res.url());
    if (u.port !== String(ctx.srv.port) || !u.pathname.startsWith('/ui')) return;
    try {
      checkHeaders(`browser ${res.request().method()} ${u.pathname}${u.search} -> ${res.status()}`, await res.allHeaders());
    } catch {
      /* a response whose page went away */
    }
  });
  return page;
}

// The logged-in page of the workflow (made by the first test).
async function ownerPage() {
  if (!state.page) {
    state.page = await newPage();
    await login(state.page, ctx.srv);
  }
  return state.page;
}

// Every page's <nav>: the six links; and a Log out button (a form posting
// to /ui/logout, beside the nav).
async function checkNav(page, where) {
  const links = await page.locator('nav a').allTextContents();
  const want = ['Overview', 'Approvals', 'Sandboxes', 'Saved work', 'Health', 'Activity'];
  for (const w of want) assert.ok(links.some((l) => l.trim() === w), `${where}: <nav> links ${JSON.stringify(links)} lack ${w}`);
  const logout = page.locator('form[action="/ui/logout"][method="post" i] button').filter({ hasText: /Log out/ });
  assert.equal(await logout.count(), 1, `${where}: a Log out button posting to /ui/logout`);
}

// Opens /ui/<where> in page; it must answer 200 with the nav.
async function open(page, where) {
  const res = await page.goto(`${origin()}${where}`);
  assert.equal(res?.status(), 200, `GET ${where}: ${res?.status()}`);
  await checkNav(page, where);
}

// ---------------------------------------------------------------------------
// The person's workflow
// ---------------------------------------------------------------------------

ctx.test('the page approves a host path: the client then creates its sandbox, listed on /ui/sandboxes', { skip: BROWSER_SKIP }, async () => {
  const tools = await ctx.tools();
  const dir = unregisteredRepo('owner-page');
  state.dir = dir;
  const req = await requestApproval(tools, dir, 'clone');
  const id = req.approval_id;
  assert.equal(approvalStatus(id), 'pending');

  const page = await ownerPage();
  await checkNav(page, '/ui/');
  assert.equal(await page.locator(`tr[id="${id}"][data-status="pending"]`).count(), 1, 'the overview lists the pending approval');
  await screenshot(page, 'overview');

  // The link of the model's message: app.js sends it to /ui/approvals#ID.
  await page.goto(`${origin()}/ui/#/approvals/${id}`);
  await page.waitForURL(`${origin()}/ui/approvals#${id}`, { timeout: 10_000 });
  await checkNav(page, '/ui/approvals');
  const row = page.locator(`tr[id="${id}"][data-status="pending"]`);
  assert.equal(await row.count(), 1, `/ui/approvals has the pending row ${id}`);
  const rowText = await row.textContent();
  assert.ok(rowText.includes(dir), `the row shows the path as requested (${dir}): ${rowText}`);
  assert.ok(rowText.includes('clone'), `the row shows the mode: ${rowText}`);
  await screenshot(page, 'approvals');
  // A narrow window: the page itself does not scroll sideways (a wide table
  // may scroll in its own box).
  await page.setViewportSize({ width: 390, height: 800 });
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  await screenshot(page, 'approvals-narrow');
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.ok(overflow <= 1, `at 390 px wide the page scrolls sideways by ${overflow} px`);

  await row.locator('a[data-action="approve"]').click();
  await page.waitForURL(`${origin()}/ui/approvals/${id}/approve`);
  const confirm = page.locator('button[data-action="confirm"]');
  assert.equal(await confirm.count(), 1, 'the confirmation page has one confirm button');
  const body = await page.locator('main').textContent();
  assert.ok(body.includes(fs.realpathSync(dir)) || body.includes(dir), `the confirmation shows the path again: ${body}`);
  assert.equal(approvalStatus(id), 'pending', 'opening the confirmation decides nothing');
  await screenshot(page, 'approval-confirmation');
  // By keyboard: the confirm button takes the focus and Enter.
  await confirm.focus();
  await page.keyboard.press('Enter');
  await page.locator('.result').first().waitFor();
  const result = page.locator('.result.ok');
  assert.equal(await result.count(), 1, `the result is ok: ${await page.locator('.result').first().textContent()}`);
  await screenshot(page, 'approval-result');
  // The same stored decision as the CLI's.
  assert.equal(approvalStatus(id), 'approved', 'approval list shows the page decision');

  const sbx = await tools.create({ workspace_path: dir, workspace_mode: 'clone' });
  assert.match(String(sbx.sandbox_id), SANDBOX_ID_RE, JSON.stringify(sbx));
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  state.sandboxId = sbx.sandbox_id;
  state.hostBefore = hostState(dir);
  if (sbx.copy_session_id) {
    let r;
    do r = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: sbx.copy_session_id, yield_time_ms: 10000 });
    while (r.status === 'running');
  }

  await open(page, '/ui/sandboxes');
  const srow = page.locator(`tr[data-sandbox="${sbx.sandbox_id}"]`);
  assert.equal(await srow.count(), 1, `/ui/sandboxes lists ${sbx.sandbox_id}`);
  await screenshot(page, 'sandboxes');
  const slink = srow.locator(`a[href="/ui/sandboxes/${sbx.sandbox_id}"]`);
  assert.ok((await slink.count()) >= 1, `the row links to /ui/sandboxes/${sbx.sandbox_id}`);
  await slink.first().click();
  await page.waitForURL(`${origin()}/ui/sandboxes/${sbx.sandbox_id}`);
  await checkNav(page, '/ui/sandboxes/ID');

  // The model points the person to the page (not to a login code).
  assert.ok(
    String(req.message).includes(`http://127.0.0.1:${ctx.srv.port}/ui/#/approvals/${id}`),
    `sandbox_create's message names the page's approval URL: ${req.message}`,
  );
  assert.ok(!/code=/.test(req.message), `the message carries no login code: ${req.message}`);
});

ctx.test("the sandbox page shows a bash session's output growing without a reload", { skip: BROWSER_SKIP }, async () => {
  assert.ok(state.sandboxId, 'needs the sandbox of the first test');
  const tools = await ctx.tools();
  const page = await ownerPage();
  const id = state.sandboxId;
  await open(page, `/ui/sandboxes/${id}`);
  await page.evaluate(() => {
    window.e2eMarker = 'no reload';
  });
  // Both sessions start after the page was loaded: they must show up live.
  const run = await tools.ok('bash', {
    sandbox_id: id,
    command: 'for i in $(seq 1 1000); do echo "tick-$i"; sleep 0.5; done',
    yield_time_ms: 200,
  });
  assert.match(String(run.session_id), SESSION_ID_RE, JSON.stringify(run));
  assert.equal(run.status, 'running', JSON.stringify(run));
  const big = await tools.ok('bash', { sandbox_id: id, command: 'seq 1 5000; echo big-done', yield_time_ms: 10_000 });
  assert.match(String(big.session_id), SESSION_ID_RE, JSON.stringify(big).slice(0, 300));

  const sel = `section.session[data-session="${run.session_id}"]`;
  const lastTick = () =>
    page.evaluate((s) => {
      const t = document.querySelector(`${s} pre.output`)?.textContent || '';
      const all = [...t.matchAll(/tick-(\d+)/g)].map((m) => Number(m[1]));
      return all.length ? Math.max(...all) : 0;
    }, sel);
  await page.waitForFunction((s) => /tick-\d+/.test(document.querySelector(`${s} pre.output`)?.textContent || ''), sel, {
    timeout: 20_000,
  });
  const first = await lastTick();
  const status = await page.locator(`${sel} .status`).first().textContent();
  assert.match(status, /running/i, `the session's status: ${status}`);
  await screenshot(page, 'sandbox-session');
  const t0 = Date.now();
  await page.waitForFunction(
    ({ s, n }) => {
      const t = document.querySelector(`${s} pre.output`)?.textContent || '';
      return [...t.matchAll(/tick-(\d+)/g)].some((m) => Number(m[1]) >= n + 4);
    },
    { s: sel, n: first },
    { timeout: 20_000 },
  );
  const later = await lastTick();
  console.log(`e2e 39: the session's output went from tick-${first} to tick-${later} in ${Date.now() - t0} ms without a reload`);
  assert.equal(await page.evaluate(() => window.e2eMarker), 'no reload', 'the page was not reloaded (live update)');
  // A session that printed 24 KB shows its tail: the end, at most 4 KiB.
  const bigSel = `section.session[data-session="${big.session_id}"]`;
  await page.waitForFunction((s) => /big-done/.test(document.querySelector(`${s} pre.output`)?.textContent || ''), bigSel, {
    timeout: 10_000,
  });
  const tail = await page.locator(`${bigSel} pre.output`).textContent();
  assert.ok(Buffer.byteLength(tail) <= 4096, `the tail is at most 4 KiB: ${Buffer.byteLength(tail)} bytes`);
  assert.match(tail, /\n5000\nbig-done/, 'the tail ends with the last lines');
  assert.ok(!/^1\n2\n3\n/.test(tail.trimStart()), 'the tail does not start at the beginning');
  const bigStatus = await page.locator(`${bigSel} .status`).first().textContent();
  assert.doesNotMatch(bigStatus, /running/i, `the ended session does not say running: ${bigStatus}`);
});

ctx.test('a preview served inside the sandbox opens from its link on the sandbox page', { skip: BROWSER_SKIP }, async () => {
  assert.ok(state.sandboxId, 'needs the sandbox of the first test');
  const tools = await ctx.tools();
  const page = await ownerPage();
  const id = state.sandboxId;
  const marker = `preview-${crypto.randomBytes(6).toString('hex')}`;
  const serve = await tools.ok('bash', {
    sandbox_id: id,
    command: `mkdir -p /tmp/preview && cd /tmp/preview && echo '<h1>${marker}</h1>' > index.html && exec python3 -m http.server ${PREVIEW_PORT} --bind 0.0.0.0`,
    yield_time_ms: 100,
  });
  assert.equal(serve.status, 'running', JSON.stringify(serve));
  await sh(tools, id, `for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/${PREVIEW_PORT}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`);
  const x = await tools.ok('sandbox_expose', { sandbox_id: id, port: PREVIEW_PORT });
  assert.equal(x.url, `http://127.0.0.1:${x.host_port}/`, JSON.stringify(x));
  assert.ok(
    !x.message || String(x.message).includes(`/ui/sandboxes/${id}`) || String(x.message).includes('/ui/'),
    `sandbox_expose names the page's preview link: ${x.message}`,
  );

  await open(page, `/ui/sandboxes/${id}`);
  const link = page.locator(`a[data-preview="${PREVIEW_PORT}"]`);
  await link.waitFor({ timeout: 10_000 });
  assert.equal(await link.getAttribute('href'), x.url, 'the preview link is the exposed URL');
  assert.equal(await link.getAttribute('target'), '_blank', 'the preview opens in a new tab');
  await screenshot(page, 'sandbox');
  const [tab] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
  await tab.waitForLoadState();
  assert.equal(tab.url(), x.url);
  assert.equal(await tab.locator('h1').textContent(), marker, 'the preview shows what the dev server serves');
  await screenshot(tab, 'preview');
  await tab.close();
});

ctx.test('Destroy on the page saves the clone; Apply on /ui/exports/ID brings the refs home and shows the commands', { skip: BROWSER_SKIP }, async () => {
  assert.ok(state.sandboxId, 'needs the sandbox of the first test');
  const tools = await ctx.tools();
  const page = await ownerPage();
  const id = state.sandboxId;
  const dir = state.dir;
  await sh(tools, id, `cd /workspace && ${GITID} checkout -qb page-work && echo page > page.txt && git add page.txt && ${GITID} commit -qm 'work from the page test'`);

  await open(page, `/ui/sandboxes/${id}`);
  await page.locator('a[data-action="destroy"]').click();
  const confirm = page.locator('button[data-action="confirm"]');
  await confirm.waitFor();
  assert.ok((await page.locator('input[name="force"]').count()) >= 1, 'the confirmation offers force as a checkbox');
  const explained = await page.locator('main').textContent();
  assert.match(explained, /sav/i, `the confirmation explains the saved-work rule: ${explained}`);
  assert.equal((await tools.ok('sandbox_get', { sandbox_id: id })).status, 'running', 'opening the confirmation destroys nothing');
  await screenshot(page, 'destroy-confirmation');
  await confirm.click();
  await page.locator('.result').first().waitFor({ timeout: 90_000 });
  assert.equal(await page.locator('.result.ok').count(), 1, `destroy: ${await page.locator('.result').first().textContent()}`);
  await screenshot(page, 'destroy-result');

  const exp = cliJson(['export', 'list', '--json']).find((e) => e.sandbox_id === id);
  assert.ok(exp, `the destroy saved the clone's work: ${JSON.stringify(cliJson(['export', 'list', '--json']))}`);
  assert.match(exp.export_id, EXPORT_ID_RE);
  state.exportId = exp.export_id;

  await open(page, '/ui/exports');
  const row = page.locator(`tr[data-export="${exp.export_id}"]`);
  assert.equal(await row.count(), 1, `/ui/exports lists ${exp.export_id}`);
  await screenshot(page, 'exports');
  const elink = row.locator(`a[href="/ui/exports/${exp.export_id}"]`);
  assert.ok((await elink.count()) >= 1, `the row links to /ui/exports/${exp.export_id}`);
  await elink.first().click();
  await page.waitForURL(`${origin()}/ui/exports/${exp.export_id}`);
  await checkNav(page, '/ui/exports/ID');
  const show = await page.locator('main').textContent();
  for (const want of ['page-work', 'work from the page test', 'page.txt']) {
    assert.ok(show.includes(want), `/ui/exports/ID shows ${want}: ${show}`);
  }
  await screenshot(page, 'export');
  await page.locator('a[data-action="apply"]').click();
  const applyConfirm = page.locator('button[data-action="confirm"]');
  await applyConfirm.waitFor();
  assert.equal(git(dir, 'for-each-ref', `refs/remotes/chat2sbx/${id}`), '', 'opening the confirmation applies nothing');
  await screenshot(page, 'apply-confirmation');
  await applyConfirm.click();
  await page.locator('.result').first().waitFor({ timeout: 60_000 });
  assert.equal(await page.locator('.result.ok').count(), 1, `apply: ${await page.locator('.result').first().textContent()}`);
  const commands = await page.locator('pre.commands').textContent();
  assert.match(commands, /git merge/, `pre.commands: ${commands}`);
  assert.match(commands, /git log/, `pre.commands: ${commands}`);
  await screenshot(page, 'result');

  const ns = `refs/remotes/chat2sbx/${id}`;
  const refs = git(dir, 'for-each-ref', '--format=%(refname)', ns);
  assert.match(refs, new RegExp(`${ns}/page-work`), `the host repository has the refs: ${refs}`);
  assert.equal(git(dir, 'log', '-1', '--format=%s', `${ns}/page-work`).trim(), 'work from the page test');
  assert.deepEqual(hostState(dir), state.hostBefore, 'nothing else of the host repository changed');
  assert.equal(cliJson(['export', 'list', '--json']).find((e) => e.export_id === exp.export_id)?.state, 'applied');
});

ctx.test('the health and activity pages', { skip: BROWSER_SKIP }, async () => {
  const page = await ownerPage();
  await open(page, '/ui/health');
  assert.equal(await page.locator('button[data-action="doctor"]').count(), 1, 'the health page can start doctor');
  await screenshot(page, 'health');
  await open(page, '/ui/activity');
  const rows = await page.locator('tr.audit').count();
  assert.ok(rows >= 1 && rows <= 50, `/ui/activity shows audit rows, at most 50 a page: ${rows}`);
  await screenshot(page, 'activity');
  if (state.sandboxId) {
    await open(page, `/ui/activity?sandbox=${state.sandboxId}`);
    const texts = await page.locator('tr.audit').allTextContents();
    assert.ok(texts.length >= 1, 'the sandbox filter keeps its rows');
    const others = texts.filter((t) => [...t.matchAll(/sbx_[a-z2-7]{20}/g)].some((m) => m[0] !== state.sandboxId));
    assert.deepEqual(others, [], 'the sandbox filter shows no other sandbox');
  }
  console.log(`e2e 39: screenshots in ${path.relative(REPO_ROOT, ARTIFACTS_DIR)}/`);
});

// ---------------------------------------------------------------------------
// Attacks
// ---------------------------------------------------------------------------

ctx.test('no cookie: every /ui path answers 401 with the login hint and no id, POSTs change nothing', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  state.plainSandbox = sbx.sandbox_id;
  const d = path.join(home(), 'repositories', 'no-cookie');
  fs.mkdirSync(d, { recursive: true });
  const pending = (await requestApproval(tools, d, 'direct')).approval_id;
  state.pendingForNode = pending;
  const paths = [
    '/ui/',
    '/ui/approvals',
    '/ui/sandboxes',
    `/ui/sandboxes/${sbx.sandbox_id}`,
    '/ui/exports',
    ...(state.exportId ? [`/ui/exports/${state.exportId}`] : []),
    '/ui/health',
    '/ui/activity',
    `/ui/activity?sandbox=${sbx.sandbox_id}`,
    `/ui/approvals/${pending}/approve`,
    '/ui/app.js',
    '/ui/style.css',
  ];
  const problems = [];
  for (const p of paths) {
    const r = await ask('GET', p);
    if (r.status !== 401) problems.push(`${r.desc}: want 401`);
    else if (ANY_ID_RE.test(r.body)) problems.push(`GET ${p}: the 401 body carries an id: ${ANY_ID_RE.exec(r.body)[0]}`);
    else if (!/chat2sbx ui/.test(r.body)) problems.push(`GET ${p}: the 401 body does not say to run chat2sbx ui: ${r.body.slice(0, 200)}`);
  }
  // A forged session cookie is no session.
  const forged = await ask('GET', '/ui/approvals', { headers: { Cookie: `c2s_ui=${'A'.repeat(43)}` } });
  if (forged.status !== 401 || ANY_ID_RE.test(forged.body)) problems.push(`forged cookie: ${forged.desc}`);
  for (const p of [`/ui/approvals/${pending}/approve`, `/ui/sandboxes/${sbx.sandbox_id}/destroy`, '/ui/logout', '/ui/health/doctor']) {
    const r = await ask('POST', p, { headers: { Origin: origin() }, form: { csrf: 'x'.repeat(43) } });
    if (r.status !== 401) problems.push(`${r.desc}: want 401`);
    if (ANY_ID_RE.test(r.body)) problems.push(`POST ${p}: the 401 body carries an id`);
  }
  assert.deepEqual(problems, []);
  assert.equal(approvalStatus(pending), 'pending', 'no POST without a session decided the approval');
  assert.equal((await tools.ok('sandbox_get', { sandbox_id: sbx.sandbox_id })).status, 'running', 'nor destroyed the sandbox');
});

ctx.test('login codes: once only; an unknown one is refused; POST /ui/code over TCP is 404', async () => {
  const { cookie, code } = await nodeLogin();
  state.nodeCookie = cookie;
  const again = await ask('GET', `/ui/login?code=${code}`);
  assert.equal(again.status, 403, `a used code: ${again.desc}`);
  assert.match(again.body, /chat2sbx ui/, 'the refusal says to run chat2sbx ui again');
  assert.ok(!again.headers['set-cookie'], 'no cookie for a used code');
  const unknown = await ask('GET', `/ui/login?code=${crypto.randomBytes(32).toString('base64url')}`);
  assert.equal(unknown.status, 403, `an unknown code: ${unknown.desc}`);
  const empty = await ask('GET', '/ui/login');
  assert.equal(empty.status, 403, `no code: ${empty.desc}`);
  // The session works (the control for the refusals above and below).
  const ok = await ask('GET', '/ui/approvals', { headers: { Cookie: cookie } });
  assert.equal(ok.status, 200, ok.desc);
  // The code endpoint exists only on the Unix socket: not for anyone who can reach the port.
  for (const headers of [{}, { Cookie: cookie }, { ...ctx.srv.authHeaders(), Origin: origin() }]) {
    const r = await ask('POST', '/ui/code', { headers });
    assert.equal(r.status, 404, `POST /ui/code over TCP: ${r.desc}`);
    assert.ok(!/code=/.test(r.body), 'no code in the body');
  }
});

// The attempts of the two tests below: [what, headers, form fields].
function forgedPosts(cookie, csrf, otherPort) {
  return [
    ['another Origin (another loopback port)', { Cookie: cookie, Origin: `http://127.0.0.1:${otherPort}` }, { csrf }],
    ['Origin localhost (another host name)', { Cookie: cookie, Origin: `http://localhost:${ctx.srv.port}` }, { csrf }],
    ['Origin null', { Cookie: cookie, Origin: 'null' }, { csrf }],
    ['no Origin', { Cookie: cookie }, { csrf }],
    ['no csrf', { Cookie: cookie, Origin: origin() }, {}],
    ['a wrong csrf', { Cookie: cookie, Origin: origin() }, { csrf: crypto.randomBytes(32).toString('base64url') }],
    ['an empty csrf', { Cookie: cookie, Origin: origin() }, { csrf: '' }],
  ];
}

// Sends each forged POST to urlPath; the problems (each must be 403).
async function tryForged(urlPath, attempts) {
  const problems = [];
  for (const [what, headers, form] of attempts) {
    const r = await ask('POST', urlPath, { headers, form });
    if (r.status !== 403) problems.push(`${what}: ${r.desc}: want 403`);
    console.log(`e2e 39: attack "${what}" on POST ${urlPath.replace(/_[a-z2-7]{20}/g, '_…')}: ${r.status}`);
  }
  return problems;
}

ctx.test('approving needs the csrf token and the same Origin; a foreign Host is refused; the proper POST works', async () => {
  assert.ok(state.nodeCookie && state.pendingForNode, 'needs the session and the approval of the tests above');
  const cookie = state.nodeCookie;
  const id = state.pendingForNode;
  const page = await ask('GET', '/ui/approvals', { headers: { Cookie: cookie } });
  assert.equal(page.status, 200, page.desc);
  const csrf = csrfOf(page.body);
  state.nodeCsrf = csrf;
  const problems = await tryForged(`/ui/approvals/${id}/approve`, forgedPosts(cookie, csrf, await freePort()));
  assert.deepEqual(problems, []);
  assert.equal(approvalStatus(id), 'pending', 'the approval is still pending');

  for (const host of ['evil.example', `evil.example:${ctx.srv.port}`, `127.0.0.1.nip.example:${ctx.srv.port}`]) {
    const r = await ask('GET', '/ui/', { headers: { Host: host, Cookie: cookie } });
    assert.equal(r.status, 403, `Host ${host}: ${r.desc}`);
    assert.ok(!ANY_ID_RE.test(r.body), `Host ${host}: no id in the body`);
    const p = await ask('POST', `/ui/approvals/${id}/approve`, { headers: { Host: host, Cookie: cookie, Origin: `http://${host}` }, form: { csrf } });
    assert.equal(p.status, 403, `POST with Host ${host}: ${p.desc}`);
  }
  assert.equal(approvalStatus(id), 'pending', 'the approval is still pending after the foreign Hosts');

  // The control: the same POST done right works (so the 403s above were the checks).
  const rj = await ask('POST', `/ui/approvals/${id}/reject`, { headers: { Cookie: cookie, Origin: origin() }, form: { csrf } });
  assert.ok([200, 303].includes(rj.status), `a proper reject: ${rj.desc}`);
  assert.equal(approvalStatus(id), 'rejected', 'the proper POST decided it');
});

ctx.test('destroying needs the csrf token and the same Origin', async () => {
  assert.ok(state.nodeCookie && state.nodeCsrf && state.plainSandbox, 'needs the session and the sandbox of the tests above');
  const destroyPath = await destroyActionOf(state.nodeCookie, state.plainSandbox);
  const problems = await tryForged(destroyPath, forgedPosts(state.nodeCookie, state.nodeCsrf, await freePort()));
  assert.deepEqual(problems, []);
  const tools = await ctx.tools();
  assert.equal((await tools.ok('sandbox_get', { sandbox_id: state.plainSandbox })).status, 'running', 'the sandbox still runs');
});

// A page server on another loopback port whose pages each hold one form
// (action, hidden fields) that its script file (not inline) submits at once.
// Returns its port; closed after the test t.
async function evilSite(t, forms) {
  const port = await freePort();
  const html = (action, fields) =>
    `<!doctype html><html><head><script src="/submit.js" defer></script></head><body>` +
    `<form method="POST" action="${action}">` +
    Object.entries(fields)
      .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
      .join('') +
    `</form></body></html>`;
  const site = http.createServer((req, res) => {
    const name = req.url.slice(1).replace(/\.html$/, '');
    if (req.url === '/submit.js') {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end('document.forms[0].submit();\n');
    } else if (forms[name]) {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(html(...forms[name]));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((r) => site.listen(port, '127.0.0.1', r));
  t.after(() => site.close());
  return port;
}

// Opens each of the evil site's pages in page; every POST they make must
// be answered 403.
async function openEvilForms(page, port, forms) {
  for (const name of Object.keys(forms)) {
    const [action] = forms[name];
    const answered = page.waitForResponse((r) => r.request().method() === 'POST' && r.url() === action, { timeout: 20_000 });
    // The page submits itself while loading: wait for the POST's answer, not its load.
    await page.goto(`http://127.0.0.1:${port}/${name}.html`, { waitUntil: 'commit' });
    const r = await answered;
    const sentOrigin = await r.request().headerValue('origin');
    const sentCookie = /c2s_ui=/.test((await r.request().headerValue('cookie')) || '');
    console.log(`e2e 39: attack cross-origin form ${name} (Origin ${sentOrigin}, session cookie sent: ${sentCookie}): ${r.status()}`);
    assert.equal(r.status(), 403, `the cross-origin form ${name} is refused (Origin ${sentOrigin})`);
    await screenshot(page, `cross-origin-${name}`);
  }
}

ctx.test('a page on another loopback port auto-submitting approve forms in the logged-in browser approves nothing', { skip: BROWSER_SKIP }, async (t) => {
  const tools = await ctx.tools();
  const d = path.join(home(), 'repositories', 'cross-origin');
  fs.mkdirSync(d, { recursive: true });
  const id = (await requestApproval(tools, d, 'direct')).approval_id;
  const page = await ownerPage();
  // The real token too, as if it leaked: the Origin check alone must hold.
  await open(page, '/ui/approvals');
  const realCsrf = await page.locator('input[name="csrf"]').first().getAttribute('value');
  assert.ok(realCsrf, 'the page carries a csrf input');
  state.browserCsrf = realCsrf;
  const forms = {
    'approve-guessed': [`${origin()}/ui/approvals/${id}/approve`, { csrf: crypto.randomBytes(32).toString('base64url') }],
    'approve-real-csrf': [`${origin()}/ui/approvals/${id}/approve`, { csrf: realCsrf }],
  };
  await openEvilForms(page, await evilSite(t, forms), forms);
  assert.equal(approvalStatus(id), 'pending', 'the cross-origin forms approved nothing');
  runCli(ctx.srv, ['approval', 'reject', id]); // leave nothing pending
});

ctx.test('a page on another loopback port auto-submitting a destroy form in the logged-in browser destroys nothing', { skip: BROWSER_SKIP }, async (t) => {
  assert.ok(state.plainSandbox && state.browserCsrf, 'needs the sandbox and the csrf token of the tests above');
  const tools = await ctx.tools();
  const page = await ownerPage();
  // Where the destroy form posts to, read from the page.
  await open(page, `/ui/sandboxes/${state.plainSandbox}`);
  await page.locator('a[data-action="destroy"]').click();
  await page.locator('button[data-action="confirm"]').waitFor();
  const form = page.locator('form:has(button[data-action="confirm"])');
  const destroyAction = new URL((await form.getAttribute('action')) || '', page.url()).toString();
  assert.ok(destroyAction.includes(`/ui/sandboxes/${state.plainSandbox}`), `the destroy form posts to ${destroyAction}`);
  const forms = { 'destroy-real-csrf': [destroyAction, { csrf: state.browserCsrf }] };
  await openEvilForms(page, await evilSite(t, forms), forms);
  assert.equal((await tools.ok('sandbox_get', { sandbox_id: state.plainSandbox })).status, 'running', 'the cross-origin form destroyed nothing');
});

ctx.test('a second Unix user cannot get a login code, with the socket closed or opened by mistake', async (t) => {
  if (process.getuid() !== 0) return t.skip('needs root to create a user');
  const user = `c2se2e39${crypto.randomBytes(3).toString('hex')}`;
  const add = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', user], { encoding: 'utf8' });
  assert.equal(add.status, 0, add.stderr);
  ctx.onCleanup(() => spawnSync('userdel', [user]));
  const uid = Number(spawnSync('id', ['-u', user], { encoding: 'utf8' }).stdout.trim());
  assert.ok(uid > 0);
  const srv = ctx.srv;
  const env = childEnv(srv.env || {}, home(), srv.dataRoot, srv.port);
  const asUser = (cmd, args) => {
    const r = spawnSync('runuser', ['-u', user, '--', 'env', '-i', ...Object.entries(env).map(([k, v]) => `${k}=${v}`), cmd, ...args], {
      encoding: 'utf8',
      timeout: 30_000,
      cwd: '/',
    });
    r.desc = `${cmd} ${args.join(' ')} as ${user}: exit ${r.status}; stdout: ${r.stdout}; stderr: ${r.stderr}`;
    return r;
  };
  const tryAll = (when) => {
    const ui = asUser(BIN, ['ui', '--no-open', '--json']);
    console.log(`e2e 39: attack: chat2sbx ui as another user (${when}): exit ${ui.status}: ${String(ui.stderr).trim().split('\n')[0]}`);
    assert.notEqual(ui.status, 0, `chat2sbx ui as another user fails (${when}): ${ui.desc}`);
    assert.ok(!/code=/.test(ui.stdout + ui.stderr), `no code (${when}): ${ui.desc}`);
    const curl = asUser('curl', ['-s', '-X', 'POST', '-w', '\n%{http_code}', '--unix-socket', srv.socketPath, 'http://localhost/ui/code']);
    console.log(`e2e 39: attack: POST /ui/code on the socket as another user (${when}): curl exit ${curl.status}`);
    assert.ok([7, 52, 56].includes(curl.status), `the socket gives another user no answer (${when}): ${curl.desc}`);
    assert.ok(!/code/.test(curl.stdout), curl.desc);
  };
  tryAll('its directories closed');
  const dirs = [srv.root, srv.dataRoot, path.join(srv.dataRoot, 'state')];
  const modes = dirs.map((d) => fs.statSync(d).mode & 0o777);
  try {
    for (const d of dirs) fs.chmodSync(d, 0o711);
    fs.chmodSync(srv.socketPath, 0o666);
    tryAll('the socket opened by mistake');
    // It was serve's peer-uid check that cut the connection, not the file mode.
    const log = fs.readFileSync(srv.stderrPath, 'utf8');
    assert.match(log, new RegExp(`refused a connection on the MCP socket from uid ${uid} \\(pid \\d+\\)`), 'serve logged the refusal');
  } finally {
    dirs.forEach((d, i) => fs.chmodSync(d, modes[i]));
    fs.chmodSync(srv.socketPath, 0o600);
  }
  // The owner still gets one.
  loginUrl(srv);
});

ctx.test('logout ends the session: 303 to /ui/, the cookie cleared, the old cookie gets 401', async () => {
  const { cookie } = await nodeLogin();
  const page = await ask('GET', '/ui/', { headers: { Cookie: cookie } });
  assert.equal(page.status, 200, page.desc);
  const csrf = csrfOf(page.body);
  const noCsrf = await ask('POST', '/ui/logout', { headers: { Cookie: cookie, Origin: origin() }, form: {} });
  assert.equal(noCsrf.status, 403, `logout without csrf: ${noCsrf.desc}`);
  const out = await ask('POST', '/ui/logout', { headers: { Cookie: cookie, Origin: origin() }, form: { csrf } });
  assert.equal(out.status, 303, out.desc);
  assert.equal(out.headers.location, '/ui/', out.desc);
  const set = [].concat(out.headers['set-cookie'] || []).join(' | ');
  assert.match(set, /c2s_ui=[^;]*;.*Max-Age=0/i, `the cookie is cleared: ${set}`);
  const after = await ask('GET', '/ui/', { headers: { Cookie: cookie } });
  assert.equal(after.status, 401, `the ended session: ${after.desc}`);
});

ctx.test('an expired login code is refused (CHAT2SBX_UI_CODE_TTL_MS=1000)', async () => {
  const tools = await ctx.tools();
  if (state.plainSandbox) await tools.destroyQuietly(state.plainSandbox);
  await ctx.restartWith({ CHAT2SBX_UI_CODE_TTL_MS: '1000' });
  const { code, expiresInMs } = loginUrl(ctx.srv);
  assert.equal(expiresInMs, 1000, 'chat2sbx ui says how long the code is good');
  await sleep(1500);
  const r = await ask('GET', `/ui/login?code=${code}`);
  assert.equal(r.status, 403, `an expired code: ${r.desc}`);
  assert.match(r.body, /chat2sbx ui/);
  assert.ok(!r.headers['set-cookie'], 'no cookie for an expired code');
  // A fresh code used at once still works.
  const fresh = loginUrl(ctx.srv);
  const ok = await ask('GET', `/ui/login?code=${fresh.code}`);
  assert.equal(ok.status, 303, `a fresh code used at once: ${ok.desc}`);
});

ctx.test('chat2sbx ui without serve: exit 6 (unavailable) and a message naming chat2sbx serve', async () => {
  const srv = ctx.srv;
  const dataRoot = path.join(srv.root, 'no-serve-here');
  fs.mkdirSync(dataRoot, { recursive: true, mode: 0o700 });
  const r = uiCommand({ root: srv.root, dataRoot, port: await freePort(), env: srv.env });
  assert.equal(r.status, 6, r.desc);
  assert.match(r.stderr, /chat2sbx serve/, r.desc);
  assert.ok(!/code=/.test(r.stdout), r.desc);
});

ctx.test('every /ui answer seen carried the Content-Security-Policy and the security headers', async () => {
  const bad = headerChecks.filter((c) => c.problem);
  const statuses = new Set(headerChecks.map((c) => c.where.replace(/.* -> /, '')));
  console.log(`e2e 39: security headers checked on ${headerChecks.length} /ui answers (statuses ${[...statuses].sort().join(', ')})`);
  assert.ok(headerChecks.length >= 30, `enough answers were seen: ${headerChecks.length}`);
  for (const s of ['401', '403', '404']) assert.ok(statuses.has(s), `a ${s} answer was checked`);
  assert.deepEqual(bad.map((c) => `${c.where}: ${c.problem}`), []);
});

ctx.finish();
