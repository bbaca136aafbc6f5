// 13: tunnel supervision (issue 7, DESIGN.md Tunnel). serve starts a stand-in
// tunnel-client (e2e/tunnel-standin/tunnel-client, which reads the real
// client's flags and environment) once its listener is up; the stand-in's
// startup probe (initialize at 2025-06-18) reaches us and its /readyz turns
// 200; a killed or crashing client is restarted with backoff; the runtime key
// is read by the client from its file and appears in no process's argv or
// environment; bad configurations make serve refuse to start naming the file;
// SIGTERM answers a running bash call, stops the client and leaves the
// sandbox running for the next start. Nothing here leaves loopback.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';

import { CREATE_TIMEOUT, REPO_ROOT, Server, dockerInspect, useServer } from '../lib/server.mjs';

const STANDIN = path.join(REPO_ROOT, 'e2e', 'tunnel-standin', 'tunnel-client');
const TUNNEL_ID = 'tunnel_0123456789abcdef0123456789abcdef';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// A private directory with a copy of the stand-in (its test controls live
// next to it, in tunnel-client.json) and the secrets. Returns the paths.
function makeTunnelDir({ key = `sk-standin-${crypto.randomBytes(16).toString('hex')}`, keyMode = 0o600 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-tunnel-'));
  const client = path.join(dir, 'tunnel-client');
  fs.copyFileSync(STANDIN, client);
  fs.chmodSync(client, 0o755);
  const secrets = path.join(dir, 'secrets');
  fs.mkdirSync(secrets, { mode: 0o700 });
  fs.writeFileSync(path.join(secrets, 'tunnel-id'), `${TUNNEL_ID}\n`, { mode: 0o600 });
  fs.writeFileSync(path.join(secrets, 'key'), key, { mode: keyMode });
  fs.chmodSync(path.join(secrets, 'key'), keyMode);
  const record = path.join(dir, 'record.jsonl');
  const controlFile = `${client}.json`;
  fs.writeFileSync(controlFile, JSON.stringify({ record }));
  return {
    dir,
    client,
    secrets,
    key,
    record,
    controlFile,
    env: { CHAT2SBX_ENABLE_TUNNEL: '1', CHAT2SBX_TUNNEL_CLIENT: client, CHAT2SBX_SECRET_DIR: secrets },
  };
}

const tun = makeTunnelDir();
const ctx = useServer({ env: tun.env });
const dirs = [tun.dir];
after(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

// ---- helpers of this file ----

async function waitFor(what, fn, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

function tunnelJson(srv = ctx.srv) {
  try {
    return JSON.parse(fs.readFileSync(path.join(srv.dataRoot, 'state', 'tunnel.json'), 'utf8'));
  } catch {
    return null;
  }
}

function records() {
  try {
    return fs
      .readFileSync(tun.record, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
  } catch {
    return [];
  }
}

async function httpStatus(url) {
  try {
    const r = await fetch(url, { signal: AbortSignal.timeout(3000) });
    return r.status;
  } catch {
    return 0;
  }
}

// A process that exists and is not a zombie waiting for its reaper.
function processAlive(pid) {
  try {
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    return !/^State:\s+Z/m.test(status);
  } catch {
    return false;
  }
}

// Every live process whose command line mentions needle.
function processesMentioning(needle) {
  const found = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const cmd = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8');
      if (cmd.includes(needle) && processAlive(name)) found.push(`${name}: ${cmd.replace(/\0/g, ' ')}`);
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

// Replaces the stand-in's test controls atomically (a client starting now
// reads the old or the new file, never half of one).
function setControl(obj) {
  fs.writeFileSync(`${tun.controlFile}.tmp`, JSON.stringify(obj));
  fs.renameSync(`${tun.controlFile}.tmp`, tun.controlFile);
}

function serveLog() {
  return fs.readFileSync(ctx.srv.stderrPath, 'utf8');
}

// ---- scenarios ----

ctx.test('serve starts the tunnel client after its listener, and /readyz becomes 200', async () => {
  const st = await waitFor('tunnel.json to say running', () => tunnelJson()?.state === 'running' && tunnelJson());
  assert.ok(Number.isInteger(st.pid) && st.pid > 0, JSON.stringify(st));
  assert.equal(st.restarts, 0);
  assert.match(st.health_url, /^http:\/\/127\.0\.0\.1:\d+$/);
  // "running" means the process runs; its health server comes up soon after.
  await waitFor('/healthz 200', async () => (await httpStatus(`${st.health_url}/healthz`)) === 200);
  await waitFor('/readyz 200 (the stand-in probed our endpoint)', async () => (await httpStatus(`${st.health_url}/readyz`)) === 200);
  const mode = fs.statSync(path.join(ctx.srv.dataRoot, 'state', 'tunnel.json')).mode & 0o777;
  assert.equal(mode, 0o600);

  const log = serveLog();
  const listening = log.indexOf('serving MCP on');
  const started = log.indexOf('started tunnel-client');
  assert.ok(listening >= 0 && started > listening, 'the tunnel client started before the listener was up');
  await waitFor('the probe line in the log', () =>
    /tunnel: tunnel-client: startup probe ok: chat2sbx at protocol 2025-06-18/.test(serveLog()),
  );
});

ctx.test('the client gets run, the key as a file: reference, the tunnel id, our Unix socket and a minimal environment', async () => {
  const rec = await waitFor('the stand-in record', () => records()[0]);
  assert.deepEqual(rec.argv.slice(0, 1), ['run']);
  assert.ok(rec.argv.includes(`--control-plane.api-key=file:${tun.secrets}/key`), JSON.stringify(rec.argv));
  const health = rec.argv.find((a) => a.startsWith('--health.listen-addr='));
  assert.match(health, /^--health\.listen-addr=127\.0\.0\.1:\d+$/);
  assert.equal(`http://${health.split('=')[1]}`, rec.health_url); // the stand-in bound what it was given
  assert.equal(rec.key_source, 'file');
  assert.equal(rec.key_read, true);
  assert.equal(rec.tunnel_id, TUNNEL_ID);
  // The tunnel dials serve's Unix socket (issue 12): no token, this user only.
  assert.ok(
    rec.argv.includes(`--mcp.server-url=channel=main,url=http://localhost/mcp,unix-socket=${ctx.srv.socketPath}`),
    JSON.stringify(rec.argv),
  );
  assert.equal(rec.mcp_server_url, 'http://localhost/mcp');
  assert.equal(rec.mcp_unix_socket, ctx.srv.socketPath);
  const allowed = new Set(['PATH', 'HOME', 'LANG', 'CONTROL_PLANE_TUNNEL_ID']);
  for (const name of rec.env_names) assert.ok(allowed.has(name), `unexpected variable ${name} in the client's environment`);
  assert.ok(!rec.env_names.some((n) => n.startsWith('CHAT2SBX_')));
  assert.ok(!rec.env_names.includes('CONTROL_PLANE_API_KEY') && !rec.env_names.includes('OPENAI_API_KEY'));
});

ctx.test("the client's output lines appear in serve's log with the prefix", async () => {
  await waitFor('a prefixed line', () => /tunnel: tunnel-client: health server on http:\/\/127\.0\.0\.1:\d+/.test(serveLog()));
});

ctx.test('the key appears in no /proc/*/cmdline or /proc/*/environ', async () => {
  await waitFor('the client running', () => tunnelJson()?.state === 'running');
  const hits = [];
  let scanned = 0;
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    for (const file of ['cmdline', 'environ']) {
      let data;
      try {
        data = fs.readFileSync(`/proc/${name}/${file}`);
      } catch {
        continue; /* exited, or not ours to read */
      }
      scanned++;
      if (data.includes(tun.key)) hits.push(`/proc/${name}/${file}`);
    }
  }
  assert.ok(scanned > 10, `scanned only ${scanned} files`);
  assert.ok(processAlive(tunnelJson().pid), 'the client was not running during the scan');
  assert.deepEqual(hits, []);
});

ctx.test('a tools/call forwarded by the tunnel without a session id is answered', async () => {
  const rec = records().at(-1);
  const res = await fetch(`${rec.control_url}/forward`, {
    method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'sandbox_list', arguments: {} } }),
    signal: AbortSignal.timeout(30_000),
  });
  assert.equal(res.status, 200);
  const text = await res.text();
  const json = text.startsWith('{') ? JSON.parse(text) : JSON.parse(text.split('\n').find((l) => l.startsWith('data:')).slice(5));
  assert.equal(json.id, 7);
  assert.ok(json.result && !json.result.isError, text.slice(0, 300));
});

ctx.test('a killed client is restarted with growing backoff; a crashing one too', async () => {
  // Each child is killed only once it is up (its record written), so every
  // start is seen to really run the client.
  const up = (s) => s?.state === 'running' && records().some((r) => r.pid === s.pid);
  const first = await waitFor('running', () => up(tunnelJson()) && tunnelJson());
  process.kill(first.pid, 'SIGKILL');
  const second = await waitFor('restart 1', () => {
    const s = tunnelJson();
    return up(s) && s.restarts === 1 && s;
  });
  assert.notEqual(second.pid, first.pid);
  assert.match(second.last_exit, /signal 9/);
  assert.notEqual(second.health_url, null);

  process.kill(second.pid, 'SIGKILL');
  const third = await waitFor('restart 2', () => {
    const s = tunnelJson();
    return up(s) && s.restarts === 2 && s;
  });
  assert.ok(![first.pid, second.pid].includes(third.pid));
  // The delays the supervisor chose double: 1 s, then 2 s.
  const log = serveLog();
  assert.match(log, /restarting tunnel-client in 1000 ms \(restart 1\)/);
  assert.match(log, /restarting tunnel-client in 2000 ms \(restart 2\)/);

  // A client that exits by itself (status 3) is restarted as well.
  setControl({ record: tun.record, crash_after_ms: 300 });
  process.kill(third.pid, 'SIGKILL');
  const crashed = await waitFor('a crash', () => /exit status 3/.test(tunnelJson()?.last_exit || '') && tunnelJson(), 30_000);
  assert.ok(crashed.restarts >= 3);
  assert.match(serveLog(), /tunnel-client: crashing \(test control\)/);
  setControl({ record: tun.record });
  const stable = await waitFor(
    'a stable client again',
    async () => {
      const s = tunnelJson();
      return s?.state === 'running' && s.pid && (await httpStatus(`${s.health_url}/readyz`)) === 200 && s;
    },
    60_000,
  );
  assert.ok(stable.restarts > crashed.restarts);
  assert.equal(records().length, stable.restarts + 1);
});

ctx.test('SIGTERM during a running bash call answers it, stops the client, keeps the sandbox', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  const clientPid = (await waitFor('running', () => tunnelJson()?.state === 'running' && tunnelJson())).pid;
  const call = tools.ok('bash', {
    sandbox_id: sbx.sandbox_id,
    command: 'touch started.marker; sleep 3; echo finished',
    yield_time_ms: 20_000,
  });
  await waitFor('the command running in the sandbox', async () => {
    const r = await tools.call('read', { sandbox_id: sbx.sandbox_id, path: 'started.marker' });
    return !r.isError;
  });
  ctx.srv.proc.kill('SIGTERM');
  const res = await call;
  assert.equal(res.status, 'exited', JSON.stringify(res));
  assert.match(res.output, /finished/);
  const exit = await ctx.srv.exited;
  assert.equal(exit.code, 0, `serve exited with ${JSON.stringify(exit)}`);
  assert.ok(!processAlive(clientPid), `the tunnel client ${clientPid} outlived serve`);
  assert.deepEqual(processesMentioning(tun.client), []);
  assert.equal(tunnelJson().state, 'stopped');
  assert.match(serveLog(), /tunnel-client: received SIGTERM, shutting down/);
  const c = await dockerInspect(sbx.sandbox_id);
  assert.equal(c?.State?.Running, true, 'the sandbox did not keep running');

  // The next start re-attaches it; the fixture then stops serve as usual.
  for (const c of ctx.srv.clients) c.close().catch(() => {});
  ctx.srv.clients.clear();
  await ctx.srv.start({ env: tun.env });
  ctx.generation++;
  const again = await ctx.tools();
  const got = await again.ok('sandbox_get', { sandbox_id: sbx.sandbox_id });
  assert.equal(got.state ?? got.status, 'running', JSON.stringify(got));
  await again.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  await waitFor('the client running again', () => tunnelJson()?.state === 'running');
});

ctx.test('SIGHUP changes nothing but says AGENTS.md is read at each call', async () => {
  const before = tunnelJson();
  ctx.srv.proc.kill('SIGHUP');
  await waitFor('the SIGHUP log line', () => /SIGHUP: .*AGENTS\.md' is read at every sandbox_create/.test(serveLog()));
  assert.ok(await ctx.srv.healthy());
  assert.equal(tunnelJson().pid, before.pid);
});

// ---- stopping: a client that ignores SIGTERM, and a serve killed outright ----

// Starts a serve of its own over a fresh tunnel directory with the given
// stand-in controls; resolves once its client runs.
async function ownServe(controls) {
  const t = makeTunnelDir();
  dirs.push(t.dir);
  fs.writeFileSync(t.controlFile, JSON.stringify({ record: t.record, ...controls }));
  const srv = new Server();
  await srv.start({ env: t.env });
  const st = await waitFor('its client running', () => tunnelJson(srv)?.state === 'running' && tunnelJson(srv));
  await waitFor('its client up', () => fs.existsSync(t.record));
  return { t, srv, pid: st.pid };
}

test('a client that ignores SIGTERM is killed when serve stops', async () => {
  const { t, srv, pid } = await ownServe({ ignore_sigterm: true });
  try {
    const st = await srv.stop({ graceMs: 20_000 });
    assert.equal(st.killed, false, 'serve itself had to be killed');
    assert.equal(st.code, 0);
    assert.ok(!processAlive(pid), `the tunnel client ${pid} survived`);
    assert.deepEqual(processesMentioning(t.client), []);
    const log = fs.readFileSync(srv.stderrPath, 'utf8');
    assert.match(log, /tunnel-client: ignoring SIGTERM/);
    assert.match(log, /ignored SIGTERM for 5000 ms; killing it/);
    assert.match(tunnelJson(srv).last_exit, /signal 9/);
  } finally {
    await srv.removeRoot();
  }
});

test('no orphan: the client ends when serve is killed with SIGKILL', async () => {
  const { t, srv, pid } = await ownServe({});
  try {
    srv.proc.kill('SIGKILL');
    await srv.exited;
    await waitFor(`the tunnel client ${pid} to end`, () => !processAlive(pid), 10_000);
    assert.deepEqual(processesMentioning(t.client), []);
  } finally {
    await srv.removeRoot();
  }
});

// ---- refused configurations: each its own serve, which must not start ----

async function refused(mutate) {
  const t = makeTunnelDir();
  dirs.push(t.dir);
  const expectFile = mutate(t);
  const srv = new Server();
  let error = null;
  try {
    await srv.start({ env: t.env });
  } catch (e) {
    error = e;
  }
  try {
    if (!error) {
      await srv.stop();
      assert.fail(`serve started although ${expectFile} is wrong`);
    }
    await srv.exited;
    assert.notEqual(srv.exit.code, 0);
    const log = fs.readFileSync(srv.stderrPath, 'utf8');
    assert.ok(log.includes(expectFile), `the refusal does not name ${expectFile}:\n${log}`);
    assert.ok(!log.includes(t.key), 'the refusal printed the key');
    assert.deepEqual(processesMentioning(t.client), []);
    return log;
  } finally {
    await srv.removeRoot();
  }
}

test('refused: the client is missing', async () => {
  const log = await refused((t) => {
    fs.rmSync(t.client);
    return t.client;
  });
  assert.match(log, /does not exist/);
});

test('refused: the client is not executable', async () => {
  const log = await refused((t) => {
    fs.chmodSync(t.client, 0o644);
    return t.client;
  });
  assert.match(log, /chmod \+x/);
});

test('refused: the tunnel id is malformed', async () => {
  const log = await refused((t) => {
    fs.writeFileSync(path.join(t.secrets, 'tunnel-id'), 'tunnel_0123\n');
    return path.join(t.secrets, 'tunnel-id');
  });
  assert.match(log, /32 lowercase hexadecimal/);
});

test('refused: the key file is readable by others (0644)', async () => {
  const log = await refused((t) => {
    fs.chmodSync(path.join(t.secrets, 'key'), 0o644);
    return path.join(t.secrets, 'key');
  });
  assert.match(log, /chmod 600/);
});

ctx.finish();
