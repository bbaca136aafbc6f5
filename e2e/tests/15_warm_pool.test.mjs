// 15: the warm pool (issue 8). With CHAT2SBX_WARM_POOL=2 serve keeps two
// started sandboxes labelled org.chat2sbx.pool=1 that no listing shows; a
// default sandbox_create claims one (attached, answers bash) and the pool
// refills; a create with options is cold; SIGTERM removes the members this
// serve made; after SIGKILL the next serve re-attaches the members (and
// cleans up one whose container died); nothing is left in the engine.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { dockerInspect, dockerRequest, LABEL_REGISTRY, LABEL_SANDBOX, useServer } from '../lib/server.mjs';

const POOL_LABEL = 'org.chat2sbx.pool';
const POOL_ENV = { CHAT2SBX_WARM_POOL: '2' };
const ctx = useServer({ env: POOL_ENV });
const claimed = new Set(); // sandboxes handed to a user: their containers keep the pool label

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const registry = () => path.join(ctx.srv.dataRoot, 'state', 'chat2sbx.sqlite');

// Containers of this registry, as the engine sees them.
async function ourContainers() {
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL_REGISTRY}=${registry()}`] }));
  const r = await dockerRequest('GET', `/containers/json?all=1&filters=${filters}`);
  return r.body || [];
}

// Members serve has finished making: its log says so (a log kept across
// restarts). A container runs a moment before its create is done; a kill in
// that moment rightly removes it, so the engine alone cannot tell.
function finished() {
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  return new Set([...log.matchAll(/warm pool: sandbox (sbx_[a-z0-9]+) ready/g)].map((m) => m[1]));
}

// Running, pool-labelled, made, never claimed: the pool's members.
async function members() {
  const done = finished();
  return new Set(
    (await ourContainers())
      .filter((c) => c.Labels?.[POOL_LABEL] === '1' && c.State === 'running')
      .map((c) => c.Labels[LABEL_SANDBOX])
      .filter((id) => done.has(id) && !claimed.has(id)),
  );
}

async function waitPool(n, timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = await members();
    if (m.size === n) return m;
    if (Date.now() > deadline) throw new Error(`the pool has ${m.size} member(s), not ${n}: ${[...m].join(', ')}`);
    await sleep(250);
  }
}

// Stops serve with signal, runs whileDown (if any), starts it again.
async function restart(signal, env = POOL_ENV, whileDown = null) {
  const srv = ctx.srv;
  for (const c of srv.clients) await c.close().catch(() => {});
  srv.clients.clear();
  srv.proc.kill(signal);
  await srv.exited;
  if (whileDown) await whileDown();
  await srv.start({ env });
  ctx.generation++;
}

async function claimAndUse(tools, pool) {
  const sbx = await tools.create({});
  assert.ok(pool.has(sbx.sandbox_id), `sandbox_create did not claim a pool member: ${sbx.sandbox_id} not in ${[...pool]}`);
  claimed.add(sbx.sandbox_id);
  assert.equal(sbx.status, 'running');
  const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo warm', yield_time_ms: 10_000 });
  assert.equal(r.status, 'exited');
  assert.equal(r.output, 'warm\n');
  return sbx;
}

ctx.test('the pool fills, stays out of listings, and a default create claims a member', async () => {
  const tools = await ctx.tools();
  const pool = await waitPool(2);
  const list = await tools.ok('sandbox_list', {});
  assert.deepEqual(list.sandboxes.filter((s) => pool.has(s.sandbox_id)), [], 'sandbox_list shows pool members');
  const ws = await tools.ok('workspace_list', {});
  assert.deepEqual(ws.workspaces.filter((w) => pool.has(w.sandbox_id)), [], 'workspace_list shows pool workspaces');

  const sbx = await claimAndUse(tools, pool);
  const after = await tools.ok('sandbox_list', {});
  assert.ok(after.sandboxes.some((s) => s.sandbox_id === sbx.sandbox_id), 'a claimed sandbox is a user sandbox');

  const refilled = await waitPool(2);
  assert.ok(!refilled.has(sbx.sandbox_id));

  // Options the pool cannot satisfy make a cold sandbox; the members stay.
  const cold = await tools.create({ memory: '256m' });
  assert.ok(!refilled.has(cold.sandbox_id), 'a create with options claimed a pool member');
  const insp = await dockerInspect(cold.container_id || cold.sandbox_id);
  assert.equal(insp.Config.Labels[POOL_LABEL], undefined);
  assert.equal(insp.HostConfig.Memory, 256 * 1024 * 1024);
  assert.deepEqual(await members(), refilled);

  await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id });
  await tools.ok('sandbox_destroy', { sandbox_id: cold.sandbox_id });
});

ctx.test('SIGTERM removes the members serve made; after SIGKILL they are re-attached or cleaned up', async () => {
  const made = await waitPool(2);
  await restart('SIGTERM');
  for (const id of made) assert.equal(await dockerInspect(id), null, `pool member ${id} survived SIGTERM`);

  const fresh = await waitPool(2);
  const [survivor, victim] = [...fresh];
  // SIGKILL leaves both members running; the engine loses one while serve is away.
  await restart('SIGKILL', POOL_ENV, async () => {
    for (const id of fresh) assert.equal((await dockerInspect(id))?.State?.Running, true, `${id} after SIGKILL`);
    await dockerRequest('DELETE', `/containers/${victim}?force=1&v=1`);
  });

  const pool = await waitPool(2);
  assert.ok(pool.has(survivor), `the surviving member ${survivor} was not re-attached: ${[...pool]}`);
  assert.ok(!pool.has(victim));
  let tools = await ctx.tools();
  const list = await tools.ok('sandbox_list', {});
  assert.ok(!list.sandboxes.some((s) => s.sandbox_id === victim), 'the dead member shows in sandbox_list');

  // The re-attached member is claimed first (oldest) and answers bash.
  const sbx = await claimAndUse(tools, new Set([survivor]));
  await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id });

  // No orphans: members this serve adopted are left by SIGTERM for the next
  // serve; destroy them explicitly, stop, and the engine holds nothing of ours.
  const left = await waitPool(2);
  await restart('SIGTERM', { CHAT2SBX_WARM_POOL: '0' });
  tools = await ctx.tools();
  for (const id of await members()) {
    assert.ok(left.has(id));
    await tools.ok('sandbox_destroy', { sandbox_id: id });
  }
  const remaining = (await ourContainers()).map((c) => `${c.Names?.[0]} (${c.State})`);
  assert.deepEqual(remaining, [], 'containers left behind');
});

ctx.finish();
