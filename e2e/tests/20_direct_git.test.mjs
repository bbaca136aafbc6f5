// 20: a direct-mode sandbox cannot script the owner's git (issue 12, item 3).
// The approved directory is mounted read-write, so without protection a
// sandbox writes core.fsmonitor into .git/config (or a hook, or a
// .git/commondir that swaps the whole configuration) and the owner's next
// `git status` or `git commit` on the host runs it as the owner. Here:
//   - inside, ordinary git keeps working (add, commit, branch, checkout,
//     status, log, stash) and every way of planting fails: git config,
//     writing .git/config, a lock file renamed over it, adding or changing
//     a hook, .git/commondir, config.worktree, modules/, worktrees/,
//     `mv .git`, `rm -rf .git`;
//   - on the host afterwards the owner's git status and git commit run
//     nothing the sandbox planted (each plant would touch a marker file);
//   - a symlink or a wrong type planted at a protected path (what an
//     earlier sandbox could leave) refuses the create, naming the path,
//     and leaves no sandbox row or container behind;
//   - a gitfile (linked worktree) is read-only; a gitfile naming a git dir
//     inside the directory is refused;
//   - the owner rewriting .git/config on the host while the sandbox runs
//     drops the mount inside (the kernel detaches a replaced mount point):
//     the next call stops the sandbox and says why;
//   - a container restart mounts the same paths again and they are
//     verified again; a path changed meanwhile fails the sandbox.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { cli as cliOf, cliJson as cliJsonOf, hostGitOk, makeRepo as makeRepoOf, registerDirect as registerOf, reposRoot as reposRootOf, run, sh } from '../lib/direct_git.mjs';
import { CREATE_TIMEOUT, dockerInspect, dockerRequest, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

const reposRoot = () => reposRootOf(ctx);
const cli = (args) => cliOf(ctx, args);
const cliJson = (args) => cliJsonOf(ctx, args);
const makeRepo = (name) => makeRepoOf(ctx, name);
const registerDirect = (dir) => registerOf(ctx, dir);

// What the owner's git reads, byte for byte.
function gitSnapshot(dir) {
  const g = path.join(dir, '.git');
  const list = (d) => (fs.existsSync(d) ? fs.readdirSync(d).sort() : null);
  const read = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8') : null);
  const hooks = {};
  for (const h of list(path.join(g, 'hooks')) || []) hooks[h] = read(path.join(g, 'hooks', h));
  return {
    config: read(path.join(g, 'config')),
    configWorktree: read(path.join(g, 'config.worktree')),
    commondir: read(path.join(g, 'commondir')),
    hooks,
    modules: list(path.join(g, 'modules')),
    worktrees: list(path.join(g, 'worktrees')),
    gitIno: fs.lstatSync(g).ino,
  };
}

async function containersOfWorkspace(wsId) {
  const filters = encodeURIComponent(JSON.stringify({ label: [`org.chat2sbx.workspace=${wsId}`] }));
  const r = await dockerRequest('GET', `/containers/json?all=1&filters=${filters}`);
  return (r.body || []).map((c) => c.Names?.[0]);
}

ctx.test('inside a direct sandbox git works and nothing planted reaches the owner\'s git', async (t) => {
  const tools = await ctx.tools();
  const repo = makeRepo('owner-repo');
  const wsId = registerDirect(repo);
  const sbx = await tools.create({ workspace_id: wsId });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const id = sbx.sandbox_id;
  // The placeholders of protected paths that did not exist.
  const before = gitSnapshot(repo);
  assert.equal(before.commondir, '.\n', 'commondir placeholder');
  assert.equal(before.configWorktree, '', 'config.worktree placeholder');
  assert.deepEqual(before.modules, []);
  assert.deepEqual(before.worktrees, []);

  // Ordinary git inside (the identity goes to the sandbox's own global
  // config: the repository's config is read-only).
  const work = await sh(
    tools,
    id,
    [
      'set -e',
      'cd /workspace',
      'git config --global user.email model@sandbox && git config --global user.name model',
      'echo change >> README && git add README && git commit -q -m "from the sandbox"',
      'git branch feature && git checkout -q feature && echo f > f.txt && git add f.txt && git commit -q -m feature',
      'git checkout -q main && echo wip >> README && git stash -q && git stash list | grep -q stash@ && git stash pop -q',
      'git status --short && git log --oneline | head -3 && echo GIT-OK',
    ].join('\n'),
  );
  assert.match(work, /GIT-OK/, work);

  // Every way of planting something the owner's git would run. Each plant
  // touches a marker in the host directory when run.
  const mark = (kind) => path.join(repo, `PWNED-${kind}`);
  const hookBody = (kind) => `#!/bin/sh\\ntouch ${mark(kind)}\\n`;
  const attacks = [
    ['git config', `cd /workspace && git config core.fsmonitor 'touch ${mark('gitconfig')}; false'`, /could not (lock|commit|write)|Read-only|busy/i],
    ['append to .git/config', `printf '[core]\\n\\tfsmonitor = touch ${mark('append')}; false\\n' >> /workspace/.git/config`, /Read-only file system/],
    [
      'lock file renamed over .git/config',
      `cd /workspace/.git && cp config config.lock && printf '[core]\\n\\tfsmonitor = touch ${mark('rename')}; false\\n' >> config.lock && mv -f config.lock config`,
      /busy|Read-only/i,
    ],
    ['add a hook', `printf '${hookBody('newhook')}' > /workspace/.git/hooks/post-commit && chmod +x /workspace/.git/hooks/post-commit`, /Read-only file system/],
    ['change a hook', `echo 'touch ${mark('oldhook')}' >> /workspace/.git/hooks/pre-commit`, /Read-only file system/],
    ['remove the hooks', 'rm -rf /workspace/.git/hooks', /busy|Read-only/i],
    [
      'redirect commondir',
      `mkdir -p /workspace/evil/objects /workspace/evil/refs && printf '[core]\\n\\tfsmonitor = touch ${mark('commondir')}; false\\n' > /workspace/evil/config && echo ../evil > /workspace/.git/commondir`,
      /Read-only file system/,
    ],
    ['config.worktree', `printf '[core]\\n\\tfsmonitor = touch ${mark('worktreeconfig')}; false\\n' > /workspace/.git/config.worktree`, /Read-only file system/],
    ['plant a submodule git dir', 'mkdir /workspace/.git/modules/sub', /Read-only file system/],
    ['plant a worktree git dir', 'ln -s /workspace/evil /workspace/.git/worktrees/wt', /Read-only file system/],
    ['mv .git', 'mv /workspace/.git /workspace/git.moved', /busy/i],
    ['swap .git by exchange', 'mkdir -p /workspace/fake && python3 -c \'import ctypes,sys\nl=ctypes.CDLL(None,use_errno=True)\nr=l.renameat2(-100,b"/workspace/.git",-100,b"/workspace/fake",2)\nsys.exit("renameat2: "+__import__("os").strerror(ctypes.get_errno()) if r else 0)\'', /busy|Invalid argument/i], // gVisor has no RENAME_EXCHANGE (EINVAL): refused too
  ];
  const results = [];
  for (const [name, command, expect] of attacks) {
    const r = await run(tools, id, `${command} 2>&1`);
    results.push(`${name}: exit ${r.code}: ${r.output.trim().split('\n').pop()}`);
    assert.notEqual(r.code, 0, `${name} succeeded: ${r.output}`);
    assert.match(r.output, expect, `${name}: ${r.output}`);
  }
  console.log(`attacks (each failed):\n  ${results.join('\n  ')}`);

  // The owner on the host: the sandbox's commits are there, the owner's
  // git status and commit (which runs hooks and core.fsmonitor) run nothing
  // of the sandbox's, and what git reads is unchanged.
  const after = gitSnapshot(repo);
  assert.deepEqual(after, before, 'the protected parts of .git are unchanged');
  assert.match(hostGitOk(repo, 'log', '--oneline', 'main'), /from the sandbox/);
  assert.match(hostGitOk(repo, 'branch', '--list', 'feature'), /feature/);
  hostGitOk(repo, 'status');
  hostGitOk(repo, 'commit', '-q', '--allow-empty', '-m', 'owner');
  hostGitOk(repo, 'checkout', '-q', 'feature');
  hostGitOk(repo, 'checkout', '-q', 'main');
  const planted = fs.readdirSync(repo).filter((f) => f.startsWith('PWNED-'));
  assert.deepEqual(planted, [], `the owner's git ran what the sandbox planted: ${planted.join(', ')}`);

  // rm -rf .git last: the mount points and what is mounted read-only stay
  // (the rest of .git is the sandbox's to delete, as README says).
  const rm = await run(tools, id, 'rm -rf /workspace/.git 2>&1');
  assert.notEqual(rm.code, 0, rm.output);
  assert.match(rm.output, /busy|Read-only/i, rm.output);
  const afterRm = gitSnapshot(repo);
  assert.equal(afterRm.config, before.config);
  assert.deepEqual(afterRm.hooks, before.hooks);
  assert.equal(afterRm.gitIno, before.gitIno);
});

ctx.test('a planted symlink or a wrong type at a protected path refuses the create and leaves nothing', async (t) => {
  const tools = await ctx.tools();
  const outside = path.join(ctx.srv.root, 'outside');
  fs.mkdirSync(outside, { recursive: true });
  fs.writeFileSync(path.join(outside, 'secret'), 'host secret\n');
  const cases = [
    ['hooks -> /', (d) => { fs.rmSync(path.join(d, '.git/hooks'), { recursive: true }); fs.symlinkSync('/', path.join(d, '.git/hooks')); }, /\.git\/hooks' is a symbolic link \(to '\/'\)/],
    ['config -> a host file', (d) => { fs.rmSync(path.join(d, '.git/config')); fs.symlinkSync(path.join(outside, 'secret'), path.join(d, '.git/config')); }, /\.git\/config' is a symbolic link/],
    ['modules -> outside', (d) => fs.symlinkSync(outside, path.join(d, '.git/modules')), /\.git\/modules' is a symbolic link/],
    ['commondir -> a file', (d) => fs.symlinkSync(path.join(outside, 'secret'), path.join(d, '.git/commondir')), /\.git\/commondir' is a symbolic link/],
    ['.git -> another repository', (d) => { fs.renameSync(path.join(d, '.git'), path.join(outside, `git-${path.basename(d)}`)); fs.symlinkSync(path.join(outside, `git-${path.basename(d)}`), path.join(d, '.git')); }, /\/\.git' is a symbolic link/],
    ['hooks is a file', (d) => { fs.rmSync(path.join(d, '.git/hooks'), { recursive: true }); fs.writeFileSync(path.join(d, '.git/hooks'), 'x'); }, /\.git\/hooks' is a regular file where git keeps a directory/],
    ['commondir names another directory', (d) => fs.writeFileSync(path.join(d, '.git/commondir'), '../evil\n'), /commondir' names '\.\.\/evil'/],
    ['gitfile names a git dir inside', (d) => { fs.renameSync(path.join(d, '.git'), path.join(d, '.realgit')); fs.writeFileSync(path.join(d, '.git'), 'gitdir: .realgit\n'); }, /names the git directory .*\.realgit', which lies inside/],
  ];
  for (const [name, plant, expect] of cases) {
    const dir = makeRepo(`planted-${name.replace(/[^a-z]+/gi, '-')}`);
    plant(dir);
    const wsId = registerDirect(dir);
    const res = await tools.call('sandbox_create', { workspace_id: wsId }, CREATE_TIMEOUT);
    const text = resultText(res);
    if (!res.isError) await tools.destroyQuietly(res.structuredContent?.sandbox_id);
    assert.equal(res.isError, true, `${name}: the create went through: ${text}`);
    assert.match(text, expect, `${name}: ${text}`);
    assert.match(text, /nothing was created|use clone mode|remove the file/, `${name}: says what to do: ${text}`);
    assert.deepEqual(await containersOfWorkspace(wsId), [], `${name}: no container is left`);
    const list = await tools.ok('sandbox_list', {});
    const rows = (list.sandboxes || []).filter((s) => s.workspace_id === wsId);
    assert.deepEqual(rows, [], `${name}: no sandbox row is left: ${JSON.stringify(rows)}`);
    console.log(`${name}: refused: ${text.slice(0, 160)}`);
  }
  // A refusal creates no placeholder, and removing the plant is enough.
  const dir = makeRepo('planted-then-fixed');
  fs.rmSync(path.join(dir, '.git/hooks'), { recursive: true });
  fs.symlinkSync('/', path.join(dir, '.git/hooks'));
  const wsId = registerDirect(dir);
  const res = await tools.call('sandbox_create', { workspace_id: wsId }, CREATE_TIMEOUT);
  assert.equal(res.isError, true, resultText(res));
  assert.ok(!fs.existsSync(path.join(dir, '.git/commondir')), 'no placeholder after a refusal');
  assert.ok(!fs.existsSync(path.join(dir, '.git/config.worktree')), 'no placeholder after a refusal');
  fs.unlinkSync(path.join(dir, '.git/hooks'));
  const ok = await tools.create({ workspace_id: wsId });
  t.after(() => tools.destroyQuietly(ok.sandbox_id));
  // (No ls here: gVisor answers coreutils' statx with EINVAL on bind mounts.)
  const r = await run(
    tools,
    ok.sandbox_id,
    'n=0; for f in /workspace/.git/hooks/*; do [ -e "$f" ] && n=$((n+1)); done; echo $n; touch /workspace/.git/hooks/x 2>&1',
  );
  assert.notEqual(r.code, 0, r.output);
  assert.match(r.output, /^0\n.*Read-only/s, r.output);
});

ctx.test('a gitfile (linked worktree) is read-only; no .git means nothing is mounted over the directory', async (t) => {
  const tools = await ctx.tools();
  const main = makeRepo('wt-main');
  const wt = path.join(reposRoot(), 'wt-linked');
  hostGitOk(main, 'worktree', 'add', '-q', wt);
  const gitfile = fs.readFileSync(path.join(wt, '.git'), 'utf8');
  const sbx = await tools.create({ workspace_id: registerDirect(wt) });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const r = await run(tools, sbx.sandbox_id, `printf 'gitdir: /workspace/evil\\n' > /workspace/.git 2>&1`);
  assert.notEqual(r.code, 0, r.output);
  assert.match(r.output, /Read-only file system/, r.output);
  assert.equal(fs.readFileSync(path.join(wt, '.git'), 'utf8'), gitfile);
  const mv = await run(tools, sbx.sandbox_id, 'mv /workspace/.git /workspace/x 2>&1');
  assert.notEqual(mv.code, 0, mv.output);

  const plain = path.join(reposRoot(), 'not-a-repo');
  fs.mkdirSync(plain, { recursive: true });
  const p = await tools.create({ workspace_id: registerDirect(plain) });
  t.after(() => tools.destroyQuietly(p.sandbox_id));
  const mounts = await sh(tools, p.sandbox_id, "awk '{print $5}' /proc/self/mountinfo | grep '^/workspace' ");
  assert.deepEqual(mounts.trim().split('\n'), ['/workspace'], mounts);
});

ctx.test('the owner rewriting .git/config on the host while the sandbox runs stops the sandbox at the next call', async (t) => {
  const tools = await ctx.tools();
  const repo = makeRepo('host-rewrite');
  const sbx = await tools.create({ workspace_id: registerDirect(repo) });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const first = await run(tools, sbx.sandbox_id, 'echo x >> /workspace/.git/config 2>&1');
  assert.match(first.output, /Read-only/, first.output);
  // git writes config.lock and renames it over config: the kernel then
  // detaches the read-only mount inside the container.
  hostGitOk(repo, 'config', 'owner.setting', 'yes');
  const res = await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'echo x >> /workspace/.git/config; echo WROTE' });
  const text = resultText(res);
  assert.equal(res.isError, true, `a command ran after the protection was lost: ${text}`);
  assert.match(text, /has failed/, text);
  assert.match(text, /\.git\/config' was replaced or removed on the host/, text);
  assert.doesNotMatch(fs.readFileSync(path.join(repo, '.git/config'), 'utf8'), /^x$/m);
  const info = await dockerInspect(sbx.sandbox_id);
  assert.equal(info?.State?.Running, false, `the container is stopped: ${JSON.stringify(info?.State)}`);
  const list = await tools.ok('sandbox_list', {});
  const row = (list.sandboxes || []).find((s) => s.sandbox_id === sbx.sandbox_id);
  assert.equal(row?.status, 'failed', JSON.stringify(row));
});

ctx.test('a container restart mounts the same .git paths again and verifies them; a changed one fails the sandbox', async (t) => {
  const tools = await ctx.tools();
  const repo = makeRepo('restart');
  const sbx = await tools.create({ workspace_id: registerDirect(repo) });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const id = sbx.sandbox_id;
  let r = await dockerRequest('POST', `/containers/${id}/restart?t=0`);
  assert.equal(r.status, 204, JSON.stringify(r));
  const deadline = Date.now() + 60_000;
  let out;
  for (;;) {
    const res = await tools.call('bash', { sandbox_id: id, command: 'echo x >> /workspace/.git/config 2>&1; grep -c " /workspace/.git" /proc/self/mountinfo', yield_time_ms: 10_000 });
    if (!res.isError) {
      out = res.structuredContent?.output ?? '';
      break;
    }
    assert.match(resultText(res), /retry|cannot be reached/, resultText(res));
    assert.ok(Date.now() < deadline, resultText(res));
    await new Promise((x) => setTimeout(x, 500));
  }
  assert.match(out, /Read-only file system/, `after the restart .git/config is read-only again: ${out}`);
  assert.match(out, /^7$/m, `the seven .git mounts are there again: ${out}`);

  // Stopped, a protected directory replaced on the host, started again.
  r = await dockerRequest('POST', `/containers/${id}/stop?t=0`);
  assert.ok(r.status === 204 || r.status === 304, JSON.stringify(r));
  fs.renameSync(path.join(repo, '.git/hooks'), path.join(repo, '.git/hooks.old'));
  fs.mkdirSync(path.join(repo, '.git/hooks'));
  r = await dockerRequest('POST', `/containers/${id}/start`);
  assert.ok(r.status === 204 || r.status === 304, JSON.stringify(r));
  let text = '';
  for (;;) {
    const res = await tools.call('bash', { sandbox_id: id, command: 'echo RAN', yield_time_ms: 5000 });
    text = resultText(res);
    assert.equal(res.isError, true, `a command ran with a changed .git/hooks: ${text}`);
    if (/has failed/.test(text)) break;
    assert.ok(Date.now() < deadline + 30_000, text);
    await new Promise((x) => setTimeout(x, 500));
  }
  assert.match(text, /\.git\/hooks/, text);
});

// gVisor shows its own device and inode numbers for bind mounts, so the
// identity check from inside only runs under runc (as in 16_mount_race).
const RUNTIME = process.env.CHAT2SBX_RUNTIME || '';
const IDENTITY_SKIP = RUNTIME && RUNTIME !== 'runc' ? `the identity check does not apply to runtime ${RUNTIME}` : false;

ctx.test('.git/hooks swapped with a symlink from the host while it is mounted: refused or verified, never the outside', { skip: IDENTITY_SKIP }, async (t) => {
  const tools = await ctx.tools();
  const CANARY = 'chat2sbx-git-guard-canary-51c2';
  const outside = path.join(ctx.srv.root, 'outside-hooks');
  fs.mkdirSync(outside, { recursive: true });
  fs.writeFileSync(path.join(outside, 'CANARY'), `${CANARY}\n`);
  const repo = makeRepo('hooks-race');
  const wsId = registerDirect(repo);
  const hooks = path.join(repo, '.git/hooks');
  // Outside .git (still the same file system, so the exchange works): a
  // link anywhere in .git is refused before any mount is tried (e2e 32).
  const alt = path.join(repo, 'hooks-alt');
  // Placeholders first (one create), so every later create reaches the
  // engine with the same list of paths.
  const first = await tools.create({ workspace_id: wsId });
  await tools.ok('sandbox_destroy', { sandbox_id: first.sandbox_id }, CREATE_TIMEOUT);
  fs.symlinkSync(outside, alt);
  const swapper = spawn(
    'python3',
    ['-c', 'import ctypes,sys\nl=ctypes.CDLL(None,use_errno=True)\na=sys.argv[1].encode();b=sys.argv[2].encode()\nwhile True:\n l.renameat2(-100,a,-100,b,2)\n', hooks, alt],
    { stdio: 'ignore' },
  );
  t.after(() => swapper.kill('SIGKILL'));
  const kinds = {};
  try {
    for (let i = 0; i < 20; i++) {
      const res = await tools.call('sandbox_create', { workspace_id: wsId }, CREATE_TIMEOUT);
      const text = resultText(res);
      let kind;
      if (res.isError) {
        assert.match(
          text,
          /symbolic link|changed while it was being (mounted|checked|prepared)|disappeared while|replaced or removed on the host|error mounting "[^"]*\.git\/hooks"|are not the ones asked for/,
          text,
        );
        kind = /sees .* at \/workspace\/\.git\/hooks/.test(text)
          ? 'refused inside (fs.stat)'
          : /are not the ones asked for/.test(text)
            ? 'refused inside (mount table)'
            : /error mounting/.test(text)
              ? 'refused by the engine (runc lost the race)'
              : 'refused before the mount';
      } else {
        const id = res.structuredContent.sandbox_id;
        const r = await tools.call('bash', { sandbox_id: id, command: 'cat /workspace/.git/hooks/CANARY 2>&1; ls /workspace/.git/hooks | head -3' });
        const out = resultText(r);
        assert.ok(!out.includes(CANARY), `sandbox ${id} sees the outside directory: ${out}`);
        kind = r.isError ? 'created, then stopped (host-side change)' : 'created, verified';
        await tools.destroyQuietly(id);
      }
      kinds[kind] = (kinds[kind] || 0) + 1;
      assert.ok(!text.includes(CANARY), text);
    }
  } finally {
    swapper.kill('SIGKILL');
  }
  console.log(`hooks swap attempts: ${JSON.stringify(kinds)}`);
  const list = await tools.ok('sandbox_list', {});
  const live = (list.sandboxes || []).filter((x) => x.workspace_id === wsId && (x.status === 'running' || x.status === 'creating'));
  assert.deepEqual(live, [], JSON.stringify(live));
  assert.deepEqual(await containersOfWorkspace(wsId), [], 'every refused create removed its container');
});

ctx.test('the approval message, approval list and approve say what direct mode still allows', async () => {
  const tools = await ctx.tools();
  const dir = makeRepo('approval-note');
  const res = await tools.call('sandbox_create', { workspace_path: dir, workspace_mode: 'direct' }, CREATE_TIMEOUT);
  const sc = res.structuredContent ?? JSON.parse(resultText(res));
  assert.equal(sc.status, 'approval_required', JSON.stringify(sc));
  const NOTE = /Direct mode: the sandbox works on the directory itself, as root\. The repository's \.git configuration and hooks stay read-only to it, but it can change or delete every other file: build files and scripts that run when you next build or test there \(Makefile, package\.json scripts, \.envrc/;
  assert.match(sc.message, NOTE, sc.message);
  assert.match(sc.message, /repositories nested in the directory, whose own git configuration your git runs/);
  assert.match(sc.message, /Nothing in \.git may be anything but a regular file or a directory: a symbolic link, FIFO or device it puts there .* is moved into chat2sbx's quarantine/);
  const list = cli(['approval', 'list']);
  assert.equal(list.status, 0, list.desc);
  assert.match(list.stdout, NOTE, list.desc);
  const row = cliJson(['approval', 'list', '--json']).find((a) => a.approval_id === sc.approval_id);
  assert.match(row?.note ?? '', NOTE, JSON.stringify(row));
  const ok = cli(['approval', 'approve', sc.approval_id]);
  assert.equal(ok.status, 0, ok.desc);
  assert.match(ok.stdout, NOTE, ok.desc);
  // Clone mode says none of it.
  const c = await tools.call('sandbox_create', { workspace_path: dir, workspace_mode: 'clone' }, CREATE_TIMEOUT);
  const cc = c.structuredContent ?? JSON.parse(resultText(c));
  assert.doesNotMatch(cc.message, /Direct mode:/, cc.message);
  cli(['approval', 'reject', cc.approval_id]);
});

ctx.finish();
