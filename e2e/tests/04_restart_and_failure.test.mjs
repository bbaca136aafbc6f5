// 04: nothing is lost when serve restarts (sessions live in the helper, serve
// re-attaches at start), a sandbox whose container died is reported failed
// with the reason and can be destroyed, and sandbox_create's memory option
// reaches the engine while a bad value creates nothing.
import assert from 'node:assert/strict';

import { spawnSync } from 'node:child_process';
import path from 'node:path';

import { BIN, childEnv, dockerInspect, dockerRequest, freePort, useServer } from '../lib/server.mjs';

const ctx = useServer();

async function drain(tools, sandboxId, sessionId, first, maxMs = 30_000) {
  let output = first.output ?? '';
  let last = first;
  const deadline = Date.now() + maxMs;
  while (last.status === 'running' || last.has_more_output) {
    if (Date.now() > deadline) throw new Error(`session ${sessionId} still running: ${JSON.stringify(last)}`);
    last = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: sessionId, yield_time_ms: 2000 });
    output += last.output ?? '';
  }
  return { output, last };
}

const restart = (signal) => ctx.restart(signal);

ctx.test('a restart of serve (SIGTERM, then SIGKILL) keeps sandboxes and their running sessions', async (t) => {
  let tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(sbx.sandbox_id)));
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'kept.txt', content: 'kept\n' });
  const cmd = 'for i in 1 2 3 4 5 6; do echo r$i; sleep 0.5; done';
  const first = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: cmd, yield_time_ms: 200 });
  assert.equal(first.status, 'running');

  for (const signal of ['SIGTERM', 'SIGKILL']) {
    await restart(signal);
    tools = await ctx.tools();
    const list = await tools.ok('sandbox_list', {});
    const row = list.sandboxes.find((s) => s.sandbox_id === sbx.sandbox_id);
    assert.equal(row?.status, 'running', `after ${signal}: ${JSON.stringify(row)}`);
    const r = await tools.ok('read', { sandbox_id: sbx.sandbox_id, path: 'kept.txt', line_numbers: false });
    assert.equal(r.content, 'kept\n', `after ${signal}`);
  }
  // The session started before both restarts: its output arrives exactly once, in order.
  const { output, last } = await drain(tools, sbx.sandbox_id, first.session_id, first);
  assert.equal(output, 'r1\nr2\nr3\nr4\nr5\nr6\n');
  assert.equal(last.status, 'exited');
  assert.equal(last.exit_code, 0);
  const got = await tools.ok('sandbox_get', { sandbox_id: sbx.sandbox_id });
  assert.ok(got.bash_sessions?.some((s) => s.session_id === first.session_id), JSON.stringify(got));
});

ctx.test('a container killed behind our back: failed with the reason, then destroyable', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  try {
    const killed = await dockerRequest('POST', `/containers/${sbx.sandbox_id}/kill`);
    assert.equal(killed.status, 204, JSON.stringify(killed.body));
    // Wait (bounded) until the engine reports it stopped.
    for (let i = 0; i < 50 && (await dockerInspect(sbx.sandbox_id))?.State?.Running; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const r = await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'true' });
    assert.equal(r.isError, true, JSON.stringify(r));
    assert.match(r.content[0].text, /failed/);
    assert.match(r.content[0].text, /sandbox_destroy/, 'says what to do');
    const list = await tools.ok('sandbox_list', {});
    const row = list.sandboxes.find((s) => s.sandbox_id === sbx.sandbox_id);
    assert.equal(row?.status, 'failed', JSON.stringify(row));
    assert.match(row.failure_reason ?? '', /stopped|exit/, JSON.stringify(row));
  } finally {
    const d = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id });
    assert.equal(d.status, 'removed');
  }
  assert.equal(await dockerInspect(sbx.sandbox_id), null, 'the container is gone');
});

ctx.test('memory reaches the engine; a bad memory value creates nothing', async () => {
  const tools = await ctx.tools();
  const before = (await tools.ok('workspace_list', {})).workspaces.length;
  const bad = await tools.call('sandbox_create', { memory: 'lots' });
  assert.equal(bad.isError, true);
  assert.match(bad.content[0].text, /memory 'lots'/);
  assert.equal((await tools.ok('workspace_list', {})).workspaces.length, before, 'no workspace left behind');

  const sbx = await tools.create({ memory: '256m', workspace_mode: 'managed' });
  try {
    assert.equal(sbx.memory_bytes, 256 * 1024 * 1024);
    const info = await dockerInspect(sbx.sandbox_id);
    assert.equal(info.HostConfig.Memory, 256 * 1024 * 1024);
    assert.ok(info.HostConfig.PidsLimit > 0, 'a pids limit is set');
    // Reattaching the workspace while its sandbox runs returns that sandbox.
    const again = await tools.create({ workspace_id: sbx.workspace_id });
    assert.equal(again.sandbox_id, sbx.sandbox_id);
    assert.equal(again.reused, true);
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
  // After destroy, the managed workspace can carry a new sandbox.
  const next = await tools.create({ workspace_id: sbx.workspace_id });
  try {
    assert.notEqual(next.sandbox_id, sbx.sandbox_id);
    assert.equal(next.reused, false);
  } finally {
    await tools.destroyQuietly(next.sandbox_id);
  }
});

ctx.test('a second serve on the same registry refuses to start and disturbs nothing', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  try {
    const srv = ctx.srv;
    const env = childEnv({}, path.join(srv.root, 'home'), srv.dataRoot, await freePort());
    const second = spawnSync(BIN, ['serve'], { env, cwd: srv.root, encoding: 'utf8', timeout: 20_000 });
    assert.equal(second.status, 4, `exit status (conflict): ${second.stderr}`);
    assert.match(second.stderr, /another chat2sbx serve \(pid \d+\) is using the registry/);
    const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo still-mine' });
    assert.equal(r.output, 'still-mine\n');
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.finish();
