// 18: no bash output is lost when serve is killed (SIGKILL) with a call in
// flight. The helper keeps, per session, the output the control plane
// acknowledged; an answer that went out while serve was dead (or whose caller
// had gone) is delivered again after serve re-attaches. Every line arrives
// exactly once across the answers the client received.
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';

import { useServer } from '../lib/server.mjs';

const ctx = useServer();

const CMD = 'for i in $(seq 1 16); do echo line$i; sleep 0.5; done';
const ALL = Array.from({ length: 16 }, (_, i) => `line${i + 1}\n`).join('');

// kill -9 serve (calls in flight fail in transport), keep it down for downMs
// (answers the helper writes meanwhile reach nobody), start it again on the
// same data root.
async function killAndRestart(downMs = 0) {
  const srv = ctx.srv;
  srv.proc.kill('SIGKILL');
  await srv.exited;
  await sleep(downMs);
  for (const c of srv.clients) await c.close().catch(() => {});
  srv.clients.clear();
  await srv.start();
  ctx.generation++; // the shared client belonged to the old process
}

// The session of CMD in a sandbox (its first answer never came back).
async function sessionOf(tools, sandboxId) {
  const got = await tools.ok('sandbox_get', { sandbox_id: sandboxId });
  const s = (got.bash_sessions ?? []).find((x) => x.command === CMD);
  assert.ok(s, `the session is listed after the restart: ${JSON.stringify(got.bash_sessions)}`);
  return s.session_id;
}

// Polls until the session ended and nothing is left; returns the output.
async function drain(tools, sandboxId, sessionId) {
  let output = '';
  let last = { status: 'running' };
  const deadline = Date.now() + 60_000;
  while (last.status === 'running' || last.has_more_output) {
    if (Date.now() > deadline) throw new Error(`session ${sessionId} did not end: ${JSON.stringify(last)}`);
    last = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: sessionId, yield_time_ms: 2000 });
    output += last.output ?? '';
  }
  assert.equal(last.status, 'exited', JSON.stringify(last));
  assert.equal(last.exit_code, 0);
  assert.equal(last.total_output_bytes, ALL.length);
  return output;
}

// A call that is expected to die with serve: resolves to its result or error.
function inFlight(tools, name, args) {
  return tools.call(name, args).then(
    (res) => ({ res }),
    (error) => ({ error }),
  );
}

// The text of a bash answer the client did receive, or '' when it died.
function received(outcome) {
  const sc = outcome.res?.structuredContent;
  return outcome.res && !outcome.res.isError && sc ? (sc.output ?? '') : '';
}

ctx.test('kill -9 during an in-flight bash: after the restart bash_poll returns all 16 lines once', async (t) => {
  let tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(sbx.sandbox_id)));
  const call = inFlight(tools, 'bash', { sandbox_id: sbx.sandbox_id, command: CMD, yield_time_ms: 20000 });
  await sleep(2000);
  await killAndRestart();
  const first = await call;
  tools = await ctx.tools();
  const sessionId = await sessionOf(tools, sbx.sandbox_id);
  const output = received(first) + (await drain(tools, sbx.sandbox_id, sessionId));
  assert.equal(output, ALL);
});

ctx.test('kill -9 during an in-flight bash, restarted after the answer went nowhere: nothing lost', async (t) => {
  let tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(sbx.sandbox_id)));
  const call = inFlight(tools, 'bash', { sandbox_id: sbx.sandbox_id, command: CMD, yield_time_ms: 20000 });
  await sleep(2000);
  // The command ends (after 8 s) while serve is down: the helper answers the
  // bash call then, and that answer reaches nobody.
  await killAndRestart(8000);
  const first = await call;
  tools = await ctx.tools();
  const sessionId = await sessionOf(tools, sbx.sandbox_id);
  const output = received(first) + (await drain(tools, sbx.sandbox_id, sessionId));
  assert.equal(output, ALL);
});

ctx.test('kill -9 during an in-flight bash_poll: every line arrives exactly once', async (t) => {
  let tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(sbx.sandbox_id)));
  const started = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: CMD, yield_time_ms: 1000 });
  assert.equal(started.status, 'running');
  let output = started.output;
  // Drain what is there, then leave one poll waiting for the next line.
  let r = started;
  while (r.has_more_output) {
    r = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: started.session_id, yield_time_ms: 0 });
    output += r.output;
  }
  const poll = inFlight(tools, 'bash_poll', {
    sandbox_id: sbx.sandbox_id,
    session_id: started.session_id,
    yield_time_ms: 20000,
  });
  await sleep(100);
  // Down for 2 s: the waiting poll is answered with the next lines meanwhile.
  await killAndRestart(2000);
  output += received(await poll);
  tools = await ctx.tools();
  output += await drain(tools, sbx.sandbox_id, started.session_id);
  assert.equal(output, ALL);
});

ctx.finish();
