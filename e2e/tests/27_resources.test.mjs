// e2e 27: one sandbox cannot take the host down (issue 13, memory and
// processes). Every sandbox has a memory ceiling (the default derived from
// this machine unless asked), no swap on top, and is the kernel's first
// choice when memory runs out, while serve lowers its own score; a process
// that allocates past the ceiling is killed alone and the sandbox stays
// usable; process limits that would let the sandboxes exhaust the host's
// process table are refused with the numbers.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, CREATE_TIMEOUT, Server, childEnv, dockerInspect, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

function status(srv, env = {}) {
  const r = spawnSync(BIN, ['status', '--json'], {
    cwd: srv.root,
    env: childEnv(env, path.join(srv.root, 'home'), srv.dataRoot, srv.port),
    encoding: 'utf8',
  });
  return JSON.parse(r.stdout);
}

const MIB = 1024 * 1024;

ctx.test('a sandbox created without memory gets the default ceiling, no swap, and oom_score_adj 500', async () => {
  const tools = await ctx.tools();
  const st = status(ctx.srv);
  const want = st.sandboxes.default_memory_bytes;
  const host = st.sandboxes.host_memory_bytes;
  assert.equal(want, Math.min(Math.floor(host / 2 / MIB) * MIB, 8 * 1024 * MIB), 'half the memory, at most 8 GiB');
  const sbx = await tools.create({});
  try {
    assert.equal(sbx.memory_bytes, want, 'the answer shows the ceiling');
    const got = await tools.ok('sandbox_get', { sandbox_id: sbx.sandbox_id });
    assert.equal(got.memory_bytes, want);
    const info = await dockerInspect(sbx.sandbox_id);
    assert.equal(info.HostConfig.Memory, want);
    assert.equal(info.HostConfig.MemorySwap, want, 'memory + swap = memory: no swap');
    assert.equal(info.HostConfig.OomScoreAdj, 500);
    const inside = await tools.ok('bash', {
      sandbox_id: sbx.sandbox_id,
      command:
        'cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes; cat /proc/self/oom_score_adj',
    });
    const [limit, adj] = inside.output.trim().split('\n');
    assert.equal(Number(limit), want, inside.output);
    assert.equal(Number(adj), 500);
    // The total of ceilings is in status.
    const after = status(ctx.srv);
    assert.ok(after.sandboxes.memory_ceilings_bytes >= want);
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

// Lowering a score needs CAP_SYS_RESOURCE (some containers run root without it).
function hasSysResource() {
  const m = /CapEff:\s+([0-9a-f]+)/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
  return m && (BigInt(`0x${m[1]}`) & (1n << 24n)) !== 0n;
}

ctx.test('serve lowers its own oom_score_adj, or says why it cannot', () => {
  const adj = Number(fs.readFileSync(`/proc/${ctx.srv.proc.pid}/oom_score_adj`, 'utf8'));
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  if (hasSysResource()) {
    assert.equal(adj, -500);
    assert.match(log, /oom_score_adj -500: when memory runs out the kernel picks/);
  } else {
    assert.equal(adj, 0);
    assert.match(log, /cannot lower serve's oom_score_adj \(Permission denied; it needs CAP_SYS_RESOURCE\)/);
  }
});

ctx.test('allocating past a small ceiling kills only that process; the sandbox stays usable', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({ memory: '64m' });
  try {
    const hog = await tools.ok(
      'bash',
      { sandbox_id: sbx.sandbox_id, command: 'perl -e \'$x = "a" x (400*1024*1024); print "survived\\n"\'', yield_time_ms: 30_000 },
      CREATE_TIMEOUT,
    );
    assert.equal(hog.status, 'exited', JSON.stringify(hog));
    assert.equal(hog.exit_code, 137, `the hog is killed (SIGKILL): ${hog.output}`);
    assert.doesNotMatch(hog.output, /survived/);
    const ok = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo still here' });
    assert.equal(ok.output, 'still here\n');
    const info = await dockerInspect(sbx.sandbox_id);
    assert.equal(info.State.Running, true, 'the container was not restarted or killed');
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('memory above the machine and pids_limit above its share are refused with the numbers', async () => {
  const tools = await ctx.tools();
  const st = status(ctx.srv);
  const tooMuch = `${Math.ceil(st.sandboxes.host_memory_bytes / (1024 * MIB)) + 1}g`;
  let r = await tools.call('sandbox_create', { memory: tooMuch }, CREATE_TIMEOUT);
  assert.equal(r.isError, true);
  assert.match(resultText(r), /is more than this machine has \(\d+ MiB\)/);
  const cap = st.sandboxes.pids_cap;
  r = await tools.call('sandbox_create', { pids_limit: cap + 1 }, CREATE_TIMEOUT);
  assert.equal(r.isError, true);
  assert.match(resultText(r), new RegExp(`pids_limit ${cap + 1} is outside the accepted range 16-${cap}`));
  assert.match(resultText(r), /kernel's process limit/);
  assert.ok(st.sandboxes.limit >= 2 && st.sandboxes.limit <= 32, 'a finite sandbox count by default');
  assert.equal(st.sandboxes.limit_source, 'auto');
  assert.ok((st.sandboxes.limit + 0) * st.sandboxes.pids_cap <= st.sandboxes.pids_budget);
  const list = await tools.ok('sandbox_list', {});
  assert.equal(list.max_active_sandboxes, st.sandboxes.limit);
});

ctx.test('serve refuses a CHAT2SBX_PIDS_LIMIT the host cannot hold for every sandbox, naming the numbers', async () => {
  const srv = new Server();
  try {
    await assert.rejects(
      srv.start({ env: { CHAT2SBX_MAX_ACTIVE_SANDBOXES: '16', CHAT2SBX_PIDS_LIMIT: '32768' } }),
      /CHAT2SBX_PIDS_LIMIT 32768 is too high for this machine: 16 sandboxes at once .* set at most \d+/s,
    );
  } finally {
    await srv.stop();
    await srv.removeRoot();
  }
});

ctx.finish();
