// 02: the bash contract: yield and poll, exit codes, stop, timeout, stdin at
// EOF, output beyond the response cap, and round-trip times for the lead.
import assert from 'node:assert/strict';

import { SESSION_ID_RE, measure, median, useServer } from '../lib/server.mjs';

const ctx = useServer();
let sandboxId = null;

ctx.test('setup: create the sandbox these tests share (timed)', async () => {
  const tools = await ctx.tools();
  const t0 = performance.now();
  const sbx = await tools.create({});
  const createMs = performance.now() - t0;
  sandboxId = sbx.sandbox_id;
  assert.equal(sbx.status, 'running');
  ctx.createMs = Math.round(createMs);
});

const need = async () => {
  if (!sandboxId) throw new Error('no sandbox (setup failed)');
  return ctx.tools();
};

// Polls a session until it is no longer running and nothing more is pending;
// returns {output, last, polls}. Bounded by maxMs.
async function drain(tools, sessionId, first, { yieldMs = 2000, maxMs = 30_000 } = {}) {
  let output = first.output ?? '';
  let last = first;
  let polls = 0;
  const deadline = Date.now() + maxMs;
  while (last.status === 'running' || last.has_more_output) {
    if (Date.now() > deadline) {
      throw new Error(`session ${sessionId} still ${last.status} (has_more_output ${last.has_more_output}) after ${maxMs} ms; output so far ${JSON.stringify(output.slice(-200))}`);
    }
    last = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: sessionId, yield_time_ms: yieldMs });
    assert.equal(last.session_id ?? sessionId, sessionId, 'bash_poll answers for the polled session');
    output += last.output ?? '';
    polls++;
  }
  return { output, last, polls };
}

ctx.test('yield then poll: each line exactly once, in order, and exit 0', async () => {
  const tools = await need();
  const cmd = 'for i in 1 2 3 4 5; do echo line$i; sleep 1; done';
  const first = await tools.ok('bash', { sandbox_id: sandboxId, command: cmd, yield_time_ms: 1000 });
  assert.match(String(first.session_id), SESSION_ID_RE);
  assert.equal(first.status, 'running', `after 1 s of a 5 s loop: ${JSON.stringify(first)}`);
  assert.equal(first.exit_code ?? null, null, 'no exit_code while running');
  assert.equal(typeof first.log_path, 'string', 'bash names its log file');
  const { output, last, polls } = await drain(tools, first.session_id, first);
  assert.equal(output, 'line1\nline2\nline3\nline4\nline5\n', `concatenated output of bash + ${polls} polls`);
  assert.equal(last.status, 'exited', JSON.stringify(last));
  assert.equal(last.exit_code, 0);
});

ctx.test('exit codes are the shell\'s: exit 3', async () => {
  const tools = await need();
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command: 'exit 3' });
  assert.equal(r.status, 'exited', JSON.stringify(r));
  assert.equal(r.exit_code, 3);
});

ctx.test('bash_stop kills a running command within ~3 s', async () => {
  const tools = await need();
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command: 'sleep 1000', yield_time_ms: 500 });
  assert.equal(r.status, 'running', JSON.stringify(r));
  const t0 = performance.now();
  let s = await tools.ok('bash_stop', { sandbox_id: sandboxId, session_id: r.session_id });
  while (s.status === 'running' && performance.now() - t0 < 5000) {
    s = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 1000 });
  }
  const ms = performance.now() - t0;
  assert.equal(s.status, 'killed', `after bash_stop: ${JSON.stringify(s)}`);
  assert.ok(ms < 3500, `stopped in ${Math.round(ms)} ms (want < 3500)`);
  // nothing left behind
  const ps = await tools.ok('bash', { sandbox_id: sandboxId, command: "ps -eo args | grep -c '^sleep 1000' || true" });
  assert.equal(ps.output.trim(), '0', `no 'sleep 1000' survives bash_stop: ${JSON.stringify(ps)}`);
});

ctx.test('timeout_ms ends the command: timed_out', async () => {
  const tools = await need();
  const t0 = performance.now();
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command: 'sleep 30', timeout_ms: 1000, yield_time_ms: 10_000 });
  let last = r;
  while (last.status === 'running' && performance.now() - t0 < 10_000) {
    last = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 2000 });
  }
  const ms = performance.now() - t0;
  assert.equal(last.status, 'timed_out', JSON.stringify(last));
  assert.ok(ms < 8000, `timed out after ${Math.round(ms)} ms (timeout_ms 1000)`);
});

ctx.test('stdin is at end-of-file: cat returns at once', async () => {
  const tools = await need();
  const t0 = performance.now();
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command: 'cat', yield_time_ms: 5000 });
  const ms = performance.now() - t0;
  assert.equal(r.status, 'exited', `cat with no stdin: ${JSON.stringify(r)}`);
  assert.equal(r.exit_code, 0);
  assert.equal(r.output, '');
  assert.ok(ms < 3000, `cat returned in ${Math.round(ms)} ms`);
});

ctx.test('output beyond the response cap arrives through polls without loss', async () => {
  const tools = await need();
  // While the command runs, polls deliver every byte in order (the sleep
  // keeps it running until the output is drained).
  const r = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command: "head -c 200000 /dev/zero | tr '\\0' a; sleep 8",
    yield_time_ms: 3_000,
  });
  assert.equal(r.status, 'running');
  assert.ok(r.output.length < 200_000, `a single response is bounded (got ${r.output.length} chars)`);
  assert.equal(r.has_more_output, true, `has_more_output on the first response: ${JSON.stringify({ ...r, output: `<${r.output.length} chars>` })}`);
  const { output, last, polls } = await drain(tools, r.session_id, r, { yieldMs: 2000, maxMs: 30_000 });
  assert.equal(last.status, 'exited', JSON.stringify({ ...last, output: `<${last.output?.length} chars>` }));
  assert.equal(last.exit_code, 0);
  assert.equal(output.length, 200_000, `total output over bash + ${polls} polls`);
  assert.ok(/^a*$/.test(output), 'only "a" characters');
  // Once it has ended, one answer holds its head and its tail, and the
  // left-out bytes are named (e2e 35 reads them back).
  const e = await tools.ok('bash', { sandbox_id: sandboxId, command: "head -c 200000 /dev/zero | tr '\\0' a; echo; echo end" });
  assert.equal(e.has_more_output, false);
  assert.match(e.output, /^a{30000}\n\[\.\.\. \d+ bytes left out here: bytes 30000 to /);
  assert.match(e.output, /a\nend\n$/);
});

ctx.test('round trip of `bash true` (20 calls, median)', async () => {
  const tools = await need();
  const times = [];
  for (let i = 0; i < 20; i++) {
    const t0 = performance.now();
    const r = await tools.ok('bash', { sandbox_id: sandboxId, command: 'true' });
    times.push(performance.now() - t0);
    assert.equal(r.status, 'exited', JSON.stringify(r));
    assert.equal(r.exit_code, 0);
  }
  ctx.trueP50 = Math.round(median(times) * 10) / 10;
  ctx.trueMax = Math.round(Math.max(...times) * 10) / 10;
});

ctx.test('teardown: destroy (timed) and report measurements', async () => {
  const tools = await need();
  const t0 = performance.now();
  const d = await tools.ok('sandbox_destroy', { sandbox_id: sandboxId }, { timeout: 90_000 });
  const destroyMs = Math.round(performance.now() - t0);
  sandboxId = null;
  ctx.destroyMs = destroyMs;
  assert.equal(d.status, 'removed');
});

// At the end, even after a failure: no sandbox left running, and the numbers.
ctx.onCleanup(async () => {
  if (sandboxId && ctx.srv.alive()) await (await ctx.tools()).destroyQuietly(sandboxId);
  measure({
    sandbox_create_ms: ctx.createMs ?? 'NA',
    bash_true_p50_ms: ctx.trueP50 ?? 'NA',
    bash_true_max_ms: ctx.trueMax ?? 'NA',
    sandbox_destroy_ms: ctx.destroyMs ?? 'NA',
  });
});

ctx.finish();
