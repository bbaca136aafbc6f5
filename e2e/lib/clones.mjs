// Clone sandboxes and their exports, shared by the scenarios that save
// work (23, 33): the person's CLI against the test's data root, git on the
// host with no config of the machine, a host repository registered as a
// clone workspace, a byte-for-byte picture of what apply must not touch,
// bash in a sandbox that must succeed, and a clone sandbox whose copy is
// done.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, childEnv } from './server.mjs';

export const EXPORT_ID_RE = /^exp_[a-z2-7]{20}$/;

// The helpers over ctx (useServer's): they read ctx.srv when called, so a
// restarted serve is used as it is then.
export function cloneHelpers(ctx) {
  const home = () => path.join(ctx.srv.root, 'home');
  const reposRoot = () => path.join(home(), 'repositories');
  function cli(args, { env = {}, input } = {}) {
    const srv = ctx.srv;
    const r = spawnSync(BIN, args, {
      cwd: srv.root,
      env: childEnv({ ...(srv.env || {}), ...env }, home(), srv.dataRoot, srv.port),
      encoding: 'utf8',
      timeout: 120_000,
      input,
    });
    r.desc =
      `chat2sbx ${args.join(' ')} -> exit ${r.status}${r.signal ? ` (signal ${r.signal})` : ''}; ` +
      `stdout: ${String(r.stdout).slice(0, 3000)}; stderr: ${String(r.stderr).slice(0, 2000)}`;
    return r;
  }

  function cliJson(args) {
    const r = cli(args);
    assert.equal(r.status, 0, r.desc);
    return JSON.parse(r.stdout);
  }

  function git(dir, ...args) {
    const r = spawnSync('git', ['-c', 'user.name=x', '-c', 'user.email=x@y', '-C', dir, ...args], {
      encoding: 'utf8',
      timeout: 30_000,
      env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' },
    });
    assert.equal(r.status, 0, `git ${args.join(' ')} in ${dir}: ${r.stderr}`);
    return r.stdout;
  }

  // A host repository with two branches, registered as a clone workspace.
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

  // Every byte the person owns in the repository that apply must not touch:
  // the working tree, the index, local branches and tags, HEAD, the config.
  function hostState(dir) {
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

  async function sh(tools, sandboxId, command) {
    let r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
    let output = r.output ?? '';
    while (r.status === 'running' || r.has_more_output) {
      r = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 5000 });
      output += r.output ?? '';
    }
    assert.equal(r.exit_code, 0, `${command}: exit ${r.exit_code}; output: ${output}`);
    return output;
  }

  async function cloneSandbox(tools, dir) {
    const sbx = await tools.create({ workspace_path: dir, workspace_mode: 'clone' });
    assert.equal(sbx.status, 'running', JSON.stringify(sbx));
    if (sbx.copy_session_id) {
      let r;
      do r = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: sbx.copy_session_id, yield_time_ms: 10000 });
      while (r.status === 'running');
    }
    return sbx;
  }

  const GITID = 'git -c user.name=model -c user.email=model@sandbox';

  return { home, reposRoot, cli, cliJson, git, hostRepo, hostState, sh, cloneSandbox, GITID };
}
