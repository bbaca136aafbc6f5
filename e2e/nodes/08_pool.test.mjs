// 08 (make test-nodes): warm pools per node (issue 28, "Warm pools are per
// node"; lifecycle/pool_node.c, policy/pool.c). With CHAT2SBX_WARM_POOL=1
// and node n1 added while serve runs, n1 gets its own member: a started
// sandbox on n1's engine, labelled this registry's and the pool's, in no
// listing. A create pinned to n1 claims it (the same sandbox, fast, and it
// answers bash) and n1's pool is refilled; draining n1 removes its member
// from n1's engine (the claimed sandbox keeps working) and resuming it
// brings one back. A stalled n1 (its dockerd stopped with SIGSTOP while its
// refill makes a member) holds up neither a claim on local nor local's
// refill. Cut off the network, n1 hands out nothing and keeps its member,
// which answers once n1 is back; a member killed during a cut is removed
// and made again. SIGTERM of serve removes the members it made on n1 and
// on local and leaves the claimed sandboxes; at the end `node remove` of
// the drained node goes through and nothing of ours is left on n1's
// engine. Notes create latency on n1 with a warm member and without.
// Needs root.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { runCli, runCliJson } from '../lib/clones.mjs';
import { ENGINE, useNodeEngine } from '../lib/nodes.mjs';
import { DOCKER_SOCKET, dockerRequest, LABEL_REGISTRY, LABEL_SANDBOX, LABEL_WORKSPACE, median, useServer } from '../lib/server.mjs';

const POOL_LABEL = 'org.chat2sbx.pool';
const POOL_ENV = { CHAT2SBX_RUNTIME: 'runc', CHAT2SBX_WARM_POOL: '1' };
const N = process.env.E2E_POOL_NODE_NUMBER || '68';
const node = useNodeEngine(N);
const ctx = useServer({ env: POOL_ENV });
const claimed = new Set(); // handed out on n1: their containers keep the pool label
const claimedLocal = new Set(); // handed out on local
const made = [];

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const cli = (args) => runCli(ctx.srv, args);
const n1State = () => runCliJson(ctx.srv, ['node', 'show', 'n1', '--json']).state;

async function waitState(want, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (n1State() !== want && Date.now() < deadline) await sleep(250);
  assert.equal(n1State(), want);
}

// How many times serve logged that n1 answers again (its reconcile ran).
const reconciles = () => (fs.readFileSync(ctx.srv.stderrPath, 'utf8').match(/node n1 answers again:/g) || []).length;

ctx.onCleanup(async () => {
  const tools = await ctx.tools();
  for (const id of made) await tools.destroyQuietly(id);
});

// Containers and volumes of this serve's registry on an engine (n1's by default).
async function ours(sock = node.SOCK) {
  const label = encodeURIComponent(JSON.stringify({ label: [LABEL_REGISTRY] }));
  const cs = await dockerRequest('GET', `/containers/json?all=1&filters=${label}`, undefined, sock);
  const vs = await dockerRequest('GET', `/volumes?filters=${label}`, undefined, sock);
  const mine = (labels) => String((labels || {})[LABEL_REGISTRY] || '').startsWith(ctx.srv.dataRoot);
  return {
    containers: (cs.body || []).filter((c) => mine(c.Labels)),
    volumes: (vs.body?.Volumes || []).filter((v) => mine(v.Labels)).map((v) => v.Name),
  };
}

// Members serve finished making on node (its log says so).
function finished(on) {
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  const re = new RegExp(`warm pool: sandbox (sbx_[a-z0-9]+) ready on node ${on} `, 'g');
  return new Set([...log.matchAll(re)].map((m) => m[1]));
}

// Running, pool-labelled, finished, never claimed: the pool's members on an engine.
async function members(on = 'n1', sock = node.SOCK) {
  const done = finished(on);
  return new Set(
    (await ours(sock)).containers
      .filter((c) => c.Labels?.[POOL_LABEL] === '1' && c.State === 'running')
      .map((c) => c.Labels[LABEL_SANDBOX])
      .filter((id) => done.has(id) && !claimed.has(id) && !claimedLocal.has(id)),
  );
}

async function waitMembers(n, on = 'n1', sock = node.SOCK, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = await members(on, sock);
    if (m.size === n) return m;
    if (Date.now() > deadline) throw new Error(`node ${on} has ${m.size} member(s), not ${n}: ${[...m].join(', ')}`);
    await sleep(250);
  }
}

// Every pool-labelled container of ours on n1 that was never claimed (made or not).
async function unclaimedOnNode() {
  return (await ours()).containers
    .filter((c) => c.Labels?.[POOL_LABEL] === '1' && !claimed.has(c.Labels[LABEL_SANDBOX]))
    .map((c) => `${c.Labels[LABEL_SANDBOX]} (${c.State})`);
}

async function waitNoMember(timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const left = await unclaimedOnNode();
    if (left.length === 0) return;
    if (Date.now() > deadline) throw new Error(`members left on n1: ${left.join(', ')}`);
    await sleep(250);
  }
}

// A create pinned to n1 that must claim one of pool; its time in ms.
async function claim(tools, pool) {
  const t0 = Date.now();
  const sbx = await tools.create({ node: 'n1' });
  const ms = Date.now() - t0;
  made.push(sbx.sandbox_id);
  assert.ok(pool.has(sbx.sandbox_id), `sandbox_create did not claim n1's member: ${sbx.sandbox_id} not in ${[...pool]}`);
  claimed.add(sbx.sandbox_id);
  assert.equal(sbx.status, 'running');
  assert.equal(sbx.node, 'n1', JSON.stringify(sbx));
  return { id: sbx.sandbox_id, ms };
}

const warmMs = [];
const keptVolumes = []; // the workspaces of user sandboxes destroyed on n1
const coldMs = [];

ctx.test('node n1 added while serve runs gets its own warm member, on its engine, in no listing', async () => {
  const add = cli(['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  assert.equal(add.status, 0, add.desc);
  const pool = await waitMembers(1);
  const [id] = [...pool];
  const c = (await ours()).containers.find((x) => x.Labels[LABEL_SANDBOX] === id);
  assert.equal(c.Labels[LABEL_REGISTRY], `${ctx.srv.dataRoot}/state/chat2sbx.sqlite`, 'labelled this registry\'s');
  assert.ok((await ours()).volumes.includes(`chat2sbx-ws-${c.Labels[LABEL_WORKSPACE]}`), 'its workspace is a volume on n1');
  // local keeps its own member on this machine's engine.
  await waitMembers(1, 'local', DOCKER_SOCKET);
  const tools = await ctx.tools();
  assert.equal((await tools.ok('sandbox_list', {})).sandboxes.length, 0, 'members are in no listing');
});

ctx.test('a create pinned to n1 claims n1\'s member, which works; n1 is refilled', async () => {
  const tools = await ctx.tools();
  const pool = await waitMembers(1);
  const { id, ms } = await claim(tools, pool);
  warmMs.push(ms);
  const r = await tools.ok('bash', { sandbox_id: id, command: 'echo warm on n1 > /workspace/w && cat /workspace/w', yield_time_ms: 10_000 });
  assert.equal(r.status, 'exited');
  assert.equal(r.output, 'warm on n1\n');
  const next = await waitMembers(1);
  assert.ok(!next.has(id), 'a new member, not the claimed one');
  // local's member was not taken by a create on n1.
  assert.equal((await members('local', DOCKER_SOCKET)).size, 1);
});

ctx.test('create latency on n1: with a warm member and cold (no member: the same create with a memory option)', async () => {
  const tools = await ctx.tools();
  for (let i = 0; i < 2; i++) {
    const t0 = Date.now();
    const cold = await tools.create({ node: 'n1', memory: '512m' });
    coldMs.push(Date.now() - t0);
    made.push(cold.sandbox_id);
    assert.equal(cold.node, 'n1');
    assert.equal((await members()).has(cold.sandbox_id), false);
    await tools.ok('sandbox_destroy', { sandbox_id: cold.sandbox_id });
    keptVolumes.push(`chat2sbx-ws-${cold.workspace_id}`); // a managed workspace outlives its sandbox
    const { ms } = await claim(tools, await waitMembers(1));
    warmMs.push(ms);
    await waitMembers(1);
  }
  console.log(`# sandbox_create on n1: warm (claimed) ${warmMs.join(', ')} ms, median ${median(warmMs)}; ` +
    `cold ${coldMs.join(', ')} ms, median ${median(coldMs)}`);
  assert.ok(median(warmMs) < median(coldMs), `a claim (${median(warmMs)} ms) beats a cold create (${median(coldMs)} ms)`);
});

ctx.test('draining n1 removes its member from n1\'s engine; its sandboxes keep working; resume refills', async () => {
  const tools = await ctx.tools();
  const r = cli(['node', 'drain', 'n1']);
  assert.equal(r.status, 0, r.desc);
  const t0 = Date.now();
  await waitNoMember();
  console.log(`# drain of n1: its member removed from its engine in ${Date.now() - t0} ms`);
  await sleep(3000);
  assert.deepEqual(await unclaimedOnNode(), [], 'no member is made on a drained node');
  const [id] = claimed;
  const b = await tools.ok('bash', { sandbox_id: id, command: 'cat /workspace/w', yield_time_ms: 10_000 });
  assert.equal(b.output, 'warm on n1\n');
  const res = await tools.call('sandbox_create', { node: 'n1' });
  assert.equal(res.isError, true, 'a drained node takes no sandbox, warm or not');
  const back = cli(['node', 'resume', 'n1']);
  assert.equal(back.status, 0, back.desc);
  await waitMembers(1);
});

ctx.test('a stalled n1 (its dockerd stopped) holds up neither a create on local nor local\'s refill', async () => {
  const tools = await ctx.tools();
  await waitMembers(1);
  const localPool = await waitMembers(1, 'local', DOCKER_SOCKET);
  await claim(tools, await members()); // n1's refill starts its next member in half a second
  const pid = Number(fs.readFileSync(path.join(node.DIR, 'docker.pid'), 'utf8'));
  process.kill(pid, 'SIGSTOP');
  try {
    await sleep(1500); // n1's refill is now waiting on an engine that does not answer
    const t0 = Date.now();
    const sbx = await tools.create({ node: 'local' });
    const ms = Date.now() - t0;
    made.push(sbx.sandbox_id);
    assert.ok(localPool.has(sbx.sandbox_id), `not local's member: ${sbx.sandbox_id}`);
    claimedLocal.add(sbx.sandbox_id);
    const t1 = Date.now();
    const next = await waitMembers(1, 'local', DOCKER_SOCKET, 30_000);
    assert.ok(!next.has(sbx.sandbox_id));
    console.log(`# n1 stalled: a claim on local ${ms} ms, local's member made again in ${Date.now() - t1} ms`);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  await waitMembers(1, 'n1', node.SOCK, 120_000);
});

ctx.test('n1 cut off hands out nothing; back, its member is re-attached and claimed; one killed meanwhile is made again', async () => {
  const tools = await ctx.tools();
  const [member] = await waitMembers(1);
  let before = reconciles();
  execFileSync(ENGINE, ['cut', N]);
  try {
    await waitState('down');
    const res = await tools.call('sandbox_create', { node: 'n1' });
    assert.equal(res.isError, true, 'a node that is down takes no sandbox, warm or not');
    const elsewhere = await tools.create({});
    made.push(elsewhere.sandbox_id);
    claimedLocal.add(elsewhere.sandbox_id);
    assert.equal(elsewhere.node, 'local');
    assert.deepEqual([...(await members())], [member], 'the member stays on n1 through the cut');
  } finally {
    execFileSync(ENGINE, ['heal', N]);
  }
  await waitState('ready');
  for (const until = Date.now() + 20_000; reconciles() === before && Date.now() < until; ) await sleep(250);
  const { id } = await claim(tools, new Set([member]));
  const r = await tools.ok('bash', { sandbox_id: id, command: 'echo back', yield_time_ms: 10_000 });
  assert.equal(r.output, 'back\n', 'the member kept through the cut answers once claimed');

  // A member whose container dies while n1 is cut off: marked failed by
  // n1's reconcile when it answers, then removed and made again.
  const [dying] = await waitMembers(1);
  before = reconciles();
  execFileSync(ENGINE, ['cut', N]);
  try {
    await waitState('down');
    execFileSync('docker', ['-H', `unix://${node.SOCK}`, 'kill', dying], { stdio: 'ignore' });
  } finally {
    execFileSync(ENGINE, ['heal', N]);
  }
  await waitState('ready');
  const deadline = Date.now() + 90_000;
  for (;;) {
    const now = await members();
    const gone = !(await ours()).containers.some((c) => c.Labels[LABEL_SANDBOX] === dying);
    if (gone && now.size === 1 && !now.has(dying)) break;
    if (Date.now() > deadline) throw new Error(`n1's dead member ${dying} was not replaced: ${[...now]}, gone ${gone}`);
    await sleep(500);
  }
  assert.ok(reconciles() > before);
});

ctx.test('SIGTERM of serve removes the members it made on n1 and on local; claimed sandboxes stay', async () => {
  await waitMembers(1);
  await waitMembers(1, 'local', DOCKER_SOCKET);
  const localMember = [...(await members('local', DOCKER_SOCKET))][0];
  await ctx.restartWith({ CHAT2SBX_RUNTIME: 'runc' }); // SIGTERM; then serve without a pool
  assert.deepEqual(await unclaimedOnNode(), [], 'no member left on n1');
  const onLocal = (await ours(DOCKER_SOCKET)).containers.map((c) => c.Labels[LABEL_SANDBOX]);
  assert.ok(!onLocal.includes(localMember), 'local\'s member went too');
  const left = (await ours()).containers.map((c) => c.Labels[LABEL_SANDBOX]).sort();
  assert.deepEqual(left, [...claimed].sort(), 'the claimed sandboxes are kept');
  const vols = (await ours()).volumes.sort();
  const claimedVolumes = (await ours()).containers
    .filter((c) => claimed.has(c.Labels[LABEL_SANDBOX]))
    .map((c) => `chat2sbx-ws-${c.Labels[LABEL_WORKSPACE]}`);
  assert.deepEqual(vols, [...claimedVolumes, ...keptVolumes].sort(), 'members\' volumes went with them');
  const tools = await ctx.tools();
  const [id] = claimed;
  const b = await tools.ok('bash', { sandbox_id: id, command: 'cat /workspace/w', yield_time_ms: 10_000 });
  assert.equal(b.output, 'warm on n1\n', 'a claimed sandbox answers after the restart');
});

ctx.test('a drained n1 with its sandboxes destroyed is removed; only their workspaces\' volumes are left on n1', async () => {
  const tools = await ctx.tools();
  // A managed workspace outlives its sandbox, on a node as on local.
  const kept = [...(await ours()).containers.map((c) => `chat2sbx-ws-${c.Labels[LABEL_WORKSPACE]}`), ...keptVolumes].sort();
  for (const id of made) await tools.destroyQuietly(id);
  made.length = 0;
  const d = cli(['node', 'drain', 'n1']);
  assert.equal(d.status, 0, d.desc);
  const r = cli(['node', 'remove', 'n1']);
  assert.equal(r.status, 0, r.desc);
  const left = await ours();
  assert.deepEqual({ containers: left.containers, volumes: left.volumes.sort() }, { containers: [], volumes: kept });
});

ctx.finish();
