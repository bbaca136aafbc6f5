// 17: hardening from the security review. serve refuses a planted .env (a
// test-only setting in it, or a .env others can write) and a non-loopback
// CHAT2SBX_HOST before it listens; sandbox_expose has a per-sandbox cap (8)
// and a global one (CHAT2SBX_MAX_EXPOSURES), refused with LIMIT before
// anything is made; bad limits get precise messages; the CLI and the edit
// tool speak in their own words. (The loopback-peer check and the 64 MiB
// budget of request bodies are unit-tested: test_mcp_body_budget.c.) serve
// refuses to start inside a direct-mode workspace.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { BIN, childEnv, dockerRequest, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer({ env: { CHAT2SBX_MAX_EXPOSURES: '9' } });

// Forwarders go with the harness's container cleanup; their networks here.
ctx.onCleanup(async () => {
  const filters = encodeURIComponent(JSON.stringify({ label: ['org.chat2sbx.expose.registry'] }));
  const r = await dockerRequest('GET', `/networks?filters=${filters}`);
  for (const n of r.body || []) {
    if (!String(n.Labels?.['org.chat2sbx.expose.registry'] || '').startsWith(ctx.srv.dataRoot)) continue;
    const full = (await dockerRequest('GET', `/networks/${n.Id}`)).body;
    for (const id of Object.keys(full?.Containers || {})) {
      await dockerRequest('POST', `/networks/${n.Id}/disconnect`, { Container: id, Force: true });
    }
    await dockerRequest('DELETE', `/networks/${n.Id}`);
  }
});

// Runs the binary in a fresh directory (its own .env) with its own data
// root; returns spawnSync's result plus a description for messages.
function runIn(dir, args, env = {}, timeout = 20_000) {
  const home = path.join(dir, 'home');
  fs.mkdirSync(home, { recursive: true });
  const r = spawnSync(BIN, args, {
    cwd: dir,
    env: childEnv(env, home, path.join(dir, 'data'), ctx.srv.port + 1),
    encoding: 'utf8',
    timeout,
  });
  r.desc = `chat2sbx ${args.join(' ')} -> exit ${r.status} signal ${r.signal}; stdout: ${r.stdout}; stderr: ${r.stderr}`;
  return r;
}

function tmpDir() {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e17-'));
}

ctx.test('a test-only setting in ./.env is refused, naming it and the file', () => {
  for (const line of ['CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET=1', 'CHAT2SBX_CLOCK_OFFSET_MS=100000']) {
    const dir = tmpDir();
    try {
      fs.writeFileSync(path.join(dir, '.env'), `${line}\n`, { mode: 0o600 });
      const r = runIn(dir, ['serve']);
      assert.notEqual(r.status, 0, r.desc);
      assert.match(r.stderr, new RegExp(line.split('=')[0]), r.desc);
      assert.match(r.stderr, /process environment/, r.desc);
      assert.match(r.stderr, /\.env/, r.desc);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }
});

ctx.test('a group- or world-writable ./.env is refused with the fix', () => {
  const dir = tmpDir();
  try {
    const f = path.join(dir, '.env');
    fs.writeFileSync(f, 'CHAT2SBX_ALLOWED_HOST_ROOTS=/\n');
    fs.chmodSync(f, 0o666);
    const r = runIn(dir, ['serve']);
    assert.notEqual(r.status, 0, r.desc);
    assert.match(r.stderr, /\.env/, r.desc);
    assert.match(r.stderr, /chmod go-w/, r.desc);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

ctx.test('a non-loopback CHAT2SBX_HOST is refused, saying why', () => {
  const dir = tmpDir();
  try {
    const r = runIn(dir, ['serve'], { CHAT2SBX_HOST: '0.0.0.0' });
    assert.notEqual(r.status, 0, r.desc);
    assert.match(r.stderr, /CHAT2SBX_HOST '0\.0\.0\.0' is not a loopback address/, r.desc);
    assert.match(r.stderr, /for this machine's clients only/, r.desc);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

ctx.test('serve refuses to start inside a direct-mode workspace (a sandbox could plant its .env)', () => {
  const dir = tmpDir();
  try {
    // The workspace must lie below the allowed roots (childEnv: HOME/repositories).
    const proj = path.join(dir, 'home', 'repositories', 'proj');
    fs.mkdirSync(proj, { recursive: true });
    const add = runIn(dir, ['workspace', 'add', proj, '--mode', 'direct']);
    assert.equal(add.status, 0, add.desc);
    const home = path.join(dir, 'home');
    const r = spawnSync(BIN, ['serve'], {
      cwd: proj,
      env: childEnv({}, home, path.join(dir, 'data'), ctx.srv.port + 1),
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.notEqual(r.status, 0, r.stderr);
    assert.match(r.stderr, /working directory .* direct-mode workspace 'ws_[a-z2-7]+'/, r.stderr);
    assert.match(r.stderr, /start chat2sbx serve from another directory/, r.stderr);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

ctx.test('bad limits get precise messages and create nothing', async () => {
  const tools = await ctx.tools();
  const cases = [
    [{ cpus: '-1' }, /must be greater than 0/, /not a number/],
    [{ pids_limit: 0 }, /16\.\.\d+/, /2147483647/],
    [{ pids_limit: -5 }, /16\.\.\d+/, /2147483647/],
    [{ memory: '1.5' }, /1536m/, null],
  ];
  for (const [args, want, never] of cases) {
    const r = await tools.call('sandbox_create', args);
    assert.equal(r.isError, true, `${JSON.stringify(args)}: ${JSON.stringify(r)}`);
    assert.match(resultText(r), want, JSON.stringify(args));
    if (never) assert.doesNotMatch(resultText(r), never, JSON.stringify(args));
  }
  assert.equal(ctx.srv.sandboxIds.size, 0);
});

let sbxA = null;
let sbxB = null;
ctx.onCleanup(async () => {
  const tools = await ctx.tools();
  await tools.destroyQuietly(sbxA);
  await tools.destroyQuietly(sbxB);
});

ctx.test('sandbox_expose: 8 ports per sandbox, CHAT2SBX_MAX_EXPOSURES in all, LIMIT before anything is made', async () => {
  const tools = await ctx.tools();
  sbxA = (await tools.create({})).sandbox_id;
  for (let p = 8001; p <= 8008; p++) {
    const x = await tools.ok('sandbox_expose', { sandbox_id: sbxA, port: p });
    assert.equal(x.created, true);
  }
  const before = (await dockerRequest('GET', '/containers/json?all=1')).body.length;
  let r = await tools.call('sandbox_expose', { sandbox_id: sbxA, port: 8009 });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.match(resultText(r), /already exposes 8 ports, the most one sandbox may expose \(8\)/);
  assert.match(resultText(r), /destroy the sandbox/);
  assert.equal((await dockerRequest('GET', '/containers/json?all=1')).body.length, before, 'no forwarder made');
  // An exposed port is answered again: it is not a new exposure.
  const again = await tools.ok('sandbox_expose', { sandbox_id: sbxA, port: 8001 });
  assert.equal(again.created, false);

  sbxB = (await tools.create({})).sandbox_id;
  await tools.ok('sandbox_expose', { sandbox_id: sbxB, port: 9001 }); // 9 of 9
  r = await tools.call('sandbox_expose', { sandbox_id: sbxB, port: 9002 });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.match(resultText(r), /9 ports are exposed across all sandboxes/);
  assert.match(resultText(r), /CHAT2SBX_MAX_EXPOSURES=9/);

  // Destroying a sandbox frees its ports.
  await tools.ok('sandbox_destroy', { sandbox_id: sbxA }, { timeout: 90_000 });
  sbxA = null;
  const x = await tools.ok('sandbox_expose', { sandbox_id: sbxB, port: 9002 });
  assert.equal(x.created, true);
});

ctx.test('edit on a binary file names the tools, not internal methods', async () => {
  const tools = await ctx.tools();
  assert.ok(sbxB, 'the expose test made sandbox B');
  await tools.ok('bash', { sandbox_id: sbxB, command: "printf 'a\\000b' > /tmp/bin.dat" });
  const r = await tools.call('edit', { sandbox_id: sbxB, path: '/tmp/bin.dat', old_string: 'a', new_string: 'c' });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.match(resultText(r), /binary file/);
  assert.doesNotMatch(resultText(r), /file\.(edit|write)/);
});

ctx.test('CLI: destroying an unknown sandbox points at `chat2sbx sandbox list`', () => {
  const r = spawnSync(BIN, ['sandbox', 'destroy', 'sbx_aaaaaaaaaaaaaaaaaaaa'], {
    cwd: ctx.srv.root,
    env: childEnv({}, path.join(ctx.srv.root, 'home'), ctx.srv.dataRoot, ctx.srv.port),
    encoding: 'utf8',
    timeout: 30_000,
  });
  const out = `${r.stdout}${r.stderr}`;
  assert.notEqual(r.status, 0, out);
  assert.match(out, /chat2sbx sandbox list/, out);
  assert.doesNotMatch(out, /sandbox_list/, out);
});

ctx.test('CLI: status of a service that is down prints no uptime', () => {
  const dir = tmpDir();
  try {
    const r = runIn(dir, ['status'], {}, 60_000);
    assert.match(r.stdout, /SERVICE\s+down/, r.desc);
    assert.doesNotMatch(r.stdout, /up - s/, r.desc);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

ctx.finish();
