// e2e 37: the free-space guard on a one-disk host (issue 23 item 4). One
// small ext4 filesystem (a loop-mounted image) holds both a Docker Engine's
// data root (a second dockerd this test starts, on its own socket, bridge
// and exec root, without touching the host's iptables) and chat2sbx's data
// root, as / holds both on most hosts. serve runs against that engine with a
// watermark a few hundred MiB below the free space, and sandboxes attack it:
// dd into /tmp (the writable layer), a clone's /workspace (also in the
// layer), /etc/hosts (a file the engine mounts from its own directory, not
// in its SizeRw), and tens of thousands of directories (not in SizeRw at
// all). Each is paused below the watermark within about one guard period
// of writing, its next call says why, creates are refused, and it runs on
// by itself, with its work, once the test frees space. Skipped, saying why,
// without root, loop devices, mkfs.ext4 or dockerd. Cleans up everything it
// made (engine, mount, image file, bridge) even when a test fails.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { BIN, CREATE_TIMEOUT, DOCKER_SOCKET, Server, childEnv, dockerInspect, dockerRequest, measure, resultText } from '../lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const MiB = 1024 * 1024;
const IMAGE = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${fs.readFileSync(new URL('../../VERSION', import.meta.url), 'utf8').trim()}`;
const BRIDGE = 'e2edisk0';
const BRIDGE_ADDR = '10.231.77.1/24';
const IMAGE_BYTES = 3 * 1024 * MiB;
const WATERMARK_MIB = 400;

function run(cmd, args, opts = {}) {
  return spawnSync(cmd, args, { encoding: 'utf8', timeout: 120_000, ...opts });
}

// Why this machine cannot run the scenario, or null.
function whyNot() {
  if (process.getuid()) return 'needs root (loop mount, a second dockerd)';
  for (const tool of ['losetup', 'mkfs.ext4', 'dockerd', 'docker', 'ip', 'fallocate']) {
    if (run('sh', ['-c', `command -v ${tool}`]).status !== 0) return `${tool} is not installed`;
  }
  const free = run('losetup', ['-f']);
  if (free.status !== 0) return `no loop device is available (losetup -f: ${free.stderr.trim() || free.status})`;
  if (run('ip', ['link', 'show', BRIDGE]).status === 0) return `the link ${BRIDGE} exists already (another run of this test?)`;
  return null;
}
const skip = whyNot();
if (skip) console.log(`e2e 37 skipped: ${skip}`);

const st = { dir: '', mnt: '', sock: '', dockerd: null, bridge: false, mounted: false };
let failed = false;
const srv = new Server();
let tools = null;
let sharedHadDocker0 = false;

const freeBytes = () => fs.statfsSync(st.mnt).bavail * fs.statfsSync(st.mnt).bsize;
const freeMiB = () => Math.floor(freeBytes() / MiB);
const inspect = (id) => dockerInspect(id, st.sock);

async function waitFor(what, fn, ms = 60_000) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what} (free ${freeMiB()} MiB)`);
    await sleep(200);
  }
}

// The free space of the filesystem set to about mib MiB with a ballast
// file (host side), so a few hundred MiB of writes cross the watermark.
function setFree(mib) {
  const ballast = path.join(st.mnt, 'ballast');
  fs.rmSync(ballast, { force: true });
  const extra = freeBytes() - mib * MiB;
  if (extra > 0) {
    const r = run('fallocate', ['-l', String(extra), ballast]);
    assert.equal(r.status, 0, r.stderr);
  }
}
const freeBallast = () => fs.rmSync(path.join(st.mnt, 'ballast'), { force: true });

async function startEngine() {
  st.dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'c2s-e2e-disk-'));
  st.mnt = path.join(st.dir, 'mnt');
  fs.mkdirSync(st.mnt);
  const img = path.join(st.dir, 'disk.img');
  fs.writeFileSync(img, '');
  fs.truncateSync(img, IMAGE_BYTES);
  let r = run('mkfs.ext4', ['-q', '-F', '-E', 'lazy_itable_init=1,lazy_journal_init=1', img]);
  assert.equal(r.status, 0, r.stderr);
  r = run('mount', ['-o', 'loop', img, st.mnt]);
  assert.equal(r.status, 0, `mount -o loop: ${r.stderr}`);
  st.mounted = true;
  fs.mkdirSync(path.join(st.mnt, 'engine'));
  fs.mkdirSync(path.join(st.mnt, 'chat2sbx'), { mode: 0o700 });

  // Its own bridge and address, no iptables, no forwarding or masquerade
  // changes: the shared engine's docker0 and rules stay as they are.
  sharedHadDocker0 = run('ip', ['link', 'show', 'docker0']).status === 0;
  for (const args of [['link', 'add', BRIDGE, 'type', 'bridge'], ['addr', 'add', BRIDGE_ADDR, 'dev', BRIDGE], ['link', 'set', BRIDGE, 'up']]) {
    r = run('ip', args);
    assert.equal(r.status, 0, `ip ${args.join(' ')}: ${r.stderr}`);
    st.bridge = true;
  }
  st.sock = path.join(st.dir, 'docker.sock');
  const exec = path.join(st.dir, 'exec');
  const config = path.join(st.dir, 'daemon.json');
  fs.writeFileSync(config, '{}\n');
  const log = fs.openSync(path.join(st.dir, 'dockerd.log'), 'a');
  st.dockerd = spawn(
    'dockerd',
    [
      '--config-file', config,
      '--data-root', path.join(st.mnt, 'engine'),
      '--exec-root', exec,
      '--pidfile', path.join(st.dir, 'dockerd.pid'),
      '-H', `unix://${st.sock}`,
      '--bridge', BRIDGE,
      '--iptables=false', '--ip-forward=false', '--ip-masq=false',
      '--containerd-namespace', 'c2s-e2e-disk', '--containerd-plugins-namespace', 'c2s-e2e-disk-plugins',
    ],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  st.dockerdExit = new Promise((res) => st.dockerd.once('exit', res));
  await waitFor('the test engine to answer', async () => {
    if (st.dockerd.exitCode !== null) throw new Error(`dockerd exited: ${fs.readFileSync(path.join(st.dir, 'dockerd.log'), 'utf8').slice(-2000)}`);
    try {
      return (await dockerRequest('GET', '/_ping', undefined, st.sock)).status === 200;
    } catch {
      return false;
    }
  }, 60_000);
  const t0 = Date.now();
  r = run('bash', ['-o', 'pipefail', '-c', `docker save ${IMAGE} | docker -H unix://${st.sock} load`], { timeout: 300_000 });
  assert.equal(r.status, 0, `loading ${IMAGE} into the test engine: ${r.stderr}`);
  console.log(`e2e 37: test engine ready, ${IMAGE} loaded in ${Date.now() - t0} ms; ${freeMiB()} MiB free`);
}

// Stops what startEngine started, in reverse, whatever state it got to.
async function stopEngine() {
  const exec = path.join(st.dir, 'exec');
  if (st.dockerd && st.dockerd.exitCode === null) {
    st.dockerd.kill('SIGTERM');
    const done = await Promise.race([st.dockerdExit, sleep(30_000).then(() => null)]);
    if (done === null) {
      st.dockerd.kill('SIGKILL');
      await st.dockerdExit;
    }
  }
  // Its containerd and shims (started under our exec root), should any
  // outlive it: by process id, found by that path on their command line.
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    let cmd = '';
    try {
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8');
    } catch {
      continue;
    }
    if (exec && st.dir && cmd.includes(exec)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* gone */
      }
    }
  }
  if (st.mounted) {
    let r;
    for (let i = 0; i < 20; i++) {
      r = run('umount', [st.mnt]);
      if (r.status === 0) break;
      await sleep(500);
    }
    if (r.status !== 0) {
      console.log(`e2e 37 cleanup: umount ${st.mnt}: ${r.stderr}; detaching lazily`);
      run('umount', ['-l', st.mnt]);
    }
    const loops = run('losetup', ['-j', path.join(st.dir, 'disk.img')]).stdout;
    for (const line of loops.split('\n').filter(Boolean)) run('losetup', ['-d', line.split(':')[0]]);
    st.mounted = false;
  }
  if (st.bridge) {
    run('ip', ['link', 'del', BRIDGE]);
    st.bridge = false;
  }
  if (st.dir) await fsp.rm(st.dir, { recursive: true, force: true });
}

before(async () => {
  if (skip) return;
  try {
    await startEngine();
    await srv.start({
      dataRoot: path.join(st.mnt, 'chat2sbx'),
      env: {
        CHAT2SBX_DOCKER_SOCKET: st.sock,
        CHAT2SBX_MIN_FREE_DISK: `${WATERMARK_MIB}m`,
        CHAT2SBX_RUNTIME: 'runc',
        CHAT2SBX_FIREWALL: '0', // the host's table belongs to the shared engine's sandboxes
      },
    });
    tools = srv.tools(await srv.client());
  } catch (e) {
    await srv.stop().catch(() => {});
    await stopEngine();
    throw e;
  }
});

after(async () => {
  if (skip) return;
  const stopped = await srv.stop();
  await stopEngine();
  if (!failed && stopped.wasAlive !== false && !stopped.killed && !process.env.E2E_KEEP) await srv.removeRoot();
  else console.log(`e2e 37: serve's logs kept in ${srv.root}`);
});

function scenario(name, fn) {
  test(name, { skip: skip || false }, async () => {
    try {
      await fn();
    } catch (e) {
      failed = true;
      console.log(`---- serve stderr (last lines) ----\n${srv.stderrTail(40)}`);
      throw e;
    }
  });
}

// Runs command in the sandbox to its end; its output.
async function sh(sandboxId, command) {
  let r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
  let out = r.output ?? '';
  while (r.status === 'running') {
    r = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 10_000 });
    out += r.output ?? '';
  }
  assert.equal(r.exit_code, 0, `${command}: ${out}`);
  return out;
}

// The writer starts near the watermark; it is paused below it, the call
// and a create say why, it resumes once the ballast goes and finishes.
// Returns how far past the watermark free space fell before the pause.
async function pausedAndResumed(sbx, startMiB, command, why) {
  setFree(startMiB);
  const writer = await tools.ok('bash', { sandbox_id: sbx, command, yield_time_ms: 0 });
  assert.equal(writer.status, 'running');
  await waitFor('the writer paused', async () => (await inspect(sbx)).State.Paused);
  const past = WATERMARK_MIB - freeMiB();
  const call = await tools.call('bash', { sandbox_id: sbx, command: 'echo hi' });
  assert.equal(call.isError, true, resultText(call));
  assert.match(
    resultText(call),
    /is paused because the disk holding the data root and the engine's data \('.*'\) has \d+ MiB free, below the 400 MiB minimum \(CHAT2SBX_MIN_FREE_DISK\); /,
  );
  assert.match(resultText(call), why);
  const t0 = Date.now();
  const got = await tools.ok('sandbox_get', { sandbox_id: sbx });
  assert.match(got.paused, why);
  assert.ok(Date.now() - t0 < 3000, `sandbox_get of a paused sandbox took ${Date.now() - t0} ms (no probe waits on it)`);
  const refused = await tools.call('sandbox_create', { network: false }, CREATE_TIMEOUT);
  assert.equal(refused.isError, true);
  assert.match(resultText(refused), /no sandbox is created while the disk holding the data root and the engine's data/);

  freeBallast();
  await waitFor('the writer resumed', async () => !(await inspect(sbx)).State.Paused, 20_000);
  let out = writer.output ?? '';
  for (let r = writer; r.status === 'running'; ) {
    r = await tools.ok('bash_poll', { sandbox_id: sbx, session_id: writer.session_id, yield_time_ms: 10_000 });
    out += r.output ?? '';
  }
  assert.match(out, /finished/, 'the writer ran on after the unpause');
  return past;
}

// 8 MiB every 0.2 s (some 80 MiB a guard period), 480 MiB at most.
const ddLoop = (dir) => `for i in $(seq 1 60); do dd if=/dev/zero of=${dir}/fill.$i bs=1M count=8 status=none; sleep 0.2; done; echo finished`;
const GREW = /it kept writing to that disk/;

scenario('one disk: the guard watches it in both roles', async () => {
  const log = fs.readFileSync(srv.stderrPath, 'utf8');
  assert.match(log, /disk guard: watching the disk of '.*' for the data root and the engine's data \(one disk\)/);
});

let runc = null;
scenario('dd into /tmp (the writable layer) is paused below the watermark and resumed after', async () => {
  runc = (await tools.create({ network: false })).sandbox_id;
  await sh(runc, 'echo kept > /tmp/keep.txt');
  const past = await pausedAndResumed(runc, WATERMARK_MIB + 250, ddLoop('/tmp'), GREW);
  measure({ scenario: '36', what: 'tmp_writer_past_watermark_mib', value: past });
  assert.ok(past < 240, `the writer got ${past} MiB past the watermark (about one guard period allowed)`);
  assert.match(await sh(runc, 'cat /tmp/keep.txt; rm -f /tmp/fill.*'), /kept/);
  const log = fs.readFileSync(srv.stderrPath, 'utf8');
  assert.match(log, new RegExp(`paused sandbox ${runc}: it was writing while the disk holding the data root and the engine's data`));
  assert.match(log, new RegExp(`unpaused sandbox ${runc}: the disk has room again`));
});

scenario('a clone writing to /workspace (its copy is in the layer) is paused and resumed', async () => {
  const repo = path.join(srv.root, 'home', 'repositories', 'proj');
  fs.mkdirSync(repo, { recursive: true });
  const git = (...args) => {
    const r = run('git', ['-c', 'user.name=x', '-c', 'user.email=x@y', '-C', repo, ...args], {
      env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1' },
    });
    assert.equal(r.status, 0, r.stderr);
  };
  git('init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(repo, 'a.txt'), 'alpha\n');
  git('add', '-A');
  git('commit', '-qm', 'first');
  const add = run(BIN, ['workspace', 'add', repo, '--mode', 'clone'], {
    cwd: srv.root,
    env: childEnv(srv.env, path.join(srv.root, 'home'), srv.dataRoot, srv.port),
  });
  assert.equal(add.status, 0, add.stderr);
  const sbx = await tools.create({ workspace_path: repo, workspace_mode: 'clone', network: false });
  if (sbx.copy_session_id) {
    let r;
    do r = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: sbx.copy_session_id, yield_time_ms: 10_000 });
    while (r.status === 'running');
  }
  assert.match(await sh(sbx.sandbox_id, 'cat /workspace/a.txt'), /alpha/);
  const past = await pausedAndResumed(sbx.sandbox_id, WATERMARK_MIB + 250, ddLoop('/workspace'), GREW);
  measure({ scenario: '36', what: 'clone_writer_past_watermark_mib', value: past });
  assert.ok(past < 240, `the clone writer got ${past} MiB past the watermark`);
  await sh(sbx.sandbox_id, 'rm -f /workspace/fill.*');
  await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
});

scenario('/etc/hosts, outside the engine\'s count, is measured too', async () => {
  await sh(runc, 'cp /etc/hosts /tmp/hosts.orig');
  const past = await pausedAndResumed(
    runc,
    WATERMARK_MIB + 150,
    'for i in $(seq 1 40); do dd if=/dev/zero bs=1M count=8 status=none >> /etc/hosts; sleep 0.2; done; echo finished',
    GREW,
  );
  assert.ok(past < 240, `${past} MiB past`);
  await sh(runc, 'cp /tmp/hosts.orig /etc/hosts');
});

scenario('directories, which the engine does not count at all, pause every sandbox', async () => {
  const past = await pausedAndResumed(
    runc,
    WATERMARK_MIB + 60,
    // 4 KiB each on ext4, nothing in SizeRw; some 300 MiB in all.
    'mkdir -p /tmp/d && cd /tmp/d && for k in $(seq 1 15); do seq -f "$k.%g" 1 5000 | xargs mkdir; sleep 0.3; done; echo finished',
    /the disk lost \d+ MiB more than the sandboxes' measured growth, so every sandbox on it was paused/,
  );
  measure({ scenario: '36', what: 'directories_past_watermark_mib', value: past });
  await sh(runc, 'rm -rf /tmp/d');
  assert.match(fs.readFileSync(srv.stderrPath, 'utf8'), /lost \d+ MiB more than the sandboxes' measured growth while low/);
});

scenario('a paused sandbox can be destroyed, which gives its space back', async () => {
  setFree(WATERMARK_MIB + 150);
  const writer = await tools.ok('bash', { sandbox_id: runc, command: ddLoop('/tmp'), yield_time_ms: 0 });
  assert.equal(writer.status, 'running');
  await waitFor('the writer paused', async () => (await inspect(runc)).State.Paused);
  const t0 = Date.now();
  await tools.ok('sandbox_destroy', { sandbox_id: runc }, CREATE_TIMEOUT);
  measure({ scenario: '36', what: 'destroy_paused_ms', value: Date.now() - t0 });
  assert.equal(await inspect(runc), null, 'its container is gone');
  const again = await waitFor('creates allowed again', async () => {
    const r = await tools.call('sandbox_create', { network: false }, CREATE_TIMEOUT);
    return !r.isError && r.structuredContent;
  }, 20_000);
  freeBallast();
  await tools.ok('sandbox_destroy', { sandbox_id: again.sandbox_id }, CREATE_TIMEOUT);
});

scenario('the shared engine is untouched, and the registry agrees with the test engine', async () => {
  assert.equal((await dockerRequest('GET', '/_ping', undefined, DOCKER_SOCKET)).status, 200);
  if (sharedHadDocker0) assert.equal(run('ip', ['link', 'show', 'docker0']).status, 0, 'docker0 is still there');
  const left = await dockerRequest('GET', '/containers/json?all=1', undefined, st.sock);
  assert.deepEqual(left.body.map((c) => c.Names[0]), [], 'no container left in the test engine');
  const audit = run('sqlite3', [path.join(srv.dataRoot, 'state', 'chat2sbx.sqlite'), "SELECT action, count(*) FROM audit WHERE action LIKE 'sandbox.%pause' GROUP BY action"]);
  assert.match(audit.stdout, /sandbox\.pause\|[5-9]/);
  assert.match(audit.stdout, /sandbox\.unpause\|[4-9]/);
});
