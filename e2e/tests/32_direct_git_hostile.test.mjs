// 32: a direct sandbox cannot point the owner's git outside the directory
// (issue 23, item 1). git on the host follows symlinks when it appends
// reflogs (logs/HEAD, logs/refs/...) and writes COMMIT_EDITMSG, MERGE_MSG,
// SQUASH_MSG, FETCH_HEAD, ORIG_HEAD, TAG_EDITMSG, and creates refs and
// objects below a linked directory; a FIFO makes it hang. So nothing in a
// direct workspace's .git may be anything but a regular file or a
// directory. Here:
//   - ordinary git inside (add, commit, branch, checkout, stash, rebase,
//     merge, tag, fetch, gc) trips nothing, and a hard link into .git from
//     the rest of the workspace is impossible (a mount of its own: EXDEV);
//   - each plant from inside (reflogs, COMMIT_EDITMSG, MERGE_MSG,
//     SQUASH_MSG, FETCH_HEAD, ORIG_HEAD, TAG_EDITMSG, a symlinked logs/ and
//     objects/info/, a link moved in with mv, a FIFO) is moved out of the
//     repository within moments and the sandbox stopped and marked failed,
//     saying what, where it went and what to check; the owner's ordinary
//     git stash, commit, merge, fetch, rebase and tag on the host then work
//     and change no host file outside the directory; the commit the
//     sandbox made before is there;
//   - a link left in .git (by an earlier sandbox) refuses the create,
//     naming it, and creates nothing; once removed, the create works.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { cli, hostGit, hostGitOk, makeRepo, registerDirect, run, sh } from '../lib/direct_git.mjs';
import { CREATE_TIMEOUT, dockerInspect, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

// Every file below dir (names, types, link targets, contents), to see that
// nothing outside the repository changed.
function tree(dir) {
  const out = {};
  const walk = (d) => {
    for (const name of fs.readdirSync(d).sort()) {
      const p = path.join(d, name);
      const st = fs.lstatSync(p);
      const rel = path.relative(dir, p);
      if (st.isDirectory()) {
        out[rel] = 'dir';
        walk(p);
      } else if (st.isSymbolicLink()) out[rel] = `link ${fs.readlinkSync(p)}`;
      else if (st.isFile()) out[rel] = `file ${st.size} ${fs.readFileSync(p, 'utf8')}`;
      else out[rel] = 'special';
    }
  };
  walk(dir);
  return out;
}

async function statusOf(tools, id) {
  return tools.ok('sandbox_get', { sandbox_id: id });
}

// Waits until sandbox id is failed; returns its record.
async function untilFailed(tools, id, ms = 15_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const s = await statusOf(tools, id);
    if (s.status === 'failed') return s;
    assert.ok(Date.now() < deadline, `sandbox ${id} still ${s.status} ${ms} ms after the plant`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

// How long path existed as something other than a regular file or a
// directory, watched from the host every 2 ms until stop() (ms; -1 never seen).
function watchPlant(p) {
  let seen = 0, gone = 0, stopped = false;
  const loop = (async () => {
    while (!stopped) {
      let bad = false;
      try {
        const st = fs.lstatSync(p);
        bad = !st.isFile() && !st.isDirectory();
      } catch {
        /* not there */
      }
      const now = performance.now();
      if (bad && !seen) seen = now;
      if (!bad && seen && !gone) gone = now;
      if (seen && gone) return;
      await new Promise((r) => setTimeout(r, 2));
    }
  })();
  return async () => {
    await new Promise((r) => setTimeout(r, 20));
    stopped = true;
    await loop;
    return seen ? (gone || performance.now()) - seen : -1;
  };
}

ctx.test('ordinary git inside a direct sandbox makes only files and directories: nothing is stopped', async (t) => {
  const tools = await ctx.tools();
  const repo = makeRepo(ctx, 'ordinary');
  const sbx = await tools.create({ workspace_id: registerDirect(ctx, repo) });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const id = sbx.sandbox_id;
  const out = await sh(
    tools,
    id,
    [
      'set -e',
      'cd /workspace',
      'git config --global user.email model@sandbox && git config --global user.name model',
      'git config --global init.defaultBranch main',
      'echo a >> README && git add README && git commit -q -m one',
      'git branch side && git checkout -q side && echo s > s.txt && git add s.txt && git commit -q -m side',
      'git checkout -q main && echo b > b.txt && git add b.txt && git commit -q -m two',
      'echo wip >> README && git stash -q && git stash list | grep -q stash@ && git stash pop -q && git checkout -q README',
      'git merge -q --no-edit side',
      'git checkout -q -b topic HEAD~1 && echo t > t.txt && git add t.txt && git commit -q -m topic && git rebase -q main',
      'git checkout -q main && git merge -q --squash topic && git commit -q -m squashed',
      'git tag -a -m tagged v1',
      'git clone -q --bare /workspace /tmp/up && git fetch -q /tmp/up main:fetched',
      'git reset -q --hard HEAD && git gc -q',
      'git log --oneline | head -3 && echo GIT-OK',
    ].join('\n'),
  );
  assert.match(out, /GIT-OK/, out);
  // A hard link cannot bring a file of the workspace into .git (its own mount).
  const ln = await run(tools, id, 'ln /workspace/README /workspace/.git/COMMIT_EDITMSG.ln 2>&1');
  assert.notEqual(ln.code, 0, ln.output);
  assert.match(ln.output, /cross-device/i, ln.output);
  // Still running, nothing moved anywhere.
  assert.equal((await statusOf(tools, id)).status, 'running');
  assert.match(await sh(tools, id, 'echo STILL-HERE'), /STILL-HERE/);
  assert.ok(!fs.existsSync(path.join(ctx.srv.dataRoot, 'quarantine')), 'nothing was quarantined');
  assert.match(hostGitOk(repo, 'log', '--oneline', 'main'), /squashed/);
  hostGitOk(repo, 'fsck', '--no-progress');
});

// Each plant: a name, the command that plants it (run in /workspace/.git,
// $T is a host path outside the directory), the path git would write.
const PLANTS = [
  ['the reflog of HEAD', 'rm -f logs/HEAD && ln -s "$T" logs/HEAD', 'logs/HEAD'],
  ['the reflog of the stash', 'mkdir -p logs/refs && ln -s "$T" logs/refs/stash', 'logs/refs/stash'],
  ['the reflog of a branch', 'rm -f logs/refs/heads/main && ln -s "$T" logs/refs/heads/main', 'logs/refs/heads/main'],
  ['COMMIT_EDITMSG', 'rm -f COMMIT_EDITMSG && ln -s "$T" COMMIT_EDITMSG', 'COMMIT_EDITMSG'],
  ['MERGE_MSG', 'ln -s "$T" MERGE_MSG', 'MERGE_MSG'],
  ['SQUASH_MSG', 'ln -s "$T" SQUASH_MSG', 'SQUASH_MSG'],
  ['FETCH_HEAD', 'rm -f FETCH_HEAD && ln -s "$T" FETCH_HEAD', 'FETCH_HEAD'],
  ['ORIG_HEAD', 'rm -f ORIG_HEAD && ln -s "$T" ORIG_HEAD', 'ORIG_HEAD'],
  ['TAG_EDITMSG', 'ln -s "$T" TAG_EDITMSG', 'TAG_EDITMSG'],
  ['a symlinked logs/ directory', 'mv logs logs.real && ln -s "$D" logs', 'logs'],
  ['a symlinked objects/info/ directory', 'mv objects/info objects/info.real && ln -s "$D" objects/info', 'objects/info'],
  ['a link made outside .git and moved in', 'ln -s "$T" /workspace/l && mv /workspace/l COMMIT_EDITMSG', 'COMMIT_EDITMSG'],
  ['a FIFO at COMMIT_EDITMSG', 'rm -f COMMIT_EDITMSG && mkfifo COMMIT_EDITMSG', 'COMMIT_EDITMSG'],
];

ctx.test('each plant in .git is moved out and stops the sandbox; the owner\'s git then works and writes nothing outside', async () => {
  const tools = await ctx.tools();
  const victim = path.join(ctx.srv.root, 'victim');
  const victimDir = path.join(victim, 'dir');
  fs.mkdirSync(victimDir, { recursive: true });
  fs.writeFileSync(path.join(victim, '.bashrc'), '# the owner\'s shell start-up\n');
  const before = tree(victim);
  const timings = [];
  for (const [i, [name, plant, rel]] of PLANTS.entries()) {
    // A repository with something to merge, rebase and fetch.
    const repo = makeRepo(ctx, `hostile-${i}`);
    hostGitOk(repo, 'branch', 'side');
    hostGitOk(repo, 'checkout', '-q', 'side');
    fs.writeFileSync(path.join(repo, 'side.txt'), 'side\n');
    hostGitOk(repo, 'add', 'side.txt');
    hostGitOk(repo, 'commit', '-q', '-m', 'side');
    hostGitOk(repo, 'checkout', '-q', 'main');
    const upstream = path.join(ctx.srv.root, `upstream-${i}.git`);
    hostGitOk(ctx.srv.root, 'clone', '-q', '--bare', repo, upstream);
    hostGitOk(repo, 'remote', 'add', 'up', upstream);
    const sbx = await tools.create({ workspace_id: registerDirect(ctx, repo) });
    const id = sbx.sandbox_id;
    try {
      // A commit from inside first: it must survive what follows.
      await sh(tools, id, `cd /workspace && git -c user.name=m -c user.email=m@s commit -q --allow-empty -m inside-${i}`);
      const stop = watchPlant(path.join(repo, '.git', rel));
      const res = await tools.call('bash', {
        sandbox_id: id,
        command: `T='${path.join(victim, '.bashrc')}'; D='${victimDir}'; cd /workspace/.git && ${plant} && echo PLANTED; sleep 5; echo STILL-RUNNING`,
        yield_time_ms: 10_000,
      });
      const ran = resultText(res);
      const s = await untilFailed(tools, id);
      const existed = await stop();
      timings.push(existed);
      assert.doesNotMatch(ran, /STILL-RUNNING/, `${name}: the sandbox ran on after the plant: ${ran}`);
      // What the model and the person are told.
      const esc = rel.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
      assert.match(s.failure_reason, new RegExp(`\\.git/${esc}' \\(a (symbolic link|FIFO)`), `${name}: ${s.failure_reason}`);
      assert.match(s.failure_reason, /moved (it|them|what it could) to '[^']*\/quarantine\//, s.failure_reason);
      assert.match(s.failure_reason, /The sandbox was stopped/, s.failure_reason);
      const next = await tools.call('bash', { sandbox_id: id, command: 'echo RAN' });
      assert.equal(next.isError, true, resultText(next));
      assert.match(resultText(next), /has failed/, resultText(next));
      assert.ok(resultText(next).includes(`.git/${rel}'`), resultText(next));
      const info = await dockerInspect(id);
      assert.equal(info?.State?.Running, false, `${name}: the container still runs: ${JSON.stringify(info?.State)}`);
      const list = cli(ctx, ['sandbox', 'list']);
      assert.equal(list.status, 0, list.desc);
      assert.ok(list.stdout.includes(`.git/${rel}'`), `${name}: sandbox list shows the reason: ${list.desc}`);
      // Gone from .git, kept in the quarantine with its record.
      let st = null;
      try {
        st = fs.lstatSync(path.join(repo, '.git', rel));
      } catch {
        /* gone */
      }
      assert.ok(!st || st.isFile() || st.isDirectory(), `${name}: still in .git`);
      const qdir = s.failure_reason.match(/to '([^']*\/quarantine\/[^']*)'/)[1];
      const record = JSON.parse(fs.readFileSync(path.join(qdir, 'record.json'), 'utf8'));
      assert.ok(record.some((e) => e.path === `.git/${rel}` && e.moved_as), `${name}: ${JSON.stringify(record)}`);

      // The owner's ordinary git, right after.
      fs.appendFileSync(path.join(repo, 'README'), 'owner work\n');
      hostGitOk(repo, 'stash', '-q');
      hostGitOk(repo, 'stash', 'pop', '-q');
      hostGitOk(repo, 'commit', '-q', '-am', 'owner');
      hostGitOk(repo, 'merge', '-q', '--no-edit', 'side');
      hostGitOk(repo, 'fetch', '-q', 'up');
      hostGitOk(repo, 'checkout', '-q', '-b', 'rebased', 'side');
      hostGitOk(repo, 'rebase', '-q', 'main');
      hostGitOk(repo, 'checkout', '-q', 'main');
      hostGitOk(repo, 'tag', '-a', '-m', 'owner tag', `t${i}`);
      assert.match(hostGitOk(repo, 'log', '--oneline', 'main'), new RegExp(`inside-${i}`), `${name}: the sandbox's commit`);
      assert.deepEqual(tree(victim), before, `${name}: a host file outside the directory changed`);
      console.log(`${name}: stopped; the plant existed ${existed.toFixed(1)} ms on the host`);
    } finally {
      await tools.destroyQuietly(id);
    }
  }
  const seen = timings.filter((x) => x >= 0).sort((a, b) => a - b);
  console.log(
    `plants seen on the host: ${seen.length} of ${timings.length}; existed median ${seen[Math.floor(seen.length / 2)]?.toFixed(1)} ms, max ${seen[seen.length - 1]?.toFixed(1)} ms`,
  );
});

ctx.test('a link left in .git refuses the create, naming it; removed, the create works', async (t) => {
  const tools = await ctx.tools();
  const repo = makeRepo(ctx, 'left-behind');
  fs.mkdirSync(path.join(repo, '.git/logs/refs'), { recursive: true });
  fs.symlinkSync(path.join(ctx.srv.root, 'victim-left'), path.join(repo, '.git/logs/refs/stash'));
  const wsId = registerDirect(ctx, repo);
  const res = await tools.call('sandbox_create', { workspace_id: wsId }, CREATE_TIMEOUT);
  const text = resultText(res);
  if (!res.isError) await tools.destroyQuietly(res.structuredContent?.sandbox_id);
  assert.equal(res.isError, true, text);
  assert.match(text, /\.git\/logs\/refs\/stash' \(a symbolic link to '[^']*victim-left'\)/, text);
  assert.match(text, /nothing was created/, text);
  assert.ok(!fs.existsSync(path.join(repo, '.git/commondir')), 'no placeholder after the refusal');
  // A FIFO is refused the same way.
  fs.unlinkSync(path.join(repo, '.git/logs/refs/stash'));
  const r = hostGit(repo, 'status');
  assert.equal(r.status, 0, r.stderr);
  const ok = await tools.create({ workspace_id: wsId });
  t.after(() => tools.destroyQuietly(ok.sandbox_id));
  assert.match(await sh(tools, ok.sandbox_id, 'echo FINE'), /FINE/);
});

ctx.finish();
