// 12: concurrency (issue 6). Calls to different sandboxes run in parallel and
// a long bash_poll does not block a read on the same sandbox (asserted by
// order of completion, not by timing); 20 SDK clients at once creating,
// using and destroying sandboxes leave the registry and the engine
// consistent (no orphan, no lost row, no "database is locked"); and the
// sandbox limit holds under concurrent creates (no overshoot).
import assert from 'node:assert/strict';
import fs from 'node:fs';

import {
  CREATE_TIMEOUT,
  LABEL_REGISTRY,
  LABEL_SANDBOX,
  Server,
  connectClient,
  dockerRequest,
  resultText,
  useServer,
} from '../lib/server.mjs';

const CLIENTS = 20;
// 20 sandboxes at once: more than the sandbox count this machine derives by
// default (one per 2 GiB), so the scenario sets its own.
const ctx = useServer({ env: { CHAT2SBX_MAX_ACTIVE_SANDBOXES: '24' } });

async function registryContainers(srv) {
  const r = await dockerRequest('GET', '/containers/json?all=1');
  return r.body.filter((c) => String(c.Labels?.[LABEL_REGISTRY] || '').startsWith(srv.dataRoot));
}

// Settles p and records when, relative to the other promises of a race.
function track(p) {
  const t = { done: false };
  t.promise = p.then(
    (v) => {
      t.done = true;
      return v;
    },
    (e) => {
      t.done = true;
      throw e;
    },
  );
  return t;
}

ctx.test('a long bash_poll does not block a read on the same sandbox', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  try {
    await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'note.txt', content: 'readable\n' });
    const started = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'sleep 30', yield_time_ms: 0 });
    assert.equal(started.status, 'running');
    // No output comes, so the poll waits its whole yield (15 s).
    const poll = track(
      tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: started.session_id, yield_time_ms: 15_000 }),
    );
    for (let i = 0; i < 3; i++) {
      const r = await tools.ok('read', { sandbox_id: sbx.sandbox_id, path: 'note.txt', line_numbers: false });
      assert.equal(r.content, 'readable\n');
      assert.equal(poll.done, false, 'the read answered while the poll still waited');
    }
    const p = await poll.promise;
    assert.equal(p.status, 'running');
    await tools.ok('bash_stop', { sandbox_id: sbx.sandbox_id, session_id: started.session_id });
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('calls to different sandboxes run in parallel', async () => {
  const tools = await ctx.tools();
  const [a, b] = await Promise.all([tools.create({}), tools.create({})]);
  try {
    // A waits for its command (up to 20 s); B's calls answer meanwhile.
    const slow = track(
      tools.ok('bash', { sandbox_id: a.sandbox_id, command: 'sleep 6; echo slow', yield_time_ms: 20_000 }),
    );
    for (let i = 0; i < 3; i++) {
      const r = await tools.ok('bash', { sandbox_id: b.sandbox_id, command: `echo fast${i}` });
      assert.equal(r.output, `fast${i}\n`);
      assert.equal(slow.done, false, 'B answered while A was still running');
    }
    const s = await slow.promise;
    assert.equal(s.output, 'slow\n');
  } finally {
    await Promise.all([tools.destroyQuietly(a.sandbox_id), tools.destroyQuietly(b.sandbox_id)]);
  }
});

ctx.test(`${CLIENTS} clients at once: create, bash, write/read, destroy leave registry and engine consistent`, async () => {
  const srv = ctx.srv;
  const one = async (i) => {
    const client = await connectClient(srv.url, { name: `e2e-12-client-${i}` });
    srv.clients.add(client);
    const tools = srv.tools(client);
    const sbx = await tools.create({});
    try {
      const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: `echo client-${i}` });
      assert.equal(r.output, `client-${i}\n`);
      await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'mine.txt', content: `client ${i}\n` });
      const read = await tools.ok('read', { sandbox_id: sbx.sandbox_id, path: 'mine.txt', line_numbers: false });
      assert.equal(read.content, `client ${i}\n`);
    } finally {
      const d = await tools.call('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
      assert.ok(!d.isError, resultText(d));
      assert.equal(d.structuredContent.status, 'removed');
      await client.close();
      srv.clients.delete(client);
    }
    return sbx.sandbox_id;
  };
  const results = await Promise.allSettled(Array.from({ length: CLIENTS }, (_, i) => one(i)));
  const failures = results.filter((r) => r.status === 'rejected').map((r) => r.reason?.message || String(r.reason));
  assert.deepEqual(failures, [], failures.join('\n'));
  const ids = results.map((r) => r.value);
  assert.equal(new Set(ids).size, CLIENTS, 'every client got its own sandbox');

  const tools = await ctx.tools();
  // Registry: every row is there and removed (sandbox_get), none live.
  for (const id of ids) {
    const got = await tools.ok('sandbox_get', { sandbox_id: id });
    assert.equal(got.status, 'removed', id);
  }
  const live = (await tools.ok('sandbox_list', {})).sandboxes.filter((s) => s.status === 'running');
  const containers = await registryContainers(srv);
  assert.equal(containers.length, live.length, 'engine containers == running rows');
  assert.equal(containers.length, 0);
  assert.doesNotMatch(fs.readFileSync(srv.stderrPath, 'utf8'), /database is locked/);
});

ctx.test('the sandbox limit holds under concurrent creates', async () => {
  const srv = new Server();
  const LIMIT = 3;
  const TRIES = 8;
  try {
    await srv.start({ env: { CHAT2SBX_MAX_ACTIVE_SANDBOXES: String(LIMIT) } });
    const clients = await Promise.all(Array.from({ length: TRIES }, () => srv.client()));
    const answers = await Promise.all(clients.map((c) => srv.tools(c).call('sandbox_create', {}, CREATE_TIMEOUT)));
    const made = answers.filter((r) => !r.isError).map((r) => r.structuredContent.sandbox_id);
    const refused = answers.filter((r) => r.isError);
    assert.equal(made.length, LIMIT, answers.map(resultText).join('\n'));
    for (const r of refused) assert.match(resultText(r), /the sandbox limit is reached: 3 of 3 active/);
    const containers = await registryContainers(srv);
    assert.deepEqual(containers.map((c) => c.Labels[LABEL_SANDBOX]).sort(), [...made].sort());
    const tools = srv.tools(clients[0]);
    const list = await tools.ok('sandbox_list', {});
    assert.equal(list.sandboxes.length, LIMIT, 'refused creates left no row');
    assert.equal((await tools.ok('workspace_list', {})).workspaces.length, LIMIT, 'and no workspace');
    for (const id of made) await tools.destroyQuietly(id);
    assert.equal((await registryContainers(srv)).length, 0);
  } finally {
    await srv.stop();
    await srv.cleanupContainers();
    await srv.removeRoot();
  }
});

ctx.finish();
