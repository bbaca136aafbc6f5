// 09 (make test-nodes): the disk guard per node (issue 28, item 3;
// lifecycle/node_disk.c). serve keeps a disk probe container on n1 (this
// registry's probe label, not the sandbox label: no network, read-only
// root, every capability dropped) and asks it for the free space of the
// volume it mounts. The test makes that volume itself before n1 is added,
// as a 64 MiB tmpfs of n1's engine, so filling it fills no real disk and
// this machine's disk (the same one n1's engine uses here) stays as it is:
// with 63 MiB written into it, n1 is below CHAT2SBX_MIN_FREE_DISK (auto:
// 5 % of 64 MiB), a create pinned to n1 is refused naming the node and
// the numbers, an unpinned one goes to local, the sandbox already on n1
// is paused on n1's engine and its calls answer the paused message
// naming n1; a clean restart of serve makes the probe again, re-attaches
// that sandbox (unpaused at start) and pauses it again, as does n1's
// reconcile after a network cut; with the file
// removed, it is unpaused and answers again.
// `node list` and `node show --json` show the free disk; `node remove` is
// not held up by the probe, which serve removes from n1 right after.
// Needs root.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';

import { runCli, runCliJson } from '../lib/clones.mjs';
import { ENGINE, IMAGE, useNodeEngine } from '../lib/nodes.mjs';
import { dockerInspect, dockerRequest, LABEL_REGISTRY, LABEL_SANDBOX, resultText, useServer } from '../lib/server.mjs';

const N = process.env.E2E_DISK_NODE_NUMBER || '69';
const PROBE_LABEL = 'org.chat2sbx.diskprobe.registry';
const VOLUME = 'chat2sbx-df';
const node = useNodeEngine(N);
const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'runc' } });
const made = [];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cli = (args) => runCli(ctx.srv, args);
const n1 = () => runCliJson(ctx.srv, ['node', 'show', 'n1', '--json']);

ctx.onCleanup(async () => {
  const tools = await ctx.tools();
  for (const id of made) await tools.destroyQuietly(id);
});

async function waitFor(pred, what, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await pred();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

// Runs sh -c script as root in a throw-away container on n1 with the probe's
// volume mounted read-write at /df, and waits for it.
async function onVolume(script) {
  const c = await dockerRequest(
    'POST',
    '/containers/create',
    {
      Image: IMAGE,
      Entrypoint: ['sh', '-c', script],
      User: '0:0',
      NetworkDisabled: true,
      HostConfig: { Mounts: [{ Type: 'volume', Source: VOLUME, Target: '/df' }], NetworkMode: 'none' },
    },
    node.SOCK,
  );
  await dockerRequest('POST', `/containers/${c.body.Id}/start`, undefined, node.SOCK);
  const w = await dockerRequest('POST', `/containers/${c.body.Id}/wait`, undefined, node.SOCK);
  await dockerRequest('DELETE', `/containers/${c.body.Id}?force=1`, undefined, node.SOCK);
  assert.equal(w.body.StatusCode, 0, `'${script}' on n1's probe volume`);
}

async function probes() {
  const label = encodeURIComponent(JSON.stringify({ label: [PROBE_LABEL] }));
  const cs = await dockerRequest('GET', `/containers/json?all=1&filters=${label}`, undefined, node.SOCK);
  return (cs.body || []).filter((c) => String(c.Labels[PROBE_LABEL]).startsWith(ctx.srv.dataRoot));
}

let onN1; // a sandbox running on n1 before its disk runs low

ctx.test('n1 added while serve runs gets a disk probe, and node show tells its free disk', async () => {
  // The volume the probe mounts, made first as a small tmpfs (see the top).
  const v = await dockerRequest(
    'POST',
    '/volumes/create',
    { Name: VOLUME, DriverOpts: { type: 'tmpfs', device: 'tmpfs', o: 'size=64m' } },
    node.SOCK,
  );
  assert.ok(v.status < 300, JSON.stringify(v.body));
  // A tmpfs volume loses its files once no container mounts it (serve's
  // stop removes the probe): a holder keeps it mounted for the file.
  const h = await dockerRequest(
    'POST',
    '/containers/create?name=c2s-e2e-df-holder',
    {
      Image: IMAGE,
      Entrypoint: ['sleep', 'infinity'],
      NetworkDisabled: true,
      HostConfig: { Mounts: [{ Type: 'volume', Source: VOLUME, Target: '/df', ReadOnly: true }], NetworkMode: 'none' },
    },
    node.SOCK,
  );
  await dockerRequest('POST', `/containers/${h.body.Id}/start`, undefined, node.SOCK);
  const add = cli(['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  assert.equal(add.status, 0, add.desc);
  const shown = await waitFor(() => n1().disk_total_bytes && n1(), 'n1 disk known');
  assert.equal(shown.disk_total_bytes, 64 * 1024 * 1024, JSON.stringify(shown));
  assert.ok(shown.disk_free_bytes > 60 * 1024 * 1024, JSON.stringify(shown));
  const fivePercent = (64 * 1024 * 1024 * 5) / 100;
  assert.ok(Math.abs(shown.disk_watermark_bytes - fivePercent) < 1024, `auto: 5 % of the disk: ${shown.disk_watermark_bytes}`);
  assert.equal(shown.disk_low, false);
  // Its probe read n1's process limits (migration 0019): n1 shares this
  // machine's kernel, so they are this machine's.
  const pidMax = Number(fs.readFileSync('/proc/sys/kernel/pid_max', 'utf8'));
  const threadsMax = Number(fs.readFileSync('/proc/sys/kernel/threads-max', 'utf8'));
  const limits = await waitFor(() => !n1().limits.procs_assumed && n1().limits, 'n1 process limits read');
  assert.equal(limits.pid_max, pidMax, JSON.stringify(limits));
  assert.equal(limits.threads_max, threadsMax, JSON.stringify(limits));
  const [p] = await probes();
  assert.ok(p, 'a probe container of this registry on n1');
  assert.equal(p.State, 'running');
  assert.equal(p.Labels[LABEL_REGISTRY], undefined, 'not labelled as a sandbox: reconcile never sees it');
  const i = await dockerInspect(p.Id, node.SOCK);
  assert.equal(i.HostConfig.NetworkMode, 'none');
  assert.equal(i.HostConfig.ReadonlyRootfs, true);
  assert.deepEqual(i.HostConfig.CapDrop, ['ALL']);
  assert.ok(i.HostConfig.SecurityOpt.includes('no-new-privileges'), JSON.stringify(i.HostConfig.SecurityOpt));
  assert.ok(i.Mounts.some((m) => m.Name === VOLUME && m.RW === false), JSON.stringify(i.Mounts));
  const list = cli(['node', 'list']);
  assert.match(list.stdout, /DISK FREE/);
  assert.match(list.stdout, /^n1 .* 0\.1 GiB /m, list.stdout);

  const tools = await ctx.tools();
  onN1 = await tools.create({ node: 'n1' });
  made.push(onN1.sandbox_id);
  const b = await tools.ok('bash', { sandbox_id: onN1.sandbox_id, command: 'echo before > /workspace/f', yield_time_ms: 10_000 });
  assert.equal(b.status, 'exited');
});

ctx.test('n1 short of disk: a pinned create is refused naming n1, an unpinned one goes to local, n1\'s sandbox is paused', async () => {
  const t0 = Date.now();
  await onVolume('head -c 66060288 /dev/zero > /df/fill');
  const low = await waitFor(() => n1().disk_low && n1(), 'n1 low', 20_000);
  console.log(`# n1 seen low after ${Date.now() - t0} ms: ${low.disk_free_bytes} bytes free`);
  const tools = await ctx.tools();
  const res = await tools.call('sandbox_create', { node: 'n1' });
  assert.equal(res.isError, true, resultText(res));
  assert.match(
    resultText(res),
    /no sandbox is created on node 'n1' while the disk of node 'n1' \(its engine's data\) has \d+ MiB free, below the 3 MiB minimum \(CHAT2SBX_MIN_FREE_DISK\); create it on another node/,
  );
  const other = await tools.create({});
  made.push(other.sandbox_id);
  assert.equal(other.node, 'local', JSON.stringify(other));
  // n1's sandbox: paused on n1's engine, and its calls say why.
  const label = encodeURIComponent(JSON.stringify({ label: [`${LABEL_SANDBOX}=${onN1.sandbox_id}`] }));
  const paused = await waitFor(async () => {
    const cs = await dockerRequest('GET', `/containers/json?all=1&filters=${label}`, undefined, node.SOCK);
    return cs.body?.[0]?.State === 'paused';
  }, 'the sandbox on n1 paused', 15_000);
  assert.ok(paused);
  const call = await tools.call('bash', { sandbox_id: onN1.sandbox_id, command: 'true', yield_time_ms: 5_000 });
  assert.equal(call.isError, true, resultText(call));
  assert.match(
    resultText(call),
    /sandbox 'sbx_[a-z2-7]+' is paused because the disk of node 'n1' \(its engine's data\) has \d+ MiB free, below the 3 MiB minimum/,
  );
  const list = cli(['node', 'list']);
  assert.match(list.stdout, /^n1 .* LOW 0\.0 GiB /m, list.stdout);
});

// n1's sandbox answers the paused message again after what (a restart, a
// reconcile), and that did not fail it.
async function pausedAgain(what) {
  const tools = await ctx.tools();
  await waitFor(async () => {
    const r = await tools.call('bash', { sandbox_id: onN1.sandbox_id, command: 'true', yield_time_ms: 5_000 });
    return r.isError && /is paused because the disk of node 'n1'/.test(resultText(r));
  }, `the sandbox on n1 paused again after ${what}`, 20_000);
  const got = await tools.ok('sandbox_get', { sandbox_id: onN1.sandbox_id });
  assert.equal(got.status, 'running', `${what} did not fail it: ${JSON.stringify(got)}`);
}

ctx.test('a clean restart of serve while n1 is low: its probe is made again, its sandbox re-attached and paused again', async () => {
  const [old] = await probes();
  await ctx.restart('SIGTERM');
  const [made] = await waitFor(async () => {
    const p = await probes();
    return p.length === 1 && p[0].Id !== old.Id && p[0].State === 'running' && p;
  }, 'a new probe on n1', 20_000);
  assert.ok(made);
  await pausedAgain('the restart');
});

ctx.test('n1 cut off and back while low: its paused sandbox is re-attached (not failed) and paused again', async () => {
  execFileSync(ENGINE, ['cut', N]);
  await waitFor(() => n1().state === 'down', 'n1 down', 20_000);
  execFileSync(ENGINE, ['heal', N]);
  await waitFor(() => n1().state === 'ready', 'n1 ready', 20_000);
  await pausedAgain('the node\'s reconcile');
});

ctx.test('space back on n1: its sandbox is unpaused and answers with its files; creates go there again', async () => {
  const t0 = Date.now();
  await onVolume('rm /df/fill');
  await waitFor(() => n1().disk_low === false, 'n1 not low', 20_000);
  console.log(`# n1 seen with room again after ${Date.now() - t0} ms`);
  const tools = await ctx.tools();
  const b = await waitFor(async () => {
    const r = await tools.call('bash', { sandbox_id: onN1.sandbox_id, command: 'cat /workspace/f', yield_time_ms: 10_000 });
    return r.isError ? null : r.structuredContent;
  }, 'the sandbox on n1 answering', 15_000);
  assert.equal(b.output, 'before\n');
  const again = await tools.create({ node: 'n1' });
  made.push(again.sandbox_id);
  assert.equal(again.node, 'n1');
});

ctx.test('node remove is not held up by the probe, which serve then removes from n1', async () => {
  const tools = await ctx.tools();
  for (const id of made.splice(0)) await tools.destroyQuietly(id);
  await dockerRequest('DELETE', '/containers/c2s-e2e-df-holder?force=1', undefined, node.SOCK);
  const r = cli(['node', 'remove', 'n1']);
  assert.equal(r.status, 0, r.desc);
  await waitFor(async () => (await probes()).length === 0, 'the probe removed from n1', 20_000);
});

ctx.finish();
