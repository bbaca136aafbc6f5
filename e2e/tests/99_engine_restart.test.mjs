// 99 (runs last): what survives trouble below chat2sbx. The helper, PID 1 of
// every sandbox, ignores `kill -TERM 1` from inside; a container the engine
// restarts comes back under the same sandbox_id with its ended sessions (exit
// code and output kept) and its running ones reported lost, their output so
// far readable; and with the Docker Engine itself stopped, a tool call fails
// at once with a message naming the engine, then, once the engine is started
// again, the sandbox recovers the same way (its container has the restart
// policy unless-stopped), and the host-edge firewall is still in place.
// THE LAST TEST STOPS AND RESTARTS THE SHARED DOCKER ENGINE (dockerd): it
// disturbs anything else using the engine at that moment.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import net from 'node:net';

import {
  BIN,
  DOCKER_SOCKET,
  REPO_ROOT,
  childEnv,
  dockerInspect,
  dockerRequest,
  resultText,
  useServer,
} from '../lib/server.mjs';

const ctx = useServer();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waits (bounded) until cond() is truthy; returns its value.
async function waitFor(what, cond, maxMs = 60_000, stepMs = 250) {
  const deadline = Date.now() + maxMs;
  for (;;) {
    const v = await cond().catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${maxMs} ms`);
    await sleep(stepMs);
  }
}

// The first tool call after a restart may meet the channel while it is being
// torn down; a re-attach follows. Retried a bounded number of times.
async function okAfterRestart(tools, name, args) {
  let last;
  for (let i = 0; i < 20; i++) {
    const r = await tools.call(name, args);
    if (!r.isError) return r.structuredContent;
    last = resultText(r);
    if (!/not answering|cannot be reached|restarting|does not answer/.test(last)) break;
    await sleep(500);
  }
  throw new Error(`${name} after a restart: ${last}`);
}

// Polls a session until nothing more is pending; returns {output, last}.
async function drain(tools, sandboxId, sessionId, first) {
  let output = first?.output ?? '';
  let last = first;
  for (let i = 0; i < 50 && (!last || last.status === 'running' || last.has_more_output); i++) {
    last = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: sessionId, yield_time_ms: 1000 });
    output += last.output ?? '';
  }
  return { output, last };
}

function listed(list, sessionId) {
  const s = list.sessions.find((x) => x.session_id === sessionId);
  assert.ok(s, `session ${sessionId} is listed: ${JSON.stringify(list)}`);
  return s;
}

// A direct workspace on a fresh git repository (20_direct_git has the
// details): its .git is mounted over the sandbox's view, config read-only.
function directRepo() {
  const dir = path.join(ctx.srv.root, 'home', 'repositories', 'engine-restart-repo');
  fs.mkdirSync(dir, { recursive: true });
  const g = spawnSync('git', ['init', '-q', dir], { encoding: 'utf8' });
  assert.equal(g.status, 0, g.stderr);
  const r = spawnSync(BIN, ['workspace', 'add', dir, '--mode', 'direct', '--json'], {
    cwd: ctx.srv.root,
    env: childEnv(ctx.srv.env || {}, path.join(ctx.srv.root, 'home'), ctx.srv.dataRoot, ctx.srv.port),
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout).workspace_id;
}

// The .git protection as the sandbox sees it: .git/config refuses a write,
// and the seven .git mounts are there.
const GIT_GUARD_PROBE = 'echo x >> /workspace/.git/config 2>&1; grep -c " /workspace/.git" /proc/self/mountinfo';
function assertGitGuard(output, when) {
  assert.match(output, /Read-only file system/, `${when}: .git/config is read-only: ${output}`);
  assert.match(output, /^7$/m, `${when}: the .git mounts are there: ${output}`);
}

// Starts a finished and a running session; returns what they answered.
async function twoSessions(tools, sandboxId, tag) {
  const fin = await tools.ok('bash', { sandbox_id: sandboxId, command: `echo ${tag}-fin; exit 3` });
  assert.equal(fin.status, 'exited');
  assert.equal(fin.exit_code, 3);
  assert.equal(fin.output, `${tag}-fin\n`);
  const long = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command: `echo ${tag}-long; sleep 600`,
    yield_time_ms: 1500,
  });
  assert.equal(long.status, 'running');
  return { fin, long };
}

// After the restart: the ended session keeps its status, exit code and log;
// the running one is lost, with a reason, and its output so far arrives once.
async function checkRecovered(tools, sandboxId, tag, { fin, long }) {
  const list = await tools.ok('bash_list', { sandbox_id: sandboxId });
  const f = listed(list, fin.session_id);
  assert.equal(f.status, 'exited', JSON.stringify(f));
  assert.equal(f.exit_code, 3);
  const l = listed(list, long.session_id);
  assert.equal(l.status, 'lost', JSON.stringify(l));
  assert.equal(l.exit_code ?? null, null, 'a lost session has no exit code');
  assert.match(l.reason ?? '', /the sandbox restarted at .*the command was interrupted/, JSON.stringify(l));

  const pf = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: fin.session_id });
  assert.equal(pf.status, 'exited');
  assert.equal(pf.exit_code, 3);
  const { output, last } = await drain(tools, sandboxId, long.session_id, long);
  assert.equal(last.status, 'lost', JSON.stringify(last));
  assert.equal(output, `${tag}-long\n`, 'the output written before the restart, exactly once');
  for (const s of [fin, long]) {
    const r = await tools.ok('read', { sandbox_id: sandboxId, path: s.log_path, line_numbers: false });
    assert.match(r.content, new RegExp(`${tag}-(fin|long)\\n`), `log ${s.log_path} is readable`);
  }
  const again = await tools.ok('bash', { sandbox_id: sandboxId, command: 'echo new-session' });
  assert.equal(again.output, 'new-session\n');
}

ctx.test('the helper ignores kill -TERM 1 from inside; the container restarts unless stopped', async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const info = await dockerInspect(sbx.sandbox_id);
  assert.equal(info.HostConfig.RestartPolicy?.Name, 'unless-stopped', JSON.stringify(info.HostConfig.RestartPolicy));
  const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'kill -TERM 1; kill -INT 1; echo sent' });
  assert.equal(r.output, 'sent\n');
  const again = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo still here' });
  assert.equal(again.output, 'still here\n');
  const after = await dockerInspect(sbx.sandbox_id);
  assert.equal(after.State.Running, true);
  assert.equal(after.State.StartedAt, info.State.StartedAt, 'the container was not restarted');
});

ctx.test('a container restarted by the engine: same sandbox, ended sessions kept, running ones lost', async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const sessions = await twoSessions(tools, sbx.sandbox_id, 'crs');
  const before = await dockerInspect(sbx.sandbox_id);
  const res = await dockerRequest('POST', `/containers/${sbx.sandbox_id}/restart?t=10`);
  assert.equal(res.status, 204, JSON.stringify(res.body));
  const after = await dockerInspect(sbx.sandbox_id);
  assert.equal(after.State.Running, true);
  assert.notEqual(after.State.StartedAt, before.State.StartedAt, 'it did restart');

  await okAfterRestart(tools, 'bash', { sandbox_id: sbx.sandbox_id, command: 'true' });
  await checkRecovered(tools, sbx.sandbox_id, 'crs', sessions);
  const row = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === sbx.sandbox_id);
  assert.equal(row?.status, 'running', JSON.stringify(row));
  assert.match(ctx.srv.stderrTail(400), new RegExp(`sandbox ${sbx.sandbox_id} was restarted`), 'serve logs it');
});

ctx.test('a container stopped from outside: failed with the reason, destroyed, the workspace takes a new one', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  // A stop by hand is not undone by the restart policy.
  const res = await dockerRequest('POST', `/containers/${sbx.sandbox_id}/stop?t=10`);
  assert.equal(res.status, 204, JSON.stringify(res.body));
  const r = await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'true' });
  assert.equal(r.isError, true, JSON.stringify(r));
  assert.match(resultText(r), /has failed .*sandbox_destroy/, resultText(r));
  const row = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === sbx.sandbox_id);
  assert.equal(row?.status, 'failed', JSON.stringify(row));
  assert.match(row.failure_reason ?? '', /exited/, JSON.stringify(row));
  assert.equal((await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id })).status, 'removed');
  assert.equal(await dockerInspect(sbx.sandbox_id), null, 'the container is gone');
  const next = await tools.create({ workspace_id: sbx.workspace_id });
  try {
    assert.notEqual(next.sandbox_id, sbx.sandbox_id);
    assert.equal(next.reused, false);
    assert.equal((await tools.ok('bash', { sandbox_id: next.sandbox_id, command: 'echo fresh' })).output, 'fresh\n');
  } finally {
    await tools.destroyQuietly(next.sandbox_id);
  }
});

// ---- the engine itself ----

function dockerdPid() {
  try {
    const pid = Number(fs.readFileSync('/var/run/docker.pid', 'utf8').trim());
    return pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

function ensureEngine() {
  return spawnSync(path.join(REPO_ROOT, 'scripts', 'ensure-engine.sh'), [], {
    encoding: 'utf8',
    timeout: 120_000,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function engineAnswers() {
  try {
    return (await dockerRequest('GET', '/_ping')).status === 200;
  } catch {
    return false;
  }
}

ctx.test('the engine stopped: calls fail at once naming it; started again: the sandbox recovers', async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo on-its-own-disk > /root/kept.txt' });
  const sessions = await twoSessions(tools, sbx.sandbox_id, 'eng');
  const direct = await tools.create({ workspace_id: directRepo() });
  t.after(() => tools.destroyQuietly(direct.sandbox_id));
  assertGitGuard((await tools.ok('bash', { sandbox_id: direct.sandbox_id, command: GIT_GUARD_PROBE })).output, 'before');

  const pid = dockerdPid();
  assert.ok(pid && alive(pid), 'dockerd runs and wrote /var/run/docker.pid');
  try {
    process.kill(pid, 'SIGTERM');
    await waitFor('dockerd exits after SIGTERM', async () => !alive(pid), 90_000);

    // A call that needs the engine returns (well within the client's patience)
    // with a message that names the engine's socket and what to do.
    const r = await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'echo hi' }, { timeout: 30_000 });
    assert.equal(r.isError, true, JSON.stringify(r));
    const text = resultText(r);
    assert.match(text, /Docker Engine/, text);
    assert.ok(text.includes(DOCKER_SOCKET), `names the socket: ${text}`);
    assert.match(text, /does not answer|cannot reach/, text);
    assert.match(text, /start/, 'says what to do');
    // The registry is not changed by the engine being away.
    const row = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === sbx.sandbox_id);
    assert.equal(row?.status, 'running', JSON.stringify(row));
  } finally {
    if (!(await engineAnswers())) {
      const st = ensureEngine();
      assert.equal(st.status, 0, `scripts/ensure-engine.sh: ${st.stderr}`);
    }
  }
  assert.ok(await engineAnswers(), 'the engine answers again');
  // No live-restore: the engine stopped every container; the restart policy
  // starts this one again.
  await waitFor('the sandbox container runs again', async () => {
    const c = await dockerInspect(sbx.sandbox_id);
    return c?.State?.Running && !c.State.Restarting;
  });

  const kept = await okAfterRestart(tools, 'bash', { sandbox_id: sbx.sandbox_id, command: 'cat /root/kept.txt' });
  assert.equal(kept.output, 'on-its-own-disk\n', 'the same container, its own disk kept');
  await checkRecovered(tools, sbx.sandbox_id, 'eng', sessions);
  const got = await tools.ok('sandbox_get', { sandbox_id: sbx.sandbox_id });
  assert.equal(got.status, 'running', JSON.stringify(got).slice(0, 500));
  assert.match(ctx.srv.stderrTail(400), new RegExp(`sandbox ${sbx.sandbox_id} was restarted`), 'serve logs it');
  await checkHostEdge(tools, sbx.sandbox_id);
  // The direct sandbox: the engine mounted its .git paths again, the
  // re-attach verified them from inside, and they still protect.
  await waitFor('the direct sandbox container runs again', async () => {
    const c = await dockerInspect(direct.sandbox_id);
    return c?.State?.Running && !c.State.Restarting;
  });
  const g = await okAfterRestart(tools, 'bash', { sandbox_id: direct.sandbox_id, command: GIT_GUARD_PROBE });
  assertGitGuard(g.output, 'after the engine restart');
});

// The host-edge firewall (issue 12) after the engine rewrote its own
// iptables-nft tables: table inet chat2sbx is still exactly in place, serve
// never had to put it back (it would have logged so), and a host listener on
// 0.0.0.0 is still out of the recovered sandbox's reach.
async function checkHostEdge(tools, sandboxId) {
  const home = path.join(ctx.srv.root, 'home');
  const r = spawnSync(BIN, ['status', '--json'], {
    cwd: ctx.srv.root,
    env: childEnv({}, home, ctx.srv.dataRoot, ctx.srv.port),
    encoding: 'utf8',
    timeout: 60_000,
  });
  const fw = JSON.parse(r.stdout).firewall;
  assert.equal(fw.state, 'installed', `after the engine restart: ${JSON.stringify(fw)}`);
  assert.doesNotMatch(ctx.srv.stderrTail(2000), /the firewall was not in place/, 'the engine left the table alone');
  let reached = 0;
  const server = net.createServer((c) => {
    reached++;
    c.destroy();
  });
  await new Promise((resolve) => server.listen(0, '0.0.0.0', resolve));
  try {
    const gateway = (await dockerInspect(sandboxId)).NetworkSettings.Networks.chat2sbx.Gateway;
    const { port } = server.address();
    const out = await okAfterRestart(tools, 'bash', {
      sandbox_id: sandboxId,
      command: `timeout 3 bash -c 'exec 3<>/dev/tcp/${gateway}/${port}' 2>/dev/null && echo open || echo closed`,
      yield_time_ms: 20_000,
    });
    assert.equal(out.output, 'closed\n', 'the sandbox reached a host listener after the engine restart');
    assert.equal(reached, 0);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

ctx.finish();
