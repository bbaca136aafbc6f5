// 02 (make test-nodes): sandboxes placed on, and run on, other machines'
// engines (issue 28). Two extra engines (engine.sh, each in its own network
// namespace with the template image loaded) are added as nodes n1 and n2;
// six sandboxes created through MCP land on more than one node, at most
// three on one (placement's best of two: the spread is certain, not luck);
// bash, write and read work on each, a remote sandbox's workspace is a volume of its node's engine and no path of this
// machine is bind-mounted into it (its helper is copied in), a node cut off
// the network is passed over by placement and answers again once healed,
// sandbox_create's node argument pins a sandbox to a node, sandbox_list,
// `sandbox list` and `status` name each one's node; after a crash of serve
// its reconcile re-attaches them on every node; a kept workspace whose
// volume was removed on its node and made again empty is NOT_FOUND, not an
// empty workspace; destroying them leaves no container of ours on the
// nodes, only their workspaces' volumes. Needs root.
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before } from 'node:test';
import { promisify } from 'node:util';

import { runCli, runCliJson } from '../lib/clones.mjs';
import { REPO_ROOT, dockerInspect, dockerRequest, resultText, useServer } from '../lib/server.mjs';

const ENGINE = path.join(REPO_ROOT, 'e2e', 'nodes', 'engine.sh');
const IMAGE = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${spawnSync('cat', [path.join(REPO_ROOT, 'VERSION')], { encoding: 'utf8' }).stdout.trim()}`;
// The namespaces' numbers (10.231.N.0/24); 01 uses 61.
const NUMBERS = { n1: process.env.E2E_NODE_NUMBER_A || '62', n2: process.env.E2E_NODE_NUMBER_B || '63' };
const SANDBOXES = 6;

const nodes = {}; // name -> {ENDPOINT, SOCK, CA, CERT, KEY, DIR}

function parseFacts(out) {
  const facts = {};
  for (const line of out.split('\n')) {
    const m = /^([A-Z]+)=(.*)$/.exec(line);
    if (m) facts[m[1]] = m[2];
  }
  return facts;
}

// Engines first (before serve starts): about 15 s each with the image.
before(async () => {
  const run = promisify(execFile);
  await Promise.all(
    Object.entries(NUMBERS).map(async ([name, n]) => {
      spawnSync(ENGINE, ['stop', n], { stdio: 'ignore' }); // a killed run's leftovers
      const { stdout } = await run(ENGINE, ['start', n, '--image', IMAGE], { timeout: 240_000 });
      nodes[name] = parseFacts(stdout);
      assert.match(nodes[name].ENDPOINT, /^tcp:\/\/10\.231\.\d+\.2:2376$/);
    }),
  );
});

after(() => {
  for (const n of Object.values(NUMBERS)) spawnSync(ENGINE, ['stop', n], { stdio: 'inherit' });
});

// runc everywhere: the vm runtime stays on this machine (docs/nodes.md).
const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'runc' } });

const made = []; // {id, node, createMs}

ctx.onCleanup(async () => {
  const tools = await ctx.tools();
  for (const s of made) await tools.destroyQuietly(s.id);
});

// User sandboxes destroyed along the way: their managed workspaces are kept.
const destroyed = [];
// Workspaces whose volume was removed on their node: their rows stay (a
// create for them is NOT_FOUND), and `node remove` counts them.
const gone = [];

function engineSock(node) {
  return node === 'local' ? undefined : nodes[node].SOCK;
}

// Containers and volumes of this registry on a node's engine.
async function ours(node) {
  const label = encodeURIComponent(JSON.stringify({ label: ['org.chat2sbx.registry'] }));
  const cs = await dockerRequest('GET', `/containers/json?all=1&filters=${label}`, undefined, nodes[node].SOCK);
  const vs = await dockerRequest('GET', `/volumes?filters=${label}`, undefined, nodes[node].SOCK);
  const mine = (labels) => String((labels || {})['org.chat2sbx.registry'] || '').startsWith(ctx.srv.dataRoot);
  return {
    containers: (cs.body || []).filter((c) => mine(c.Labels)).map((c) => c.Names?.[0]),
    volumes: (vs.body?.Volumes || []).filter((v) => mine(v.Labels)).map((v) => v.Name),
  };
}

ctx.test('both engines are added as nodes over mutual TLS', () => {
  for (const [name, f] of Object.entries(nodes)) {
    const r = runCli(ctx.srv, ['node', 'add', name, f.ENDPOINT, '--tls-ca', f.CA, '--tls-cert', f.CERT, '--tls-key', f.KEY]);
    assert.equal(r.status, 0, r.desc);
  }
  const list = runCliJson(ctx.srv, ['node', 'list', '--json']);
  assert.deepEqual(list.map((n) => n.name).sort(), ['local', 'n1', 'n2']);
});

ctx.test('six sandboxes are spread over more than one node and each runs bash, write and read', async () => {
  const tools = await ctx.tools();
  for (let i = 0; i < SANDBOXES; i++) {
    const t0 = Date.now();
    const sc = await tools.create({});
    made.push({ id: sc.sandbox_id, ws: sc.workspace_id, node: sc.node, createMs: Date.now() - t0 });
    assert.equal(sc.status, 'running', JSON.stringify(sc));
    assert.ok(['local', 'n1', 'n2'].includes(sc.node), `node: ${JSON.stringify(sc)}`);
  }
  const byNode = {};
  for (const s of made) byNode[s.node] = (byNode[s.node] || 0) + 1;
  console.log(`# placement of ${SANDBOXES} sandboxes: ${JSON.stringify(byNode)}`);
  // Placement takes the better of two nodes sampled, by memory counted as
  // expected use and free sandbox slots (docs/nodes.md, "Placement"): a
  // node gets one more only when the other sampled has at least as many, so
  // among three nodes of this machine's size no node holds more than half
  // of six, and at least two are used.
  assert.ok(Object.keys(byNode).length >= 2, `spread: ${JSON.stringify(byNode)}`);
  for (const n of Object.values(byNode)) assert.ok(n <= SANDBOXES / 2, JSON.stringify(byNode));
  assert.ok(made.some((s) => s.node !== 'local'), 'at least one on another node');

  const bashMs = {};
  const limitsOf = Object.fromEntries(runCliJson(ctx.srv, ['node', 'list', '--json']).map((n) => [n.name, n.limits]));
  for (const s of made) {
    // The container is on its node's engine and not on another's.
    const info = await dockerInspect(s.id, engineSock(s.node));
    assert.ok(info, `${s.id} has no container on ${s.node}`);
    assert.equal(info.State?.Running, true, JSON.stringify(info.State));
    // Its memory ceiling and process limit are its node's defaults.
    assert.equal(info.HostConfig?.Memory, limitsOf[s.node].default_memory_bytes, `${s.id} on ${s.node}`);
    assert.equal(info.HostConfig?.PidsLimit, limitsOf[s.node].pids_default, `${s.id} on ${s.node}`);
    if (s.node !== 'local') {
      assert.equal(await dockerInspect(s.id), null, `${s.id} is on ${s.node}, not on this machine's engine`);
      const ws = (info.Mounts || []).find((m) => m.Destination === '/workspace');
      assert.equal(ws?.Type, 'volume', `a remote workspace is a volume: ${JSON.stringify(info.Mounts)}`);
      assert.equal(ws?.Name, `chat2sbx-ws-${s.ws}`, 'the volume is the workspace\'s');
      // No path of this machine is mounted there: the helper was copied in.
      assert.deepEqual((info.Mounts || []).filter((m) => m.Type === 'bind'), [], JSON.stringify(info.Mounts));
    }
    const t0 = Date.now();
    const b = await tools.ok('bash', { sandbox_id: s.id, command: 'echo "on $HOSTNAME" > /workspace/where.txt; cat where.txt' });
    bashMs[s.node] = [...(bashMs[s.node] || []), Date.now() - t0];
    assert.equal(b.exit_code, 0, JSON.stringify(b));
    assert.match(b.output, /^on /);
    const text = `written to ${s.id} on ${s.node}\n`;
    const w = await tools.ok('write', { sandbox_id: s.id, path: 'notes.txt', content: text });
    assert.equal(w.bytes_written, Buffer.byteLength(text));
    const r = await tools.ok('read', { sandbox_id: s.id, path: 'notes.txt', line_numbers: false });
    assert.equal(r.content, text);
    const g = await tools.ok('sandbox_get', { sandbox_id: s.id });
    assert.equal(g.node, s.node);
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const node of Object.keys(byNode)) {
    const creates = made.filter((s) => s.node === node).map((s) => s.createMs);
    console.log(`# node ${node}: sandbox_create median ${med(creates)} ms (${creates.join(', ')}), first bash ${med(bashMs[node])} ms (${bashMs[node].join(', ')})`);
  }
  // A second bash call (the channel warm) on one local and one remote sandbox.
  for (const node of [...new Set(made.map((s) => s.node))]) {
    const s = made.find((x) => x.node === node);
    const times = [];
    for (let i = 0; i < 5; i++) {
      const t0 = Date.now();
      await tools.ok('bash', { sandbox_id: s.id, command: 'true' });
      times.push(Date.now() - t0);
    }
    console.log(`# node ${node}: warm bash 'true' median ${med(times)} ms (${times.join(', ')})`);
  }
});

ctx.test('sandbox_list, sandbox list and status name each sandbox\'s node', async () => {
  const tools = await ctx.tools();
  const list = await tools.ok('sandbox_list', {});
  for (const s of made) {
    const row = list.sandboxes.find((x) => x.sandbox_id === s.id);
    assert.equal(row?.node, s.node, JSON.stringify(row));
  }
  const cli = runCliJson(ctx.srv, ['sandbox', 'list', '--json']);
  for (const s of made) assert.equal(cli.sandboxes.find((x) => x.sandbox_id === s.id)?.node, s.node);
  const text = runCli(ctx.srv, ['sandbox', 'list']);
  assert.equal(text.status, 0, text.desc);
  assert.match(text.stdout, /NODE/);
  const status = runCli(ctx.srv, ['status', '--json']);
  const st = JSON.parse(status.stdout);
  const byNode = {};
  for (const s of made) byNode[s.node] = (byNode[s.node] || 0) + 1;
  assert.deepEqual(st.sandboxes.by_node, byNode, JSON.stringify(st.sandboxes));
  const nl = runCliJson(ctx.srv, ['node', 'list', '--json']);
  for (const n of nl.filter((x) => x.name !== 'local')) assert.equal(n.sandboxes, byNode[n.name] || 0, JSON.stringify(n));
});

ctx.test('sandbox_create with node puts it there; an unknown or badly named node is refused', async () => {
  const tools = await ctx.tools();
  const p = await tools.create({ node: 'n2', memory: '256m' }); // the nodes are full at the default ceiling
  try {
    assert.equal(p.node, 'n2');
    assert.ok(await dockerInspect(p.sandbox_id, nodes.n2.SOCK), 'on n2\'s engine');
  } finally {
    await tools.ok('sandbox_destroy', { sandbox_id: p.sandbox_id });
    destroyed.push({ node: p.node, ws: p.workspace_id }); // its workspace is kept
  }
  const unknown = await tools.call('sandbox_create', { node: 'nope' });
  assert.equal(unknown.isError, true);
  assert.match(resultText(unknown), /node 'nope' does not exist/);
  const bad = await tools.call('sandbox_create', { node: 'Bad_Name' });
  assert.equal(bad.isError, true);
  assert.match(resultText(bad), /node name 'Bad_Name'/);
});

ctx.test('a node cut off the network is passed over by placement; its sandboxes answer again once it is back', async () => {
  const tools = await ctx.tools();
  spawnSync(ENGINE, ['cut', NUMBERS.n1], { stdio: 'inherit' });
  let extra = null;
  try {
    const t0 = Date.now();
    extra = await tools.create({ memory: '256m' }); // the nodes are full at the default ceiling
    const ms = Date.now() - t0;
    console.log(`# sandbox_create with node n1 cut off: ${ms} ms, placed on ${extra.node}`);
    assert.notEqual(extra.node, 'n1');
  } finally {
    spawnSync(ENGINE, ['heal', NUMBERS.n1], { stdio: 'inherit' });
    if (extra) {
      await tools.ok('sandbox_destroy', { sandbox_id: extra.sandbox_id });
      destroyed.push({ node: extra.node, ws: extra.workspace_id });
    }
  }
  for (const s of made.filter((x) => x.node === 'n1')) {
    const b = await tools.ok('bash', { sandbox_id: s.id, command: 'cat notes.txt' });
    assert.equal(b.output, `written to ${s.id} on n1\n`);
  }
});

ctx.test('with local drained, new sandboxes go to the other nodes and local\'s keep working', async () => {
  const tools = await ctx.tools();
  let r = runCli(ctx.srv, ['node', 'drain', 'local']);
  assert.equal(r.status, 0, r.desc);
  const got = [];
  try {
    for (let i = 0; i < 2; i++) {
      const sc = await tools.create({ memory: '256m' }); // the nodes are full at the default ceiling
      got.push(sc);
      assert.notEqual(sc.node, 'local', JSON.stringify(sc));
    }
    const pinned = await tools.call('sandbox_create', { node: 'local' });
    assert.equal(pinned.isError, true);
    assert.match(resultText(pinned), /local: draining/);
    for (const s of made.filter((x) => x.node === 'local')) {
      const b = await tools.ok('bash', { sandbox_id: s.id, command: 'cat notes.txt' });
      assert.equal(b.output, `written to ${s.id} on local\n`);
    }
  } finally {
    r = runCli(ctx.srv, ['node', 'resume', 'local']);
    assert.equal(r.status, 0, r.desc);
    for (const sc of got) {
      await tools.ok('sandbox_destroy', { sandbox_id: sc.sandbox_id });
      destroyed.push({ node: sc.node, ws: sc.workspace_id });
    }
  }
});

ctx.test('after serve crashes, its reconcile re-attaches the sandboxes on every node', async () => {
  await ctx.restart('SIGKILL');
  const tools = await ctx.tools();
  for (const s of made) {
    const r = await tools.ok('read', { sandbox_id: s.id, path: 'notes.txt', line_numbers: false });
    assert.equal(r.content, `written to ${s.id} on ${s.node}\n`);
  }
  assert.match(ctx.srv.stderrTail(200), /reconciled: \d+ sandbox\(es\) re-attached/);
});

ctx.test('a managed workspace on a node outlives its sandbox and its next sandbox goes back there', async () => {
  const tools = await ctx.tools();
  const i = made.findIndex((x) => x.node !== 'local');
  const s = made[i];
  assert.ok(s.ws, JSON.stringify(s));
  const d = await tools.ok('sandbox_destroy', { sandbox_id: s.id });
  assert.equal(d.status, 'removed', JSON.stringify(d));
  const after = await ours(s.node);
  assert.ok(!after.containers.includes(`/${s.id}`), JSON.stringify(after));
  assert.ok(after.volumes.includes(`chat2sbx-ws-${s.ws}`), `its files are kept on ${s.node}: ${JSON.stringify(after)}`);
  // Another node cannot take it: its files are where they are.
  const elsewhere = await tools.call('sandbox_create', { workspace_id: s.ws, node: 'local' });
  assert.equal(elsewhere.isError, true);
  assert.match(resultText(elsewhere), new RegExp(`stays on node '${s.node}'`));
  const t0 = Date.now();
  const again = await tools.create({ workspace_id: s.ws });
  console.log(`# sandbox_create of a kept workspace on ${s.node}: ${Date.now() - t0} ms`);
  assert.equal(again.node, s.node);
  assert.equal(again.workspace_id, s.ws);
  assert.notEqual(again.sandbox_id, s.id);
  const r = await tools.ok('read', { sandbox_id: again.sandbox_id, path: 'notes.txt', line_numbers: false });
  assert.equal(r.content, `written to ${s.id} on ${s.node}\n`, 'the files written by its first sandbox');
  made[i] = { ...s, id: again.sandbox_id };
});

// The engine makes a missing named volume, empty and unlabelled, when a
// container names it: a kept workspace's volume removed by hand and made
// again that way (by hand here; by the engine when the removal falls
// between chat2sbx's check and the container's create) is not its files.
ctx.test('a kept workspace whose volume was removed on its node is NOT_FOUND, never an empty one', async () => {
  const tools = await ctx.tools();
  const sc = await tools.create({ node: 'n1', memory: '256m' }); // the nodes are full at the default ceiling
  await tools.ok('write', { sandbox_id: sc.sandbox_id, path: 'notes.txt', content: 'first\n' });
  await tools.ok('sandbox_destroy', { sandbox_id: sc.sandbox_id });
  const volume = `chat2sbx-ws-${sc.workspace_id}`;
  const sock = nodes.n1.SOCK;
  const rm = await dockerRequest('DELETE', `/volumes/${volume}`, undefined, sock);
  assert.equal(rm.status, 204, JSON.stringify(rm));
  const mk = await dockerRequest('POST', '/volumes/create', { Name: volume }, sock);
  assert.equal(mk.status, 201, JSON.stringify(mk));
  try {
    const before = await ours('n1');
    const again = await tools.call('sandbox_create', { workspace_id: sc.workspace_id });
    assert.equal(again.isError, true, resultText(again));
    assert.match(resultText(again), new RegExp(`files of workspace '${sc.workspace_id}' are gone from node 'n1'`));
    assert.deepEqual((await ours('n1')).containers.sort(), before.containers.sort(), 'no container is left');
    const still = await dockerRequest('GET', `/volumes/${volume}`, undefined, sock);
    assert.equal(still.status, 200, 'the volume found there is left as it is');
    gone.push({ node: 'n1', ws: sc.workspace_id });
  } finally {
    await dockerRequest('DELETE', `/volumes/${volume}`, undefined, sock);
  }
});

ctx.test('destroying them leaves no container of ours on the nodes, and each workspace\'s volume', async () => {
  const tools = await ctx.tools();
  for (const s of made) {
    const d = await tools.ok('sandbox_destroy', { sandbox_id: s.id });
    assert.equal(d.status, 'removed', JSON.stringify(d));
  }
  for (const node of Object.keys(nodes)) {
    const kept = [...made, ...destroyed].filter((x) => x.node === node).map((x) => `chat2sbx-ws-${x.ws}`).sort();
    const left = await ours(node);
    assert.deepEqual({ ...left, volumes: left.volumes.sort() }, { containers: [], volumes: kept }, `node ${node}`);
    const r = runCli(ctx.srv, ['node', 'remove', node]);
    assert.equal(r.status, 0, r.desc);
    const rows = kept.length + gone.filter((x) => x.node === node).length;
    if (rows) assert.match(r.stdout, new RegExp(`${rows} workspace`), r.stdout);
  }
  made.length = 0;
});

ctx.finish();
