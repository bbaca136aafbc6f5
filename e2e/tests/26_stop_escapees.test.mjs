// e2e 26: bash_stop and timeout_ms end every process a session started
// (issue 13), also those that left its process group: `setsid sleep &` and
// a double-forked daemon, while the shell runs and after it has exited,
// checked with ps inside the sandbox; a fork loop of such processes that
// ignore SIGTERM; a session that kills its keeper; a stop after serve was
// restarted. Each session runs below its own keeper process
// (template/helper/keeper.c); its cost is measured here.
import assert from 'node:assert/strict';

import { measure, useServer } from '../lib/server.mjs';

const ctx = useServer();
let sandboxId = null;

ctx.test('setup: create the sandbox these tests share', async () => {
  const sbx = await (await ctx.tools()).create({});
  sandboxId = sbx.sandbox_id;
  assert.equal(sbx.status, 'running');
});

const need = async () => {
  if (!sandboxId) throw new Error('no sandbox (setup failed)');
  return ctx.tools();
};

// One process that calls setsid (`sleep A`) and one daemonized by a double
// fork with its own session and stdio on /dev/null (`sleep B`).
const escapees = (a, b) =>
  `setsid sleep ${a} & ( setsid sh -c 'sleep ${b} &' </dev/null >/dev/null 2>&1 & ); sleep 0.5; `;

// The sandbox's processes running `sleep N` for each N: {N: [{pid, ppid, sid}]}.
async function sleepers(tools, ...durations) {
  const r = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command: 'ps -eo pid=,ppid=,sid=,stat=,args=',
    yield_time_ms: 10_000,
  });
  assert.equal(r.status, 'exited', JSON.stringify(r));
  const found = {};
  for (const n of durations) found[n] = [];
  for (const line of r.output.split('\n')) {
    const m = /^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\S+)\s+sleep (\d+)$/.exec(line);
    if (m && m[5] in found && !m[4].startsWith('Z')) found[m[5]].push({ pid: +m[1], ppid: +m[2], sid: +m[3] });
  }
  return found;
}

// Both escapees run, each in a session of its own (out of the shell's
// process group and session, where a kill of the group cannot reach them).
async function assertEscaped(tools, shellPid, a, b) {
  const s = await sleepers(tools, a, b);
  for (const n of [a, b]) {
    assert.equal(s[n].length, 1, `one 'sleep ${n}' runs: ${JSON.stringify(s)}`);
    assert.notEqual(s[n][0].sid, shellPid, `'sleep ${n}' left the shell's session`);
  }
  assert.equal(s[a][0].sid, s[a][0].pid, `'setsid sleep ${a}' leads its own session`);
}

// Starts the escapees (sleep a, sleep b), then tail; checks they escaped.
async function startEscapees(tools, a, b, tail, args, status) {
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command: `${escapees(a, b)}echo ready; ${tail}`, ...args });
  assert.equal(r.status, status, JSON.stringify(r));
  assert.equal(r.output, 'ready\n');
  await assertEscaped(tools, r.pid, a, b);
  return r;
}

async function assertGone(tools, a, b, { waitMs = 0 } = {}) {
  const deadline = Date.now() + waitMs;
  let s;
  for (;;) {
    s = await sleepers(tools, a, b);
    if (s[a].length === 0 && s[b].length === 0) return;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  assert.fail(`processes of the session survived: ${JSON.stringify(s)}`);
}

async function pollUntilEnded(tools, sessionId, first, maxMs = 20_000) {
  let r = first;
  const deadline = Date.now() + maxMs;
  while (r.status === 'running') {
    assert.ok(Date.now() < deadline, `session ${sessionId} still running: ${JSON.stringify(r)}`);
    r = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: sessionId, yield_time_ms: 5000 });
  }
  return r;
}

ctx.test('bash_stop while the shell runs: setsid sleep and a double-forked sleep are gone', async () => {
  const tools = await need();
  const r = await startEscapees(tools, 300, 301, 'sleep 1000', { yield_time_ms: 3000 }, 'running');
  const s = await tools.ok('bash_stop', { sandbox_id: sandboxId, session_id: r.session_id });
  assert.equal(s.status, 'killed', JSON.stringify(s));
  assert.equal(s.exit_code, 143);
  assert.equal(s.signal, 'SIGTERM');
  await assertGone(tools, 300, 301);
});

ctx.test('bash_stop after the shell exited: the escapees are gone, the exit code stays', async () => {
  const tools = await need();
  const r = await startEscapees(tools, 310, 311, 'exit 4', { yield_time_ms: 10_000 }, 'exited');
  assert.equal(r.exit_code, 4);
  const s = await tools.ok('bash_stop', { sandbox_id: sandboxId, session_id: r.session_id });
  assert.equal(s.status, 'exited', JSON.stringify(s));
  assert.equal(s.exit_code, 4);
  await assertGone(tools, 310, 311);
});

ctx.test('timeout_ms while the shell runs: timed_out, and the escapees are gone', async () => {
  const tools = await need();
  const first = await startEscapees(tools, 320, 321, 'sleep 1000', { timeout_ms: 4000, yield_time_ms: 1500 }, 'running');
  const r = await pollUntilEnded(tools, first.session_id, first);
  assert.equal(r.status, 'timed_out', JSON.stringify(r));
  assert.equal(r.exit_code, 143);
  await assertGone(tools, 320, 321, { waitMs: 5000 });
});

ctx.test('timeout_ms after the shell exited: what it left behind is gone at the expiry', async () => {
  const tools = await need();
  const r = await startEscapees(tools, 330, 331, 'exit 0', { timeout_ms: 5000, yield_time_ms: 10_000 }, 'exited');
  await assertGone(tools, 330, 331, { waitMs: 15_000 });
  const p = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 0 });
  assert.equal(p.status, 'exited', 'the session keeps the shell\'s own status');
  assert.equal(p.exit_code, 0);
});

// The sandbox's live processes whose command line holds marker.
async function countMarked(tools, marker) {
  const r = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command: `ps -eo stat=,args= | grep -v grep | grep -F -- '${marker}' | grep -vc '^Z' || true`,
    yield_time_ms: 10_000,
  });
  return Number.parseInt(r.output.trim(), 10);
}

ctx.test('bash_stop during a fork loop of setsid, setpgid and orphaned children that ignore SIGTERM', async () => {
  const tools = await need();
  // Each round: one child in a new session, one that changes only its
  // process group (python's os.setpgid), one orphaned by its subshell.
  const loop =
    "(trap '' TERM; for i in $(seq 400); do (setsid sleep 4343.5 &); " +
    "(python3 -c 'import os,signal,time; os.setpgid(0,0); signal.signal(signal.SIGTERM, signal.SIG_IGN); " +
    "time.sleep(4343.5)' &); (sleep 4343.5 &); done) & echo ready; sleep 1000";
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command: loop, yield_time_ms: 1500 });
  assert.equal(r.status, 'running', JSON.stringify(r));
  assert.ok((await countMarked(tools, '4343.5')) > 0, 'the loop started');
  const s = await tools.ok('bash_stop', { sandbox_id: sandboxId, session_id: r.session_id });
  assert.equal(s.status, 'killed', JSON.stringify(s));
  assert.equal(await countMarked(tools, '4343.5'), 0, 'every process of the loop is gone once bash_stop answers');
});

ctx.test('a session that kills its own keeper (kill -9 $PPID) leaves nothing running', async () => {
  const tools = await need();
  const r = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command: `${escapees(350, 351)}kill -9 $PPID; sleep 1000`,
    yield_time_ms: 10_000,
  });
  assert.equal(r.status, 'killed', JSON.stringify(r));
  assert.match(r.reason ?? '', /keeper.*SIGKILL/, JSON.stringify(r));
  const s = await tools.ok('bash_stop', { sandbox_id: sandboxId, session_id: r.session_id });
  assert.equal(s.status, 'killed', JSON.stringify(s));
  await assertGone(tools, 350, 351);
});

ctx.test('after a restart of serve (SIGKILL), bash_stop still ends what a running session started', async () => {
  let tools = await need();
  const r = await startEscapees(tools, 360, 361, 'sleep 1000', { yield_time_ms: 3000 }, 'running');
  await ctx.restart('SIGKILL');
  tools = await ctx.tools();
  await assertEscaped(tools, r.pid, 360, 361);
  const s = await tools.ok('bash_stop', { sandbox_id: sandboxId, session_id: r.session_id });
  assert.equal(s.status, 'killed', JSON.stringify(s));
  await assertGone(tools, 360, 361);
});

ctx.test('one keeper per session (and one spare), the shell\'s parent, out of reach of commands; its size', async () => {
  const tools = await need();
  const r = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command:
      'K=$PPID; echo comm=$(cat /proc/$K/comm) ppid=$(ps -o ppid= -p $K | tr -d " "); ' +
      '{ cat /proc/$K/environ >/dev/null && echo LEAK:environ; ls -l /proc/$K/fd/ | grep -q -- "->" && echo LEAK:fd; ' +
      ': >> /proc/$K/fd/3 && echo LEAK:fd3; } 2>/dev/null; ' +
      'echo keeper_rss_kib=$(ps -o rss= -p $K | tr -d " "); echo helper_rss_kib=$(ps -o rss= -p 1 | tr -d " "); ' +
      'busy=0; idle=0; for k in $(pgrep -x chat2sbx-keeper); do ' +
      'if pgrep -P $k >/dev/null; then busy=$((busy+1)); else idle=$((idle+1)); fi; done; ' +
      'echo busy_keepers=$busy idle_keepers=$idle',
    yield_time_ms: 10_000,
  });
  assert.equal(r.status, 'exited', JSON.stringify(r));
  assert.doesNotMatch(r.output, /LEAK/, 'the keeper is not dumpable: its descriptors and environment stay closed');
  const kv = Object.fromEntries(r.output.trim().split(/\s+/).map((x) => x.split('=')));
  assert.equal(kv.comm, 'chat2sbx-keeper', r.output);
  assert.equal(kv.ppid, '1', 'the keeper is the helper\'s child');
  assert.equal(kv.busy_keepers, '1', `only this session has processes left: ${r.output}`);
  assert.ok(+kv.idle_keepers <= 1, `at most one spare keeper waits: ${r.output}`);
  assert.ok(+kv.keeper_rss_kib > 0 && +kv.keeper_rss_kib < 4096, `keeper RSS ${kv.keeper_rss_kib} KiB`);
  ctx.keeperRss = kv.keeper_rss_kib;
  ctx.helperRss = kv.helper_rss_kib;
});

ctx.test('teardown: destroy the sandbox', async () => {
  const tools = await need();
  const d = await tools.ok('sandbox_destroy', { sandbox_id: sandboxId }, { timeout: 90_000 });
  sandboxId = null;
  assert.equal(d.status, 'removed');
});

ctx.onCleanup(async () => {
  if (sandboxId && ctx.srv.alive()) await (await ctx.tools()).destroyQuietly(sandboxId);
  measure({ keeper_rss_kib: ctx.keeperRss ?? 'NA', helper_rss_kib_at_that_time: ctx.helperRss ?? 'NA' });
});

ctx.finish();
