// 21: the host edge (issue 12, item 4): serve (root here) installs table
// inet chat2sbx; from a sandbox, host listeners on 0.0.0.0 and on the bridge
// gateway are unreachable, while the engine's DNS and an outbound connection
// to a container this file started still work; sandbox_expose on a
// non-loopback CHAT2SBX_EXPOSE_HOST (an address on a veth pair this file
// makes) answers the host but not another sandbox; a "neighbour" routing to
// 127.0.0.1 of this host is dropped; the doctor's host_services attack fails.
// After serve stops: `setup --uninstall-firewall` removes the table, the same
// attacks then succeed and the doctor fails; `setup --install-firewall` puts
// it back (and is idempotent).
// Traffic goes only to this host's own addresses and to this file's own
// containers: 198.18.0.1 (RFC 2544 benchmark range) lives on a veth pair, and
// 198.51.100.0/30 (TEST-NET-2) is routed to a veth pair into the "outside"
// container, both checked with `ip route get` before any packet is sent.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { BIN, REPO_ROOT, Server, childEnv, dockerInspect, dockerRequest, useServer } from '../lib/server.mjs';

const EXPOSE_ADDR = '198.18.0.1';
const OUT_HOST = '198.51.100.1';
const OUT_PEER = '198.51.100.2';
const OUT_PORT = 9000;
const IF_X = 'e2e-fw-x0'; // never starting with c2s-: the firewall would take it for a sandbox bridge
const IF_O = 'e2e-fw-o0';
const IF_O_PEER = 'e2e-fw-o1';
const OUTSIDE = `e2e-fw-outside-${process.pid}`;
const IMAGE =
  process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${fs.readFileSync(path.join(REPO_ROOT, 'VERSION'), 'utf8').trim()}`;

function run(cmd, args, { check = true } = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', timeout: 30_000 });
  if (check && r.status !== 0)
    throw new Error(`${cmd} ${args.join(' ')} -> exit ${r.status}: ${r.stderr || r.stdout || r.error?.message}`);
  return r;
}

function removeLinks() {
  for (const l of [IF_X, IF_O]) run('ip', ['link', 'del', l], { check: false });
}

// The expose address on a veth pair of our own (no dummy driver in this kernel).
before(() => {
  removeLinks(); // a leftover of a killed run
  assert.doesNotMatch(run('ip', ['-4', '-o', 'addr']).stdout, new RegExp(`inet ${EXPOSE_ADDR.replace(/\./g, '\\.')}/`),
    `${EXPOSE_ADDR} is already an address of this machine`);
  run('ip', ['link', 'add', IF_X, 'type', 'veth', 'peer', 'name', `${IF_X.slice(0, -1)}1`]);
  run('ip', ['addr', 'add', `${EXPOSE_ADDR}/32`, 'dev', IF_X]);
  run('ip', ['link', 'set', IF_X, 'up']);
  assert.match(run('ip', ['route', 'get', EXPOSE_ADDR]).stdout, /^local /, 'the expose address is local');
});

const ctx = useServer({ env: { CHAT2SBX_EXPOSE_HOST: EXPOSE_ADDR } });

after(async () => {
  await dockerRequest('DELETE', `/containers/${OUTSIDE}?force=1`).catch(() => {});
  removeLinks();
});

// ---- helpers ----

function cli(args, { root = ctx.srv.root, dataRoot = ctx.srv.dataRoot, env = {} } = {}) {
  const home = path.join(root, 'home');
  fs.mkdirSync(home, { recursive: true });
  const r = spawnSync(BIN, args, {
    cwd: root,
    env: childEnv(env, home, dataRoot, ctx.srv.port || 1),
    encoding: 'utf8',
    timeout: 180_000,
  });
  r.desc = `chat2sbx ${args.join(' ')} -> exit ${r.status}; stdout: ${String(r.stdout).slice(0, 4000)}; stderr: ${String(r.stderr).slice(-2000)}`;
  return r;
}

// The firewall part of `status --json` (its exit status is 6 while serve is down).
function firewallStatus(opts) {
  const r = cli(['status', '--json'], opts);
  try {
    return JSON.parse(r.stdout).firewall;
  } catch (e) {
    assert.fail(`status --json: ${e.message}: ${r.desc}`);
  }
}

async function sh(tools, sandboxId, command) {
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
  assert.equal(r.status, 'exited', `${command}: ${JSON.stringify(r)}`);
  return r.output;
}

// From inside a sandbox, every target at once, each bounded: "open A:P" lines.
function connectCommand(targets) {
  return (
    targets.map(([a, p]) => `(timeout 3 bash -c 'exec 3<>/dev/tcp/${a}/${p}' 2>/dev/null && echo 'open ${a}:${p}') &`).join('\n') +
    '\nwait; echo done'
  );
}

// A TCP listener on host:0 that counts what reaches it.
async function listener(host) {
  const l = { count: 0, peers: [] };
  l.server = net.createServer((s) => {
    l.count++;
    l.peers.push(s.remoteAddress);
    s.destroy();
  });
  await new Promise((resolve, reject) => {
    l.server.once('error', reject);
    l.server.listen(0, host, resolve);
  });
  l.port = l.server.address().port;
  l.close = () => new Promise((r) => l.server.close(r));
  return l;
}

function hostAddresses() {
  return Object.values(os.networkInterfaces())
    .flat()
    .filter((a) => a.family === 'IPv4' && !a.address.startsWith('127.'))
    .map((a) => a.address);
}

function getUrl(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 5000, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
  });
}

async function waitFor(what, cond, maxMs = 30_000) {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const v = await cond().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${maxMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

// The "outside" container: no engine network, a veth pair of ours into its
// namespace (198.51.100.0/30), a web server on OUT_PEER:OUT_PORT. Made once.
let outsidePid = 0;
async function outside() {
  if (outsidePid) return outsidePid;
  const created = await dockerRequest('POST', `/containers/create?name=${OUTSIDE}`, {
    Image: IMAGE,
    Entrypoint: ['/bin/bash', '-c'],
    Cmd: [`mkdir -p /srv && echo outside-ok > /srv/ok.txt && cd /srv && exec python3 -m http.server ${OUT_PORT} --bind 0.0.0.0`],
    Labels: { 'org.chat2sbx.e2e': '21' },
    HostConfig: { NetworkMode: 'none' },
  });
  assert.equal(created.status, 201, JSON.stringify(created.body));
  await dockerRequest('POST', `/containers/${OUTSIDE}/start`);
  const pid = (await dockerInspect(OUTSIDE)).State.Pid;
  assert.ok(pid > 0);
  run('ip', ['link', 'add', IF_O, 'type', 'veth', 'peer', 'name', IF_O_PEER]);
  run('ip', ['link', 'set', IF_O_PEER, 'netns', String(pid)]);
  run('ip', ['addr', 'add', `${OUT_HOST}/30`, 'dev', IF_O]);
  run('ip', ['link', 'set', IF_O, 'up']);
  const inside = (...args) => run('nsenter', ['-t', String(pid), '-n', 'ip', ...args]);
  inside('addr', 'add', `${OUT_PEER}/30`, 'dev', IF_O_PEER);
  inside('link', 'set', IF_O_PEER, 'up');
  inside('route', 'add', 'default', 'via', OUT_HOST);
  assert.match(run('ip', ['route', 'get', OUT_PEER]).stdout, new RegExp(`dev ${IF_O} `), 'routed to our veth only');
  await waitFor('the outside web server answers the host', async () =>
    (await getUrl(`http://${OUT_PEER}:${OUT_PORT}/ok.txt`)).body === 'outside-ok\n');
  outsidePid = pid;
  return pid;
}

// The outside container acting as a neighbour that routes 127.0.0.1 to this
// host: its own loopback address removed, 127.0.0.1 via our veth, and
// route_localnet on both ends (on ours, it is what a host with
// route_localnet set on an interface accepts; the table must drop it).
async function neighbourRoutesLoopback() {
  const pid = await outside();
  const inside = (...args) => run('nsenter', ['-t', String(pid), '-n', ...args], { check: false });
  inside('ip', 'addr', 'del', '127.0.0.1/8', 'dev', 'lo');
  inside('ip', 'route', 'replace', '127.0.0.1/32', 'via', OUT_HOST, 'dev', IF_O_PEER);
  inside('sysctl', '-qw', `net.ipv4.conf.${IF_O_PEER}.route_localnet=1`);
  run('sysctl', ['-qw', `net.ipv4.conf.${IF_O}.route_localnet=1`]);
  return pid;
}

// A connection from the neighbour's namespace (this host's bash, entered
// into the outside container's network namespace).
async function neighbourReaches(port) {
  const pid = await outside();
  const r = run('nsenter', ['-t', String(pid), '-n', 'timeout', '3', 'bash', '-c', `exec 3<>/dev/tcp/127.0.0.1/${port}`],
    { check: false });
  return r.status === 0;
}

// ---- with serve running ----

ctx.test('serve installs the firewall at start; status and --print-firewall show it', async () => {
  const fw = firewallStatus();
  assert.equal(fw.enabled, true, JSON.stringify(fw));
  assert.equal(fw.state, 'installed', JSON.stringify(fw));
  assert.match(fw.detail, /table inet chat2sbx drops what the bridges c2s-\*/);
  assert.match(ctx.srv.stderrTail(200), /firewall: (installed|in place): table inet chat2sbx/);
  const p = cli(['setup', '--print-firewall']);
  assert.equal(p.status, 0, p.desc);
  assert.match(p.stdout, /table inet chat2sbx \{/);
  assert.match(p.stdout, /type filter hook prerouting priority dstnat - 10; policy accept;/);
  assert.match(p.stdout, /iifname "c2s-\*" jump from_sandbox/);
});

ctx.test('host listeners on 0.0.0.0 and on the bridge gateway are unreachable from a sandbox', async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const info = await dockerInspect(sbx.sandbox_id);
  const gateway = info.NetworkSettings.Networks.chat2sbx?.Gateway;
  assert.ok(gateway, JSON.stringify(info.NetworkSettings.Networks));
  // The sandbox's bridge is one the firewall names.
  const netInfo = (await dockerRequest('GET', '/networks/chat2sbx')).body;
  const bridge = netInfo.Options?.['com.docker.network.bridge.name'] || `br-${netInfo.Id.slice(0, 12)}`;
  assert.ok(bridge.startsWith('c2s-') || firewallStatus().detail.includes(bridge), `bridge ${bridge} is not covered`);

  const any = await listener('0.0.0.0');
  const gw = await listener(gateway);
  t.after(() => any.close());
  t.after(() => gw.close());
  // Control: the listeners answer the host itself.
  const control = await new Promise((resolve, reject) => {
    const c = net.connect({ host: gateway, port: gw.port }, () => resolve(c));
    c.once('error', reject);
  });
  control.destroy();
  await waitFor('the control connection is counted', async () => gw.count === 1);
  gw.count = 0;

  const targets = [[gateway, gw.port], ...[gateway, ...hostAddresses()].map((a) => [a, any.port])];
  const out = await sh(tools, sbx.sandbox_id, connectCommand(targets));
  assert.match(out, /done/);
  assert.doesNotMatch(out, /open /, `a host listener was reached from the sandbox: ${out}`);
  assert.equal(any.count + gw.count, 0, `connections reached the host from ${[...any.peers, ...gw.peers]}`);
});

ctx.test("the engine's DNS and an outbound connection to a container this file started still work", async (t) => {
  const tools = await ctx.tools();
  await outside();
  const sbx = await tools.create({});
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const ip = (await dockerInspect(sbx.sandbox_id)).NetworkSettings.Networks.chat2sbx.IPAddress;
  const dns = await sh(tools, sbx.sandbox_id, `grep ^nameserver /etc/resolv.conf; getent hosts ${sbx.sandbox_id}`);
  assert.match(dns, /nameserver 127\.0\.0\.11/, 'the embedded DNS');
  assert.match(dns, new RegExp(`^${ip.replace(/\./g, '\\.')}\\s+${sbx.sandbox_id}`, 'm'), dns);
  const got = await sh(tools, sbx.sandbox_id,
    `python3 -c "import urllib.request;print(urllib.request.urlopen('http://${OUT_PEER}:${OUT_PORT}/ok.txt',timeout=5).read().decode())"`);
  assert.match(got, /^outside-ok$/m, `routed and NATed to the outside container: ${got}`);
});

ctx.test('an address of the host routed to 127.0.0.1 by a neighbour is dropped (loopback rule)', async (t) => {
  await neighbourRoutesLoopback();
  const lo = await listener('127.0.0.1');
  t.after(() => lo.close());
  assert.equal(await neighbourReaches(lo.port), false, 'the neighbour reached 127.0.0.1 of this host');
  assert.equal(lo.count, 0);
});

ctx.test('sandbox_expose on a non-loopback address answers the host, not another sandbox', async (t) => {
  const tools = await ctx.tools();
  await outside();
  const a = await tools.create({});
  t.after(() => tools.destroyQuietly(a.sandbox_id));
  const b = await tools.create({});
  t.after(() => tools.destroyQuietly(b.sandbox_id));
  const server = await tools.ok('bash', {
    sandbox_id: a.sandbox_id,
    command: 'echo a-secret > s.txt; exec python3 -m http.server 8000 --bind 0.0.0.0',
    yield_time_ms: 1000,
  });
  assert.equal(server.status, 'running', JSON.stringify(server));
  const x = await tools.ok('sandbox_expose', { sandbox_id: a.sandbox_id, port: 8000 });
  assert.equal(x.host, EXPOSE_ADDR);
  const page = await waitFor('the exposed URL answers the host', async () => {
    const r = await getUrl(`${x.url}s.txt`);
    return r.status === 200 ? r : null;
  });
  assert.equal(page.body, 'a-secret\n');

  // The expose network's bridge carries the prefix; its forwarder resolves by name.
  const netName = `chat2sbx-expose-${a.sandbox_id}`;
  const exposeNet = (await dockerRequest('GET', `/networks/${netName}`)).body;
  assert.equal(exposeNet.Options?.['com.docker.network.bridge.name'], `c2s-x${a.sandbox_id.slice(-10)}`);
  const fwdName = `${a.sandbox_id}-expose-8000`;
  const fwd = await dockerInspect(fwdName);
  const fwdIp = fwd.NetworkSettings.Networks[netName].IPAddress;
  const aIp = (await dockerInspect(a.sandbox_id)).NetworkSettings.Networks[netName].IPAddress;
  const dns = await sh(tools, a.sandbox_id, `getent hosts ${fwdName}`);
  assert.match(dns, new RegExp(`^${fwdIp.replace(/\./g, '\\.')}\\s`), `the engine's DNS on the expose network: ${dns}`);

  // B: not through the host address, not to the forwarder or A directly;
  // B's own network works (the outside container answers it).
  const out = await sh(tools, b.sandbox_id,
    connectCommand([[EXPOSE_ADDR, x.host_port], [fwdIp, 8000], [aIp, 8000], [OUT_PEER, OUT_PORT]]));
  assert.match(out, new RegExp(`open ${OUT_PEER}:${OUT_PORT}`), `control: B reaches the outside container: ${out}`);
  assert.doesNotMatch(out, new RegExp(`open ${EXPOSE_ADDR.replace(/\./g, '\\.')}:`), `B reached A's exposed port: ${out}`);
  assert.doesNotMatch(out, new RegExp(`open (${fwdIp}|${aIp}):8000`), `B reached A's network directly: ${out}`);
  await tools.ok('bash_stop', { sandbox_id: a.sandbox_id, session_id: server.session_id });
});

ctx.test("doctor's host_services attack fails while the firewall is in place, and says what it proved", () => {
  const r = cli(['doctor', '--json']);
  assert.equal(r.status, 0, r.desc);
  const check = JSON.parse(r.stdout).checks.find((c) => c.name === 'host_services');
  assert.equal(check?.result, 'passed', JSON.stringify(check));
  assert.match(check.attack, /listener the doctor opened on 0\.0\.0\.0/);
  assert.match(check.detail, /no connection reached a listener on 0\.0\.0\.0:\d+ of the host through the gateway \d+\.\d+\.\d+\.\d+/);
  assert.match(check.detail, /table inet chat2sbx in place/);
});

ctx.finish();

// ---- serve stopped: removing the table, and putting it back ----

test('uninstall removes the table: the attacks succeed and doctor fails; install puts it back', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-fw-'));
  const opts = { root, dataRoot: path.join(root, 'data') };
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  // Whatever happens below, the machine keeps the table serve left.
  t.after(() => cli(['setup', '--install-firewall'], opts));
  const lo = await listener('127.0.0.1');
  t.after(() => lo.close());
  await neighbourRoutesLoopback();
  // This file's serve stopped at ctx.finish() above: no maintenance pass
  // puts the table back while the doctor below looks (another root serve on
  // the machine would, within a minute).
  const u = cli(['setup', '--uninstall-firewall'], opts);
  assert.equal(u.status, 0, u.desc);
  assert.match(u.stdout, /changed: removed table inet chat2sbx/);
  assert.equal(firewallStatus(opts).state, 'missing');
  const again = cli(['setup', '--uninstall-firewall'], opts);
  assert.match(again.stdout, /ok: there is no table inet chat2sbx \(nothing to do\)/, again.desc);

  // The attacks this file made now succeed: the tests above could fail.
  assert.equal(await neighbourReaches(lo.port), true, 'without the table the neighbour reaches 127.0.0.1');
  const d = cli(['doctor', '--json'], opts);
  assert.equal(d.status, 1, d.desc);
  const check = JSON.parse(d.stdout).checks.find((c) => c.name === 'host_services');
  assert.equal(check?.result, 'failed', JSON.stringify(check));
  assert.match(check.detail, /the probe connected to the host's listener on 0\.0\.0\.0:\d+ through /);
  assert.match(check.detail, /not in place: missing/);

  const i = cli(['setup', '--install-firewall'], opts);
  assert.equal(i.status, 0, i.desc);
  assert.match(i.stdout, /changed: installed: table inet chat2sbx/);
  assert.equal(firewallStatus(opts).state, 'installed');
  const i2 = cli(['setup', '--install-firewall'], opts);
  assert.match(i2.stdout, /ok: in place: table inet chat2sbx/, `a second install changes nothing: ${i2.desc}`);
  lo.count = 0;
  assert.equal(await neighbourReaches(lo.port), false, 'the loopback rule is back');
});

test('CHAT2SBX_FIREWALL=0: serve and status warn, and the table is left as it is', async (t) => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-fw-off-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const off = { CHAT2SBX_FIREWALL: '0' };
  const fw = firewallStatus({ root, dataRoot: path.join(root, 'data'), env: off });
  assert.equal(fw.enabled, false, JSON.stringify(fw));
  assert.equal(fw.state, 'installed', 'the table serve left is still there (off never removes it)');
  assert.match(fw.warning, /CHAT2SBX_FIREWALL=0: chat2sbx does not keep sandboxes off this host's services/);
  const table = cli(['status'], { root, dataRoot: path.join(root, 'data'), env: off });
  assert.match(table.stdout, /^FIREWALL +disabled .*WARNING: CHAT2SBX_FIREWALL=0/m, table.desc);

  const srv = new Server();
  t.after(() => srv.removeRoot());
  await srv.start({ env: off });
  const st = await srv.stop();
  assert.equal(st.code === 0 || st.signal === 'SIGTERM', true, JSON.stringify(st));
  assert.match(srv.stderrTail(200), /warn +firewall: CHAT2SBX_FIREWALL=0: chat2sbx does not keep sandboxes off/);
  assert.doesNotMatch(srv.stderrTail(200), /firewall: (installed|in place)/);
});
