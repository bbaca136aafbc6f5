// 11: limits and lifetime of sandboxes (issue 6). sandbox_create's cpus,
// pids_limit, memory and network options reach the engine and the row; bad
// values create nothing; a runtime the engine lacks is refused; gVisor
// (runsc) runs bash without a network when the engine has it (skipped, with
// the reason, when it does not; a runsc registered without --oci-seccomp is
// upgraded first, lib/runtimes.mjs); a sandbox idle past the timeout is removed
// at the next start (clock shifted with CHAT2SBX_CLOCK_OFFSET_MS) while its
// workspace stays; and SIGKILL in the middle of sandbox_create leaves either
// a usable sandbox or a failed row, never an orphan container.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';

import {
  CREATE_TIMEOUT,
  LABEL_REGISTRY,
  REPO_ROOT,
  Server,
  dockerInspect,
  dockerRequest,
  resultText,
  useServer,
} from '../lib/server.mjs';
import { ensureRunscSeccomp } from '../lib/runtimes.mjs';

const ctx = useServer();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Containers of one server's registry (the label's value is its database path).
async function registryContainers(srv) {
  const r = await dockerRequest('GET', '/containers/json?all=1');
  return r.body.filter((c) => String(c.Labels?.[LABEL_REGISTRY] || '').startsWith(srv.dataRoot));
}

// Interfaces the sandbox sees, from the kernel's own table (no ip(8) needed).
async function interfaces(tools, sandboxId) {
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command: 'tail -n +3 /proc/net/dev | cut -d: -f1' });
  assert.equal(r.exit_code, 0, r.output);
  return r.output
    .split('\n')
    .map((s) => s.trim())
    .filter(Boolean)
    .sort();
}

async function restart(signal, env = {}) {
  const srv = ctx.srv;
  for (const c of srv.clients) await c.close().catch(() => {});
  srv.clients.clear();
  if (srv.alive()) {
    srv.proc.kill(signal);
    await srv.exited;
  }
  await srv.start({ env });
  ctx.generation++;
}

ctx.test('cpus, pids_limit, memory and network off reach the engine and the row', async () => {
  const tools = await ctx.tools();
  const cpus = os.cpus().length >= 2 ? '1.5' : '0.5';
  const sbx = await tools.create({ cpus, pids_limit: 200, memory: '256m', network: false });
  try {
    assert.equal(sbx.network, false);
    assert.equal(sbx.cpus, Number(cpus));
    assert.equal(sbx.memory_bytes, 256 * 1024 * 1024);
    const info = await dockerInspect(sbx.sandbox_id);
    assert.equal(info.HostConfig.NanoCpus, Number(cpus) * 1e9);
    assert.equal(info.HostConfig.PidsLimit, 200);
    assert.equal(info.HostConfig.Memory, 256 * 1024 * 1024);
    assert.equal(info.HostConfig.NetworkMode, 'none');
    assert.deepEqual(await interfaces(tools, sbx.sandbox_id), ['lo'], 'only loopback inside');
    const got = await tools.ok('sandbox_get', { sandbox_id: sbx.sandbox_id });
    assert.equal(got.network, false);
    assert.equal(got.cpus, Number(cpus));
    const listed = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === sbx.sandbox_id);
    assert.equal(listed.network, false);
    assert.equal(listed.cpus, Number(cpus));

    // The same workspace again with other options: the running sandbox is
    // returned as it is, and the answer says what differs.
    const again = await tools.create({ workspace_id: sbx.workspace_id, network: true });
    assert.equal(again.sandbox_id, sbx.sandbox_id);
    assert.equal(again.reused, true);
    assert.match(again.options_note ?? '', /network off \(asked on\)/);
    assert.match(again.options_note ?? '', /sandbox_destroy/);
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('defaults: the server pids limit and memory ceiling, network on with an interface besides lo', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  try {
    assert.equal(sbx.network, true);
    assert.equal(sbx.cpus, undefined);
    const info = await dockerInspect(sbx.sandbox_id);
    assert.ok(info.HostConfig.PidsLimit >= 16 && info.HostConfig.PidsLimit <= 4096, 'CHAT2SBX_PIDS_LIMIT auto');
    assert.ok(info.HostConfig.Memory > 0, 'a default memory ceiling (e2e 27 checks its value)');
    assert.equal(info.HostConfig.NanoCpus, 0);
    assert.notEqual(info.HostConfig.NetworkMode, 'none');
    const ifs = await interfaces(tools, sbx.sandbox_id);
    assert.ok(ifs.includes('lo') && ifs.length > 1, JSON.stringify(ifs));
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('invalid limits are refused before anything is created', async () => {
  const tools = await ctx.tools();
  const rows = async () => (await tools.ok('sandbox_list', {})).sandboxes.length;
  const workspaces = async () => (await tools.ok('workspace_list', {})).workspaces.length;
  const before = { rows: await rows(), ws: await workspaces(), containers: (await registryContainers(ctx.srv)).length };
  const cases = [
    [{ cpus: '0' }, /cpus '0' must be greater than 0/],
    [{ cpus: '-1' }, /cpus '-1' must be greater than 0/],
    [{ cpus: 'lots' }, /cpus 'lots' is not a number/],
    [{ cpus: String(os.cpus().length + 1) }, /more than the \d+ CPU/],
    [{ cpus: 0 }, /cpus 0 must be/],
    [{ pids_limit: 5 }, /'pids_limit' is 5; it must be in 16\.\.\d+/],
    [{ pids_limit: 100000 }, /'pids_limit' is 100000; it must be in 16\.\.\d+/],
    [{ pids_limit: 'many' }, /pids_limit/],
    [{ network: 'off' }, /network/],
    [{ memory: '1x' }, /memory '1x'/],
  ];
  for (const [args, re] of cases) {
    const r = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
    assert.equal(r.isError, true, `${JSON.stringify(args)} accepted: ${resultText(r)}`);
    assert.match(resultText(r), re, JSON.stringify(args));
  }
  assert.equal(await rows(), before.rows, 'no sandbox row');
  assert.equal(await workspaces(), before.ws, 'no workspace');
  assert.equal((await registryContainers(ctx.srv)).length, before.containers, 'no container');
});

ctx.test('a runtime the engine does not have is refused with what to do, creating nothing', async () => {
  const srv = new Server();
  try {
    await srv.start({ env: { CHAT2SBX_RUNTIME: 'no-such-runtime' } });
    const tools = srv.tools(await srv.client());
    const r = await tools.call('sandbox_create', {}, CREATE_TIMEOUT);
    assert.equal(r.isError, true, resultText(r));
    assert.match(resultText(r), /no runtime 'no-such-runtime' \(CHAT2SBX_RUNTIME\); it has: .*runc/);
    assert.match(resultText(r), /daemon\.json/);
    assert.equal((await tools.ok('sandbox_list', {})).sandboxes.length, 0);
    assert.equal((await tools.ok('workspace_list', {})).workspaces.length, 0);
    assert.equal((await registryContainers(srv)).length, 0);
  } finally {
    await srv.stop();
    await srv.cleanupContainers();
    await srv.removeRoot();
  }
});

ctx.test('gVisor (runsc): bash works and the network is off', async (t) => {
  const { runsc, why } = await ensureRunscSeccomp();
  if (!runsc) {
    console.log(`e2e 11: runsc test skipped: ${why}`);
    t.skip(why);
    return;
  }
  const info = { Runtimes: { runsc } };
  const srv = new Server();
  try {
    await srv.start({ env: { CHAT2SBX_RUNTIME: 'runsc' } });
    const tools = srv.tools(await srv.client());
    const sbx = await tools.create({});
    try {
      assert.equal(sbx.runtime, 'runsc');
      const insp = await dockerInspect(sbx.sandbox_id);
      assert.equal(insp.HostConfig.Runtime, 'runsc');
      const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo in-gvisor; dmesg 2>/dev/null | head -1' });
      assert.equal(r.exit_code, 0, r.output);
      assert.match(r.output, /^in-gvisor\n/);
      const noNetwork = (info.Runtimes.runsc.runtimeArgs || []).includes('--network=none');
      if (noNetwork) {
        assert.equal(sbx.network, false, 'a runtime registered with --network=none has no network');
        assert.deepEqual(await interfaces(tools, sbx.sandbox_id), ['lo']);
      }
      const off = await tools.create({ network: false });
      try {
        assert.equal(off.network, false);
        assert.deepEqual(await interfaces(tools, off.sandbox_id), ['lo']);
      } finally {
        await tools.destroyQuietly(off.sandbox_id);
      }
    } finally {
      await tools.destroyQuietly(sbx.sandbox_id);
    }
  } finally {
    await srv.stop();
    await srv.cleanupContainers();
    await srv.removeRoot();
  }
});

ctx.test('a sandbox idle past 24 h is removed at the next start; its workspace stays', async () => {
  let tools = await ctx.tools();
  const sbx = await tools.create({});
  const other = await tools.create({});
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'kept.txt', content: 'still here\n' });
  try {
    // 25 hours later (the clock of serve only): reconcile, then the expiry pass at start.
    await restart('SIGTERM', { CHAT2SBX_CLOCK_OFFSET_MS: String(25 * 3600 * 1000) });
    tools = await ctx.tools();
    assert.equal(await dockerInspect(sbx.sandbox_id), null, 'the container is gone');
    const got = await tools.ok('sandbox_get', { sandbox_id: sbx.sandbox_id });
    assert.equal(got.status, 'removed');
    const ws = (await tools.ok('workspace_list', {})).workspaces.find((w) => w.workspace_id === sbx.workspace_id);
    assert.equal(ws?.state, 'retained', JSON.stringify(ws));
    assert.ok(ws.released_at && ws.trash_at, 'the retention clock started');
    assert.equal(fs.readFileSync(path.join(ws.path, 'kept.txt'), 'utf8'), 'still here\n');
    // A call on the removed sandbox says what happened and what to do.
    const r = await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'true' });
    assert.equal(r.isError, true);
    assert.match(resultText(r), /destroyed|removed/);
    // The workspace carries a new sandbox.
    const next = await tools.create({ workspace_id: sbx.workspace_id });
    try {
      const read = await tools.ok('read', { sandbox_id: next.sandbox_id, path: 'kept.txt', line_numbers: false });
      assert.equal(read.content, 'still here\n');
    } finally {
      await tools.destroyQuietly(next.sandbox_id);
    }
    // The other idle one went too, and the audit says why (one row per expiry).
    assert.equal(await dockerInspect(other.sandbox_id), null);
    assert.match(ctx.srv.stderrTail(200), new RegExp(`expired sandbox ${sbx.sandbox_id}: no tool call for`));
  } finally {
    await restart('SIGTERM'); // back to the real clock for the tests below
    tools = await ctx.tools();
    await tools.destroyQuietly(sbx.sandbox_id);
    await tools.destroyQuietly(other.sandbox_id);
  }
});

ctx.test('SIGKILL in the middle of sandbox_create: a usable sandbox or a failed row, no orphan', async () => {
  let tools = await ctx.tools();
  const known = new Set((await registryContainers(ctx.srv)).map((c) => c.Id));
  const pending = tools.call('sandbox_create', {}, CREATE_TIMEOUT).catch((e) => e);
  // Kill serve as soon as the engine has the new container (created, not yet
  // answered). Bounded wait; a create that finished first is killed after.
  let seen = null;
  for (let i = 0; i < 600 && !seen; i++) {
    seen = (await registryContainers(ctx.srv)).find((c) => !known.has(c.Id)) || null;
    if (!seen) await sleep(10);
  }
  ctx.srv.proc.kill('SIGKILL');
  await ctx.srv.exited;
  await pending;
  console.log(`e2e 11: serve killed with the new container ${seen ? `in state ${seen.State}` : 'not yet seen'}`);
  await restart('SIGKILL'); // already dead: just start again
  tools = await ctx.tools();
  const rows = (await tools.ok('sandbox_list', {})).sandboxes;
  const containers = await registryContainers(ctx.srv);
  // Every labelled container belongs to a running row; every running row works.
  const running = rows.filter((s) => s.status === 'running');
  assert.deepEqual(
    containers.map((c) => c.Labels['org.chat2sbx.sandbox']).sort(),
    running.map((s) => s.sandbox_id).sort(),
    `containers ${JSON.stringify(containers.map((c) => [c.Names, c.State]))} vs rows ${JSON.stringify(rows)}`,
  );
  for (const s of rows) {
    if (s.status === 'running') {
      const r = await tools.ok('bash', { sandbox_id: s.sandbox_id, command: 'echo usable' });
      assert.equal(r.output, 'usable\n');
    } else {
      assert.equal(s.status, 'failed', JSON.stringify(s));
      assert.match(s.failure_reason, /stopped while creating/);
    }
    await tools.destroyQuietly(s.sandbox_id);
  }
  assert.equal((await registryContainers(ctx.srv)).length, 0);
});

ctx.test('scripts/engine-runtimes.sh registers runsc in daemon.json without clobbering (temporary files)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'c2s-daemon-json-'));
  const script = path.join(REPO_ROOT, 'scripts', 'engine-runtimes.sh');
  // A stand-in runsc, so the test does not depend on the package.
  const runsc = path.join(dir, 'runsc');
  fs.writeFileSync(runsc, '#!/bin/sh\n', { mode: 0o755 });
  const run = (file, extra = {}) =>
    spawnSync(script, [file], { encoding: 'utf8', env: { ...process.env, RUNSC_PATH: runsc, ...extra } });
  const want = { path: runsc, runtimeArgs: ['--network=none', '--oci-seccomp'] };
  try {
    // No file: a minimal one.
    const fresh = path.join(dir, 'fresh', 'daemon.json');
    assert.equal(run(fresh).status, 0);
    assert.deepEqual(JSON.parse(fs.readFileSync(fresh, 'utf8')), { runtimes: { runsc: want } });
    // An operator's file: merged with each JSON tool, every other setting kept.
    for (const tool of ['jq', 'python3']) {
      const f = path.join(dir, `op-${tool}.json`);
      fs.writeFileSync(f, JSON.stringify({ 'log-level': 'warn', runtimes: { other: { path: '/bin/x' } } }));
      const r = run(f, { MERGE_WITH: tool });
      assert.equal(r.status, 0, r.stderr);
      assert.deepEqual(JSON.parse(fs.readFileSync(f, 'utf8')), {
        'log-level': 'warn',
        runtimes: { other: { path: '/bin/x' }, runsc: want },
      });
      // Again: already there, unchanged.
      const before = fs.readFileSync(f, 'utf8');
      assert.equal(run(f, { MERGE_WITH: tool }).status, 0);
      assert.equal(fs.readFileSync(f, 'utf8'), before);
    }
    // The entry this script wrote before --oci-seccomp existed is upgraded.
    for (const tool of ['jq', 'python3']) {
      const f = path.join(dir, `old-${tool}.json`);
      fs.writeFileSync(f, JSON.stringify({ debug: true, runtimes: { runsc: { path: runsc, runtimeArgs: ['--network=none'] } } }));
      const r = run(f, { MERGE_WITH: tool });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /upgraded the runsc runtime .*--oci-seccomp.*kill -HUP/);
      assert.deepEqual(JSON.parse(fs.readFileSync(f, 'utf8')), { debug: true, runtimes: { runsc: want } });
    }
    // An operator's own runsc entry is theirs (with a warning: no --oci-seccomp).
    const own = path.join(dir, 'own.json');
    fs.writeFileSync(own, '{"runtimes":{"runsc":{"path":"/opt/runsc"}}}');
    const ownRun = run(own);
    assert.equal(ownRun.status, 0);
    assert.match(ownRun.stderr, /no --oci-seccomp.*\n.*refuses CHAT2SBX_RUNTIME=runsc/);
    assert.equal(fs.readFileSync(own, 'utf8'), '{"runtimes":{"runsc":{"path":"/opt/runsc"}}}');
    // Not JSON, or no tool to merge with: refused, file untouched.
    const bad = path.join(dir, 'bad.json');
    fs.writeFileSync(bad, '{ not json');
    const r = run(bad);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /not a JSON object; left as it is/);
    assert.equal(fs.readFileSync(bad, 'utf8'), '{ not json');
    const plain = path.join(dir, 'plain.json');
    fs.writeFileSync(plain, '{"debug":true}');
    const none = run(plain, { MERGE_WITH: 'none' });
    assert.equal(none.status, 1);
    assert.match(none.stderr, /add to it by hand/);
    assert.equal(fs.readFileSync(plain, 'utf8'), '{"debug":true}');
    assert.deepEqual(fs.readdirSync(dir).sort(), [
      'bad.json', 'fresh', 'old-jq.json', 'old-python3.json', 'op-jq.json', 'op-python3.json', 'own.json', 'plain.json', 'runsc',
    ]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

ctx.finish();
