// Helpers of the scenarios about clone sandboxes and their saved work (23,
// 33, 34, 36): the CLI run against a test serve (its data root, port and
// settings), git on the host with no configuration of the machine, a host
// repository registered as a clone workspace, a byte-for-byte picture of
// what apply must not touch, a command in a sandbox polled to its end, a
// clone sandbox whose copy has finished, and a data root on a small tmpfs
// (28, 34) so a full disk is real.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { BIN, childEnv, freePort } from './server.mjs';

// `chat2sbx args…` as the person runs it beside serve srv (the settings serve
// was last started with, plus env), killed after timeout ms. r.desc
// describes the run for messages.
export function runCli(srv, args, { env = {}, input, timeout = 120_000 } = {}) {
  const r = spawnSync(BIN, args, {
    cwd: srv.root,
    env: childEnv({ ...(srv.env || {}), ...env }, path.join(srv.root, 'home'), srv.dataRoot, srv.port),
    encoding: 'utf8',
    timeout,
    input,
  });
  r.desc =
    `chat2sbx ${args.join(' ')} -> exit ${r.status}${r.signal ? ` (signal ${r.signal})` : ''}; ` +
    `stdout: ${String(r.stdout).slice(0, 3000)}; stderr: ${String(r.stderr).slice(0, 2000)}`;
  return r;
}

// runCli that must succeed with --json output; the parsed answer.
export function runCliJson(srv, args) {
  const r = runCli(srv, args);
  assert.equal(r.status, 0, r.desc);
  return JSON.parse(r.stdout);
}

// git in dir on the host, with no global or system configuration; stdout.
export function git(dir, ...args) {
  const r = spawnSync('git', ['-c', 'user.name=x', '-c', 'user.email=x@y', '-C', dir, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' },
  });
  assert.equal(r.status, 0, `git ${args.join(' ')} in ${dir}: ${r.stderr}`);
  return r.stdout;
}

// Runs command in the sandbox until it ends; it must exit 0. Its output.
export async function sh(tools, sandboxId, command) {
  let r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
  let output = r.output ?? '';
  while (r.status === 'running' || r.has_more_output) {
    r = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 5000 });
    output += r.output ?? '';
  }
  assert.equal(r.exit_code, 0, `${command}: exit ${r.exit_code}; output: ${output}`);
  return output;
}

// A running clone sandbox of the host directory dir, its copy finished.
export async function cloneSandbox(tools, dir) {
  const sbx = await tools.create({ workspace_path: dir, workspace_mode: 'clone' });
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  if (sbx.copy_session_id) {
    let r;
    do r = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: sbx.copy_session_id, yield_time_ms: 10000 });
    while (r.status === 'running');
  }
  return sbx;
}

// sandbox_get's unsaved_work for a running clone, once the clone answered:
// a busy machine may make the first looks "unknown" (they wait at most
// 0.7 s; README, clone mode), so it asks again for up to 20 s.
export async function unsavedWork(tools, sandboxId) {
  let got;
  for (let i = 0; i < 40; i++) {
    got = await tools.ok('sandbox_get', { sandbox_id: sandboxId });
    if (got.unsaved_work !== 'unknown') return got.unsaved_work;
    await new Promise((r) => setTimeout(r, 500));
  }
  return got.unsaved_work;
}

// Prepares srv (not started) with a fresh root whose data root is a tmpfs of
// size ("128m") mounted there; needs root. The mount point, for umount.
export async function tmpfsDataRoot(srv, tag, size) {
  srv.root = await fsp.mkdtemp(path.join(os.tmpdir(), `chat2sbx-e2e-${tag}-`));
  const mnt = path.join(srv.root, 'data');
  fs.mkdirSync(mnt, { mode: 0o700 });
  const m = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size},mode=0700`, 'tmpfs', mnt], { encoding: 'utf8' });
  assert.equal(m.status, 0, m.stderr);
  srv.dataRoot = mnt;
  srv.stderrPath = path.join(srv.root, 'serve.stderr.log');
  srv.stdoutPath = path.join(srv.root, 'serve.stdout.log');
  srv.port = await freePort();
  srv.url = `http://127.0.0.1:${srv.port}/mcp`;
  fs.mkdirSync(path.join(srv.root, 'home', 'repositories'), { recursive: true });
  return mnt;
}

// The end of a scenario on tmpfsDataRoot: serve stopped, its leftover
// containers removed, the tmpfs unmounted, the root removed (kept with
// E2E_KEEP=1).
export async function tmpfsDataRootDone(srv, mnt) {
  await srv.stop();
  await srv.cleanupContainers();
  if (mnt) spawnSync('umount', ['-l', mnt]);
  if (!process.env.E2E_KEEP) await srv.removeRoot();
}

export const EXPORT_ID_RE = /^exp_[a-z2-7]{20}$/;
export const GITID = 'git -c user.name=model -c user.email=model@sandbox';

// Every byte the person owns in the repository dir that apply must not
// touch: the working tree, the index, local branches and tags, HEAD, the config.
export function hostState(dir) {
  const h = crypto.createHash('sha256');
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (d === dir && e.name === '.git') continue;
      const p = path.join(d, e.name);
      h.update(`${path.relative(dir, p)}\0`);
      if (e.isDirectory()) walk(p);
      else h.update(fs.readFileSync(p));
    }
  };
  walk(dir);
  const g = path.join(dir, '.git');
  return {
    tree: h.digest('hex'),
    index: fs.readFileSync(path.join(g, 'index')).toString('base64'),
    head: fs.readFileSync(path.join(g, 'HEAD'), 'utf8'),
    config: fs.readFileSync(path.join(g, 'config'), 'utf8'),
    local: git(dir, 'for-each-ref', '--format=%(objectname) %(refname)', 'refs/heads', 'refs/tags', 'refs/stash'),
    others: git(dir, 'for-each-ref', '--format=%(refname)').split('\n').filter((r) => r && !r.startsWith('refs/remotes/chat2sbx/') && !/^refs\/(heads|tags)\//.test(r)),
    status: git(dir, 'status', '--porcelain=v1', '--ignored'),
  };
}

// The helpers bound to ctx (useServer's): they read ctx.srv when called, so
// a restarted serve is used as it is then. hostRepo(name) makes a host
// repository with two branches and a tag, registered as a clone workspace.
export function cloneHelpers(ctx) {
  const home = () => path.join(ctx.srv.root, 'home');
  const reposRoot = () => path.join(home(), 'repositories');
  const cli = (args, opts) => runCli(ctx.srv, args, opts);
  const cliJson = (args) => runCliJson(ctx.srv, args);
  function hostRepo(name) {
    const dir = path.join(reposRoot(), name);
    fs.mkdirSync(dir, { recursive: true });
    git(dir, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n');
    fs.writeFileSync(path.join(dir, '.gitignore'), 'build/\n');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-qm', 'first');
    git(dir, 'checkout', '-qb', 'feature');
    fs.writeFileSync(path.join(dir, 'f.txt'), 'feature\n');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-qm', 'on feature');
    git(dir, 'checkout', '-q', 'main');
    git(dir, 'tag', 'v1');
    const r = cli(['workspace', 'add', dir, '--mode', 'clone']);
    assert.equal(r.status, 0, r.desc);
    return dir;
  }
  return { home, reposRoot, cli, cliJson, git, hostRepo, hostState, sh, cloneSandbox, GITID };
}
