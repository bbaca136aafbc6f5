// A real browser for the owner page's scenario (e2e 39, issue 26): Debian's
// chromium driven headless through playwright-core (pinned in
// e2e/package-lock.json; it downloads no browser of its own), a screenshot
// helper whose PNGs are the test's artifacts, and the login the person does:
// `chat2sbx ui --no-open --json` run beside a test serve, its one-time URL.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, REPO_ROOT, childEnv } from './server.mjs';

// Where the screenshots go (kept after the run; CI can collect the folder).
export const ARTIFACTS_DIR = path.join(REPO_ROOT, 'build', 'e2e-artifacts', 'ui');

// The chromium to drive: CHROMIUM_PATH, else /usr/bin/chromium, else the one
// on the PATH; null when there is none (scripts/deps.sh all installs it).
export function chromiumPath() {
  const candidates = [process.env.CHROMIUM_PATH, '/usr/bin/chromium'];
  const which = spawnSync('sh', ['-c', 'command -v chromium'], { encoding: 'utf8' });
  if (which.status === 0) candidates.push(which.stdout.trim());
  for (const c of candidates) {
    if (!c) continue;
    try {
      fs.accessSync(c, fs.constants.X_OK);
      return c;
    } catch {
      /* the next one */
    }
  }
  return null;
}

// The switches: the new headless mode, no sandbox (CI runs as root, where
// chromium's own sandbox refuses to start), no GPU, /tmp instead of a small
// /dev/shm, and nothing that would reach out of the machine on its own
// (background networking, sync, component updates, extensions).
export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--disable-background-networking',
  '--no-first-run',
  '--disable-extensions',
  '--disable-sync',
  '--disable-component-update',
  '--disable-default-apps',
  '--metrics-recording-only',
];

// Starts chromium headless; resolves to a playwright Browser (close it).
// Throws naming the missing binary when there is none.
export async function launchBrowser() {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("chromium is not installed; run 'scripts/deps.sh all' (Debian's chromium package)");
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath, headless: true, args: CHROMIUM_ARGS, timeout: 60_000 });
}

// Saves a full-page PNG of page as ARTIFACTS_DIR/<name>.png (the folder is
// made when missing), prints where, and returns the path.
export async function screenshot(page, name) {
  fs.mkdirSync(ARTIFACTS_DIR, { recursive: true });
  const file = path.join(ARTIFACTS_DIR, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`e2e: screenshot ${path.relative(REPO_ROOT, file)}`);
  return file;
}

// `chat2sbx ui --no-open --json` as the person runs it beside serve srv (the
// environment serve was last started with, plus env). Returns the spawnSync
// result with `desc` (a one-line account for messages).
export function uiCommand(srv, { env = {}, args = ['--no-open', '--json'] } = {}) {
  const r = spawnSync(BIN, ['ui', ...args], {
    cwd: srv.root,
    env: childEnv({ ...(srv.env || {}), ...env }, path.join(srv.root, 'home'), srv.dataRoot, srv.port),
    encoding: 'utf8',
    timeout: 30_000,
  });
  r.desc =
    `chat2sbx ui ${args.join(' ')} -> exit ${r.status}${r.signal ? ` (signal ${r.signal})` : ''}` +
    `${r.error ? ` (${r.error.message})` : ''}; stdout: ${String(r.stdout).slice(0, 1000)}; ` +
    `stderr: ${String(r.stderr).slice(0, 1000)}`;
  return r;
}

// A fresh one-time login URL from `chat2sbx ui --no-open --json` (the
// contract: {"url": "http://127.0.0.1:PORT/ui/login?code=CODE",
// "expires_in_ms": N}); asserts its shape. Returns {url, code, expiresInMs}.
export function loginUrl(srv, opts) {
  const r = uiCommand(srv, opts);
  assert.equal(r.status, 0, r.desc);
  let j;
  try {
    j = JSON.parse(r.stdout);
  } catch (e) {
    assert.fail(`chat2sbx ui --json printed no JSON (${e.message}): ${r.desc}`);
  }
  const want = new RegExp(`^http://127\\.0\\.0\\.1:${srv.port}/ui/login\\?code=([A-Za-z0-9_-]{43})$`);
  const m = want.exec(String(j.url));
  assert.ok(m, `url is http://127.0.0.1:${srv.port}/ui/login?code=<43 base64url characters>: ${r.desc}`);
  assert.ok(Number.isInteger(j.expires_in_ms) && j.expires_in_ms > 0, `expires_in_ms is a positive integer: ${r.desc}`);
  return { url: j.url, code: m[1], expiresInMs: j.expires_in_ms };
}

// Logs page's browser context in: opens a fresh login URL, which must end
// on /ui/ (the code gone from the address). Returns the URL used.
export async function login(page, srv) {
  const { url } = loginUrl(srv);
  const res = await page.goto(url);
  assert.equal(res?.status(), 200, `GET ${url} ends with 200 on /ui/ (after the 303): ${res?.status()}`);
  assert.equal(new URL(page.url()).pathname, '/ui/', `the login lands on /ui/: ${page.url()}`);
  assert.ok(!page.url().includes('code='), `the code is not left in the address: ${page.url()}`);
  return url;
}
