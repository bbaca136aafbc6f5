// 14: operating chat2sbx: `setup` (twice: the second run changes nothing),
// `status --json` while serve runs and its exit status when it does not,
// `doctor` passing on the default configuration and failing, naming the
// attack, when a test-only switch mounts the Docker socket into sandboxes,
// `serve --verify-isolation` refusing to serve in that case, and the systemd
// user unit of `setup --install-service`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, LABEL_REGISTRY, REPO_ROOT, Server, childEnv, dockerRequest, freePort, useServer } from '../lib/server.mjs';

const ctx = useServer();
const UNSAFE = { CHAT2SBX_TEST_UNSAFE_MOUNT_DOCKER_SOCKET: '1' };

// Runs the CLI. root: a directory of this file's own (a fresh data root and
// home below it), or the running server's (default).
function cli(args, { env = {}, root = null, timeout = 120_000 } = {}) {
  const srv = ctx.srv;
  const base = root || srv.root;
  const home = path.join(base, 'home');
  fs.mkdirSync(home, { recursive: true });
  const dataRoot = root ? path.join(root, 'data') : srv.dataRoot;
  const r = spawnSync(BIN, args, {
    cwd: base,
    env: childEnv(env, home, dataRoot, srv.port),
    encoding: 'utf8',
    timeout,
  });
  r.desc =
    `chat2sbx ${args.join(' ')} -> exit ${r.status}${r.signal ? ` (signal ${r.signal})` : ''}` +
    `${r.error ? ` (${r.error.message})` : ''}; stdout: ${String(r.stdout).slice(0, 3000)}; ` +
    `stderr: ${String(r.stderr).slice(-3000)}`;
  return r;
}

function json(r) {
  try {
    return JSON.parse(r.stdout);
  } catch (e) {
    assert.fail(`stdout is not JSON (${e.message}): ${r.desc}`);
  }
}

// A fresh directory of this file's own under the server's root (removed with it).
function freshRoot(name) {
  const dir = path.join(ctx.srv.root, name);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  return dir;
}

const mode = (p) => fs.statSync(p).mode & 0o777;

// Containers of the registry under dataRoot (probes left behind would show here).
async function containersOf(dataRoot) {
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL_REGISTRY}=${path.join(dataRoot, 'state', 'chat2sbx.sqlite')}`] }));
  const r = await dockerRequest('GET', `/containers/json?all=1&filters=${filters}`);
  return r.body;
}

ctx.test('setup twice: the first run makes the data directories, the second changes nothing', () => {
  const root = freshRoot('setup');
  const data = path.join(root, 'data');
  const first = cli(['setup'], { root });
  assert.equal(first.status, 0, first.desc);
  assert.match(first.stdout, /setup: engine +ok: Docker Engine/, first.desc);
  assert.match(first.stdout, /setup: template +ok: .* up to date .*\(nothing to do\)/, 'the template is cached');
  assert.match(first.stdout, /setup: data +changed: created/, first.desc);
  assert.match(first.stdout, /setup: tunnel +ok: disabled/, first.desc);
  assert.match(first.stdout, /next:\n +1\. run 'chat2sbx serve'/, 'it ends with what to do next');
  assert.equal(mode(data), 0o700);
  assert.equal(mode(path.join(data, 'state')), 0o700);
  assert.equal(mode(path.join(data, 'workspaces')), 0o700);
  assert.equal(mode(path.join(data, 'state', 'chat2sbx.sqlite')), 0o600);

  fs.chmodSync(path.join(data, 'workspaces'), 0o755); // drift that setup repairs and reports
  const fix = cli(['setup'], { root });
  assert.equal(fix.status, 0, fix.desc);
  assert.match(fix.stdout, /setup: data +changed: mode of .*workspaces 0755 -> 0700/, fix.desc);
  assert.equal(mode(path.join(data, 'workspaces')), 0o700);

  const again = cli(['setup'], { root });
  assert.equal(again.status, 0, again.desc);
  for (const stepName of ['engine', 'template', 'data', 'tunnel'])
    assert.match(again.stdout, new RegExp(`setup: ${stepName} .*\\(nothing to do\\)`), `${stepName}: ${again.desc}`);
  assert.doesNotMatch(again.stdout, /^setup: (engine|template|data|tunnel) +changed:/m, again.desc);
  assert.match(again.stdout, /setup: nothing changed: everything was already in place/, again.desc);
});

ctx.test('setup with the tunnel enabled names what is missing and what to do next', () => {
  const root = freshRoot('setup-tunnel');
  const r = cli(['setup'], {
    root,
    env: {
      CHAT2SBX_ENABLE_TUNNEL: '1',
      CHAT2SBX_TUNNEL_CLIENT: path.join(root, 'no-such-client'),
      CHAT2SBX_SECRET_DIR: path.join(root, 'secrets'),
    },
  });
  assert.equal(r.status, 0, `missing tunnel secrets are a next step, not a failure: ${r.desc}`);
  assert.match(r.stdout, /setup: tunnel +to do: .*no-such-client/, r.desc);
  assert.match(r.stdout, /store the tunnel id in .*secrets\/tunnel-id and the runtime key in .*secrets\/key/, r.desc);
});

ctx.test('status --json while serve runs: every part answers, exit 0', () => {
  const r = cli(['status', '--json']);
  assert.equal(r.status, 0, r.desc);
  const s = json(r);
  assert.equal(s.ready, true, r.desc);
  assert.equal(s.not_ready_reason, null);
  assert.equal(s.service.running, true);
  assert.equal(s.service.pid, ctx.srv.proc.pid, 'the pid of the serve this file started');
  assert.equal(typeof s.service.uptime_s, 'number');
  assert.match(s.service.version, /^\d+\.\d+\.\d+/);
  assert.equal(s.mcp.endpoint, ctx.srv.url);
  assert.equal(s.mcp.answering, true);
  assert.equal(s.mcp.socket, ctx.srv.socketPath);
  assert.equal(s.mcp.socket_answering, true);
  assert.equal(s.mcp.token_required, true);
  assert.equal(s.mcp.token_file, path.join(ctx.srv.dataRoot, 'state', 'token'));
  assert.ok(!JSON.stringify(s).includes(ctx.srv.token), 'status never prints the token');
  assert.equal(s.tunnel.enabled, false);
  assert.equal(s.engine.reachable, true);
  assert.match(s.engine.api_version, /^1\.\d+$/);
  assert.equal(typeof s.engine.runtime, 'string');
  assert.equal(s.engine.runtime_found, true);
  assert.equal(s.template.present, true);
  assert.match(s.template.hash, /^[0-9a-f]{32}$/, 'the template carries its content hash label');
  assert.equal(typeof s.template.version, 'string');
  assert.ok(s.sandboxes.limit >= 2 && s.sandboxes.limit <= 32, 'derived from this machine by default');
  assert.equal(s.sandboxes.limit_source, 'auto');
  assert.equal(typeof s.sandboxes.active, 'number');
  assert.equal(s.approvals.pending, 0);

  const state = path.join(ctx.srv.dataRoot, 'state', 'serve.json');
  assert.equal(mode(state), 0o600);
  const sj = JSON.parse(fs.readFileSync(state, 'utf8'));
  assert.deepEqual(Object.keys(sj).sort(), [
    'endpoint',
    'pid',
    'socket',
    'started_at_ms',
    'token_file',
    'token_required',
    'tunnel_enabled',
    'version',
  ]);
  assert.equal(sj.endpoint, ctx.srv.url);
  assert.ok(!fs.readFileSync(state, 'utf8').includes(ctx.srv.token), 'serve.json never holds the token');

  const table = cli(['status']);
  assert.equal(table.status, 0, table.desc);
  assert.match(table.stdout, /^chat2sbx status: ready/m);
  assert.match(table.stdout, /^SERVICE +running +pid \d+/m);
  assert.match(table.stdout, /^MCP +answering/m);
});

ctx.test('status reports the tunnel: state, pid, restarts and /readyz of the (stand-in) client', async (t) => {
  const srv = new Server();
  t.after(async () => {
    await srv.stop();
    await srv.cleanupContainers();
    await srv.removeRoot();
  });
  // A root of its own: the secret dir must exist before serve starts.
  srv.root = freshRoot('tunnel-status');
  srv.dataRoot = path.join(srv.root, 'data');
  srv.stderrPath = path.join(srv.root, 'serve.stderr.log');
  srv.stdoutPath = path.join(srv.root, 'serve.stdout.log');
  srv.port = await freePort();
  srv.url = `http://127.0.0.1:${srv.port}/mcp`;
  fs.mkdirSync(path.join(srv.root, 'home'), { recursive: true });
  const secrets = path.join(srv.root, 'secrets');
  fs.mkdirSync(secrets, { mode: 0o700 });
  fs.writeFileSync(path.join(secrets, 'tunnel-id'), `tunnel_${'0123456789abcdef'.repeat(2)}\n`);
  fs.writeFileSync(path.join(secrets, 'key'), 'standin-key\n', { mode: 0o600 });
  const env = {
    CHAT2SBX_ENABLE_TUNNEL: '1',
    CHAT2SBX_TUNNEL_CLIENT: path.join(REPO_ROOT, 'e2e', 'tunnel-standin', 'tunnel-client'),
    CHAT2SBX_SECRET_DIR: secrets,
  };
  await srv.start({ env });
  const status = () =>
    spawnSync(BIN, ['status', '--json'], {
      cwd: srv.root,
      env: childEnv(env, path.join(srv.root, 'home'), srv.dataRoot, srv.port),
      encoding: 'utf8',
      timeout: 30_000,
    });
  let r;
  let s;
  // The client starts after serve listens and is ready after its probe: poll (bounded).
  for (let i = 0; i < 100; i++) {
    r = status();
    s = JSON.parse(r.stdout);
    if (s.tunnel.ready) break;
    await new Promise((res) => setTimeout(res, 200));
  }
  assert.equal(r.status, 0, `stdout: ${r.stdout} stderr: ${r.stderr}`);
  assert.equal(s.tunnel.enabled, true);
  assert.equal(s.tunnel.state, 'running');
  assert.equal(typeof s.tunnel.pid, 'number');
  assert.equal(s.tunnel.restarts, 0);
  assert.equal(s.tunnel.readyz_status, 200);
  assert.match(s.tunnel.health_url, /^http:\/\/127\.0\.0\.1:\d+$/);
  assert.equal(s.ready, true);
  assert.doesNotMatch(r.stdout, /standin-key/, 'status never shows the key');
});

ctx.test('status when serve is down (or its serve.json is stale): not ready, exit 6', () => {
  const root = freshRoot('status-down');
  assert.equal(cli(['setup'], { root }).status, 0);
  let r = cli(['status', '--json'], { root });
  assert.equal(r.status, 6, r.desc);
  let s = json(r);
  assert.equal(s.ready, false);
  assert.equal(s.service.running, false);
  assert.match(s.not_ready_reason, /service is not running/);
  assert.equal(s.engine.reachable, true, 'the other parts are still reported');
  assert.equal(s.template.present, true);

  const dead = spawnSync('true').pid; // a pid that has exited
  fs.writeFileSync(
    path.join(root, 'data', 'state', 'serve.json'),
    JSON.stringify({ pid: dead, started_at_ms: 1, version: '0.0.0', endpoint: 'http://127.0.0.1:1/mcp', tunnel_enabled: false }),
  );
  r = cli(['status', '--json'], { root });
  assert.equal(r.status, 6, r.desc);
  s = json(r);
  assert.equal(s.service.running, false);
  assert.match(s.service.note, /stale/);
});

ctx.test('doctor passes on the default configuration, while serve runs, and leaves nothing behind', async () => {
  const reposRoot = path.join(ctx.srv.root, 'home', 'repositories');
  fs.mkdirSync(reposRoot, { recursive: true }); // the allowed root the git attack works in
  const before = (await containersOf(ctx.srv.dataRoot)).length;
  const r = cli(['doctor', '--json']);
  assert.equal(r.status, 0, r.desc);
  const d = json(r);
  assert.equal(d.passed, true, r.desc);
  const byName = Object.fromEntries(d.checks.map((c) => [c.name, c]));
  for (const name of ['docker_socket', 'host_files', 'host_environment', 'credentials', 'privileges', 'pids_limit',
    'memory_limit', 'setuid_files', 'host_services', 'mcp_token', 'mcp_socket'])
    assert.equal(byName[name]?.result, 'passed', `${name}: ${JSON.stringify(byName[name])}`);
  assert.ok(['passed', 'skipped'].includes(byName.network_off?.result), JSON.stringify(byName.network_off));
  // The direct-mode git attack: its repository, registry rows and probe go.
  assert.equal(byName.direct_git?.result, 'passed', JSON.stringify(byName.direct_git));
  assert.match(byName.direct_git.attack, /write \.git\/config, add a hook/);
  // Its second half: links where git writes through them, each stopped (issue 23).
  assert.equal(byName.direct_git_links?.result, 'passed', JSON.stringify(byName.direct_git_links));
  assert.match(byName.direct_git_links.detail, /each of the 7 plants was moved out of \.git and its sandbox stopped/);
  assert.deepEqual(fs.readdirSync('/tmp').filter((f) => f.startsWith('chat2sbx-doctor-canary-')), [], 'its canary is removed');
  assert.deepEqual(fs.readdirSync(reposRoot).filter((f) => f.startsWith('chat2sbx-doctor-git-')), [], 'its repository is removed');
  assert.ok(!/chat2sbx-doctor-git-/.test(cli(['workspace', 'list']).stdout), 'its workspace row is removed');
  assert.ok(!/chat2sbx-doctor-git-/.test(cli(['approval', 'list']).stdout), 'its approval row is removed');
  // The delta bomb (issue 23): a clone probe's save of it is refused at a
  // bound, and host git without the check stops at the ceiling.
  assert.equal(byName.delta_bomb?.result, 'passed', JSON.stringify(byName.delta_bomb));
  assert.match(byName.delta_bomb.detail, /stopped at the 64 MiB ceiling.*refused at a bound/, byName.delta_bomb.detail);
  assert.deepEqual(fs.readdirSync(reposRoot).filter((f) => f.startsWith('chat2sbx-doctor-bomb-')), [], 'its repository is removed');
  assert.ok(!/chat2sbx-doctor-bomb-/.test(cli(['workspace', 'list']).stdout), 'its workspace row is removed');
  assert.ok(d.checks.every((c) => c.result !== 'failed'));
  assert.equal((await containersOf(ctx.srv.dataRoot)).length, before, 'the probes are removed');
  assert.ok(!fs.readdirSync(ctx.srv.dataRoot).some((f) => f.startsWith('c2s-canary-')), 'the canary is removed');

  const text = cli(['doctor']);
  assert.equal(text.status, 0, text.desc);
  assert.match(text.stdout, /^passed +docker_socket/m);
  assert.match(text.stdout, /every attack failed/);
});

ctx.test('doctor skips the direct-mode git attack, saying why, when no allowed host root exists', async () => {
  const r = cli(['doctor', '--json'], { env: { CHAT2SBX_ALLOWED_HOST_ROOTS: path.join(ctx.srv.root, 'no-such-root') } });
  assert.equal(r.status, 0, r.desc);
  const g = json(r).checks.find((c) => c.name === 'direct_git');
  assert.equal(g?.result, 'skipped', JSON.stringify(g));
  assert.match(g.detail, /no allowed host root .*no-such-root.* exists and is writable/, g.detail);
});

ctx.test('doctor fails, naming the Docker socket attack, when sandboxes get the socket (test-only switch)', async () => {
  const r = cli(['doctor'], { env: UNSAFE });
  assert.equal(r.status, 1, r.desc);
  assert.match(r.stdout, /^FAILED +docker_socket +reach the host's Docker Engine socket/m, r.desc);
  assert.match(r.stdout, /docker\.sock/);
  assert.match(r.stdout, /1 attack succeeded/);
  const j = json(cli(['doctor', '--json'], { env: UNSAFE }));
  assert.equal(j.passed, false);
  assert.deepEqual(
    j.checks.filter((c) => c.result === 'failed').map((c) => c.name),
    ['docker_socket'],
    JSON.stringify(j.checks.filter((c) => c.result === 'failed' && c.name !== 'docker_socket')),
  );
  const left = (await containersOf(ctx.srv.dataRoot)).filter((c) => (c.Mounts || []).some((m) => /docker\.sock/.test(m.Source)));
  assert.deepEqual(left, [], 'the probes are removed even when the doctor fails');
});

ctx.test('serve --verify-isolation refuses to serve when an attack succeeds', async () => {
  const root = freshRoot('verify');
  assert.equal(cli(['setup'], { root }).status, 0);
  const r = cli(['serve', '--verify-isolation'], { root, env: UNSAFE, timeout: 90_000 });
  assert.equal(r.status, 5, r.desc);
  assert.match(r.stderr, /refusing to serve: the isolation probe's attacks succeeded \(docker_socket\)/, r.desc);
  assert.ok(!fs.existsSync(path.join(root, 'data', 'state', 'serve.json')), 'it never listened');
  assert.deepEqual(await containersOf(path.join(root, 'data')), [], 'its probes are removed');
});

ctx.test('setup --install-service writes a systemd user unit that runs serve, without secrets', () => {
  const root = freshRoot('service');
  const secrets = path.join(root, 'secrets');
  fs.mkdirSync(secrets, { recursive: true });
  fs.writeFileSync(path.join(secrets, 'key'), 'sk-runtime-key-must-not-leak\n', { mode: 0o600 });
  const env = { CHAT2SBX_SECRET_DIR: secrets };
  const unit = path.join(root, 'home', '.config', 'systemd', 'user', 'chat2sbx.service');
  const r = cli(['setup', '--install-service'], { root, env });
  const exe = fs.realpathSync(BIN);
  assert.ok(fs.existsSync(unit), `the unit is written: ${r.desc}`);
  const text = fs.readFileSync(unit, 'utf8');
  assert.match(text, new RegExp(`^ExecStart=${exe.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} serve$`, 'm'));
  assert.match(text, new RegExp(`^WorkingDirectory=${fs.realpathSync(root)}$`, 'm'));
  assert.match(text, /^Restart=on-failure$/m);
  assert.match(text, /^\[Install\]\nWantedBy=default\.target$/m);
  assert.doesNotMatch(text, /sk-runtime-key/, 'no secrets in the unit');
  // The settings setup ran with are carried (quoted), test-only ones never.
  assert.match(text, new RegExp(`^Environment="CHAT2SBX_SECRET_DIR=${secrets.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}"$`, 'm'));
  assert.doesNotMatch(text, /CHAT2SBX_TEST_|CHAT2SBX_CLOCK_OFFSET_MS/, 'no test-only setting');
  if (r.status === 0) {
    assert.match(r.stdout, /journalctl --user -u chat2sbx/);
  } else {
    // This machine has no systemd user manager (CI): it says so, nonzero.
    assert.equal(r.status, 6, r.desc);
    assert.match(r.stderr, /systemd's user manager is not available here/, r.desc);
  }
  const printed = cli(['setup', '--print-service'], { root, env });
  assert.equal(printed.status, 0, printed.desc);
  assert.equal(printed.stdout, text, '--print-service prints the same unit');

  const un = cli(['setup', '--uninstall-service'], { root, env });
  assert.equal(un.status, 0, un.desc);
  assert.ok(!fs.existsSync(unit), 'the unit is removed');
});

ctx.finish();
