// 05 (make test-nodes): a node that goes away and comes back (issue 28,
// "Health and failure"). One extra engine (engine.sh, the template image
// loaded) is node n1 beside local. A sandbox on n1 runs a bash session;
// the node is cut off the network (its veth link down): within seconds its
// sandbox answers UNAVAILABLE naming the node, `node list` says down, and
// a new sandbox lands on local; the link comes back: the sandbox answers
// again and the session started before the cut is still running. The
// node's dockerd restarts: the container comes back with it (restart policy
// unless-stopped, as on one machine), the session is reported lost, the
// files kept. A container killed while the node was cut off is found when
// the node answers again, without any call: the sandbox is marked failed
// with the reason. Needs root.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';

import { runCli, runCliJson } from '../lib/clones.mjs';
import { ENGINE, useNodeEngine } from '../lib/nodes.mjs';
import { resultText, useServer } from '../lib/server.mjs';

const N = process.env.E2E_OUTAGE_NODE_NUMBER || '66';
// Two misses 2 s apart, each ping bounded by 2 s, a pass under way.
const DOWN_WITHIN_MS = 15_000;

const node = useNodeEngine(N);

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'runc' } });
const made = [];
let remote = null; // the sandbox on n1
let session = null; // its bash session started before the cut

ctx.onCleanup(async () => {
  spawnSync(ENGINE, ['heal', N], { stdio: 'ignore' });
  const tools = await ctx.tools();
  for (const id of made) await tools.destroyQuietly(id);
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const n1State = () => runCliJson(ctx.srv, ['node', 'show', 'n1', '--json']).state;

// Calls read on the remote sandbox until pred(result) holds (at most ms).
async function readUntil(pred, ms, what) {
  const tools = await ctx.tools();
  const deadline = Date.now() + ms;
  let res;
  for (;;) {
    res = await tools.call('read', { sandbox_id: remote, path: 'before.txt', line_numbers: false });
    if (pred(res) || Date.now() > deadline) break;
    await sleep(250);
  }
  assert.ok(pred(res), `${what} within ${ms} ms: ${resultText(res)}`);
  return res;
}

ctx.test('a sandbox on node n1 runs a bash session', async () => {
  const r = runCli(ctx.srv, ['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  assert.equal(r.status, 0, r.desc);
  const tools = await ctx.tools();
  const sc = await tools.create({ node: 'n1' });
  made.push(sc.sandbox_id);
  assert.equal(sc.node, 'n1', JSON.stringify(sc));
  remote = sc.sandbox_id;
  await tools.ok('write', { sandbox_id: remote, path: 'before.txt', content: 'written before the cut\n' });
  const b = await tools.ok('bash', { sandbox_id: remote, command: 'for i in $(seq 600); do echo tick $i; sleep 0.5; done', yield_time_ms: 1500 });
  assert.equal(b.status, 'running', JSON.stringify(b));
  assert.match(b.output, /tick 1/);
  session = b.session_id;
});

ctx.test('cut off the network, n1 is down within seconds: its sandbox answers UNAVAILABLE naming it, creates go elsewhere', async () => {
  const t0 = Date.now();
  execFileSync(ENGINE, ['cut', N]);
  const res = await readUntil((x) => x.isError && /runs on node 'n1', which is not answering since/.test(resultText(x)), DOWN_WITHIN_MS, 'UNAVAILABLE naming n1');
  assert.match(resultText(res), /UNAVAILABLE|not answering/);
  console.log(`# n1 cut off: its sandbox answered UNAVAILABLE after ${Date.now() - t0} ms`);
  assert.equal(n1State(), 'down');
  const tools = await ctx.tools();
  const g = await tools.ok('sandbox_get', { sandbox_id: remote });
  assert.equal(g.status, 'running', 'its row is untouched');
  assert.equal(g.node, 'n1');
  const sc = await tools.create({});
  made.push(sc.sandbox_id);
  assert.equal(sc.node, 'local', 'a new sandbox does not go to a node that is down');
});

ctx.test('when the link is back, the sandbox answers again and the session started before the cut still runs', async () => {
  execFileSync(ENGINE, ['heal', N]);
  const res = await readUntil((x) => !x.isError, DOWN_WITHIN_MS, 'the sandbox answers again');
  assert.match(resultText(res), /written before the cut/);
  assert.equal(n1State(), 'ready');
  const tools = await ctx.tools();
  const p = await tools.ok('bash_poll', { sandbox_id: remote, session_id: session, yield_time_ms: 1500 });
  assert.equal(p.status, 'running', JSON.stringify(p));
  assert.match(p.output, /tick \d+/, 'it kept printing');
});

ctx.test('after n1\'s engine restarts, its sandbox comes back with it, as on one machine: the session is reported lost, the files kept', async () => {
  execFileSync(ENGINE, ['restart', N], { timeout: 120_000 });
  // The container has restart policy unless-stopped: the engine starts it
  // again; the next call re-attaches to a fresh helper.
  const res = await readUntil((x) => !x.isError, 40_000, 'the sandbox answers after the restart');
  assert.match(resultText(res), /written before the cut/, 'the workspace volume kept its files');
  const tools = await ctx.tools();
  const g = await tools.ok('sandbox_get', { sandbox_id: remote });
  assert.equal(g.status, 'running');
  const s = g.bash_sessions.find((x) => x.session_id === session);
  assert.equal(s?.status, 'lost', JSON.stringify(g.bash_sessions));
  assert.match(s.reason, /the sandbox restarted at/);
});

ctx.test('a container that died while n1 was cut off is found when it answers again: the sandbox is marked failed with the reason', async () => {
  execFileSync(ENGINE, ['cut', N]);
  const deadline = Date.now() + DOWN_WITHIN_MS;
  while (n1State() !== 'down' && Date.now() < deadline) await sleep(250);
  assert.equal(n1State(), 'down');
  // Killed on the node (its own socket, not through the cut link): a kill
  // is a stop the restart policy respects.
  execFileSync('docker', ['-H', `unix://${node.SOCK}`, 'kill', remote], { stdio: 'ignore' });
  execFileSync(ENGINE, ['heal', N]);
  // No call needed: the health loop reconciles the node when it answers.
  const tools = await ctx.tools();
  const until = Date.now() + 20_000;
  let g;
  for (;;) {
    g = await tools.ok('sandbox_get', { sandbox_id: remote });
    if (g.status === 'failed' || Date.now() > until) break;
    await sleep(500);
  }
  assert.equal(g.status, 'failed', JSON.stringify(g));
  assert.match(g.failure_reason || '', /its container is exited \(exit code 137\)/, JSON.stringify(g));
  assert.match(fs.readFileSync(ctx.srv.stderrPath, 'utf8'), /node n1 answers again: \d+ sandbox\(es\) re-attached, 1 marked failed/);
  const r = await tools.call('bash', { sandbox_id: remote, command: 'true' });
  assert.ok(r.isError);
  assert.match(resultText(r), /has failed/);
});
