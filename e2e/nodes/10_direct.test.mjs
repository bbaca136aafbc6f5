// 10 (make test-nodes): a direct workspace on another node (issue 28;
// docs/nodes.md). One extra engine (engine.sh, the template image loaded) is
// node n1; it shares this machine's file system (a network namespace, not a
// machine), so a directory of "n1" is a directory here too. n1 is added
// first without --host-root: a direct workspace there is refused naming
// --host-root. Added again with two --host-root directories (node show
// lists them), a git repository P under the first is asked for in direct
// mode on n1: approval_required (the approval's row names n1), approved
// with the CLI, then a sandbox on n1's engine only, whose container binds P
// at /workspace read-write and P/.git at /workspace/.git read-only and
// nothing else; serve checked P on n1 with a short-lived container of its
// own, gone when the create answers. Inside, a file written in /workspace is
// at P here, and .git is read-only as a whole (touch, git config, a hook,
// mv .git all fail) while git log and git status work. Refused, leaving no
// container on n1 and no sandbox row, each with its reason: a path outside
// n1's host roots, a path through a symbolic link, a .git that is a
// symbolic link, a path that does not exist on n1, a gitfile, a link or a
// FIFO inside .git, a commondir naming another directory. The container
// is not restarted by its engine (RestartPolicy no: its helper is a file
// the sandbox could replace, which would answer the re-attach's checks). A clean restart of serve
// re-attaches the sandbox; after destroy the files stay, the workspace's
// next sandbox goes back to n1 and 'local' is refused for it; P swapped for
// a symbolic link after the approval is refused and works again once put
// back; `workspace add --node n1` registers another directory (no .git: one
// bind) whose sandbox runs on n1. Needs root.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after } from 'node:test';

import { runCli, runCliJson } from '../lib/clones.mjs';
import { hostGitOk, run, sh } from '../lib/direct_git.mjs';
import { IMAGE, useNodeEngine } from '../lib/nodes.mjs';
import { CREATE_TIMEOUT, WORKSPACE_ID_RE, dockerInspect, dockerRequest, resultText, useServer } from '../lib/server.mjs';

const N = process.env.E2E_DIRECT_NODE_NUMBER || '70';
const node = useNodeEngine(N);

// runc everywhere: the vm runtime stays on this machine (docs/nodes.md).
const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'runc' } });
const cli = (args) => runCli(ctx.srv, args, { timeout: 60_000 });
const cliJson = (args) => runCliJson(ctx.srv, args);

const APPROVAL_ID_RE = /^approval_[a-z2-7]{20}$/;

// n1's host roots (ROOT, ROOT2) and a directory outside both (OUT), made
// here under the machine's temporary directory: not below serve's
// CHAT2SBX_ALLOWED_HOST_ROOTS (its private ~/repositories), so only n1's
// host roots can allow them.
const tmp = (tag) => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), `chat2sbx-e2e-direct-${tag}-`)));
const ROOT = tmp('root');
const ROOT2 = tmp('root2');
const OUT = tmp('out');
const P = path.join(ROOT, 'proj');
const P2 = path.join(ROOT2, 'plain');

after(() => {
  if (process.env.E2E_KEEP) return;
  for (const d of [ROOT, ROOT2, OUT]) fs.rmSync(d, { recursive: true, force: true });
});

const state = { made: new Set() }; // sandbox ids still to destroy

ctx.onCleanup(async () => {
  const tools = await ctx.tools();
  for (const id of state.made) await tools.destroyQuietly(id);
  cli(['node', 'remove', 'n1']);
});

// A git repository at dir with one commit and a hook of the owner's.
function makeRepo(dir) {
  fs.mkdirSync(dir, { recursive: true });
  hostGitOk(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'README'), 'hello\n');
  hostGitOk(dir, 'add', 'README');
  hostGitOk(dir, 'commit', '-q', '-m', 'first');
  fs.writeFileSync(path.join(dir, '.git', 'hooks', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  return dir;
}

// What the owner's git reads in .git, byte for byte.
function gitSnapshot(dir) {
  const g = path.join(dir, '.git');
  return {
    config: fs.readFileSync(path.join(g, 'config'), 'utf8'),
    hook: fs.readFileSync(path.join(g, 'hooks', 'pre-commit'), 'utf8'),
    head: fs.readFileSync(path.join(g, 'HEAD'), 'utf8'),
    entries: fs.readdirSync(g).sort(),
  };
}

// Every container on n1's engine (the test's own engine: all of them are
// serve's), by id.
async function n1Containers() {
  const r = await dockerRequest('GET', '/containers/json?all=1', undefined, node.SOCK);
  return (r.body || []).map((c) => `${c.Id.slice(0, 12)} ${c.Names?.[0]}`).sort();
}

// The sandbox ids in `chat2sbx sandbox list --json` (every row).
function sandboxRows() {
  return cliJson(['sandbox', 'list', '--json']).sandboxes.map((s) => s.sandbox_id).sort();
}

// Container events (create, destroy) on n1's engine from sinceMs to now.
async function n1Events(sinceMs) {
  const filters = encodeURIComponent(JSON.stringify({ type: ['container'], event: ['create', 'destroy'] }));
  const since = Math.floor(sinceMs / 1000) - 1;
  const until = Math.ceil(Date.now() / 1000) + 1;
  const r = await dockerRequest('GET', `/events?since=${since}&until=${until}&filters=${filters}`, undefined, node.SOCK);
  // Newline-separated JSON objects: one alone was parsed already.
  const list = r.body == null ? [] : typeof r.body === 'string'
    ? r.body.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l))
    : [r.body];
  return list.map((e) => ({ action: e.Action, id: e.Actor?.ID, name: e.Actor?.Attributes?.name, image: e.Actor?.Attributes?.image }));
}

// n1's containers become `want` within ms (a refusal's check container may
// take a moment to be reaped); the last list otherwise.
async function n1ContainersSettle(want, ms = 5000) {
  const deadline = Date.now() + ms;
  let got;
  for (;;) {
    got = await n1Containers();
    if (JSON.stringify(got) === JSON.stringify(want) || Date.now() > deadline) return got;
    await new Promise((r) => setTimeout(r, 250));
  }
}

// sandbox_create for a path nobody decided on: approval_required, the same
// shape as a local host path's (e2e/tests/06_workspaces), nothing created.
async function requestApproval(tools, workspacePath) {
  const args = { workspace_path: workspacePath, workspace_mode: 'direct', node: 'n1' };
  const res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
  assert.ok(!res.isError, `sandbox_create(${JSON.stringify(args)}) is isError, expected approval_required: ${resultText(res)}`);
  const sc = res.structuredContent ?? JSON.parse(resultText(res));
  assert.equal(sc.status, 'approval_required', `sandbox_create(${JSON.stringify(args)}): ${JSON.stringify(sc)}`);
  assert.match(String(sc.approval_id), APPROVAL_ID_RE, JSON.stringify(sc));
  assert.equal(sc.workspace_path, workspacePath, JSON.stringify(sc));
  assert.equal(sc.workspace_mode, 'direct', JSON.stringify(sc));
  assert.ok(String(sc.message).includes(`chat2sbx approval approve ${sc.approval_id}`), JSON.stringify(sc));
  assert.equal(sc.sandbox_id, undefined, JSON.stringify(sc));
  return sc;
}

function approvalRow(id) {
  const list = cliJson(['approval', 'list', '--json']);
  assert.ok(Array.isArray(list), JSON.stringify(list));
  return list.find((a) => a.approval_id === id);
}

// A direct sandbox_create of p on n1 that must be refused with a message
// matching rx, whether the refusal comes when asked, at the approval or at
// the create after it; it must leave no container on n1 and no sandbox row.
// Returns the message.
async function refusedOnN1(tools, p, rx, why) {
  const containersBefore = await n1Containers();
  const rowsBefore = sandboxRows();
  const args = { workspace_path: p, workspace_mode: 'direct', node: 'n1' };
  let res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
  let message = resultText(res);
  let stage = 'when asked';
  const sc = res.isError ? null : res.structuredContent ?? JSON.parse(message);
  if (sc?.status === 'approval_required') {
    const ap = cli(['approval', 'approve', sc.approval_id, '--json']);
    if (ap.status !== 0) {
      stage = 'at the approval';
      message = `${ap.stderr}${ap.stdout}`;
      assert.match(message, rx, `${why}: ${ap.desc}`);
    } else {
      stage = 'at the create after the approval';
      res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
      message = resultText(res);
    }
  }
  if (stage !== 'at the approval') {
    if (res.structuredContent?.sandbox_id) state.made.add(res.structuredContent.sandbox_id);
    assert.equal(res.isError, true, `${why}: sandbox_create(${JSON.stringify(args)}) ${stage}: expected a refusal, got ${message}`);
    assert.match(message, rx, `${why}: sandbox_create(${JSON.stringify(args)}) ${stage}`);
  }
  console.log(`# refused ${stage} (${why}): ${message.trim().slice(0, 300)}`);
  assert.deepEqual(await n1ContainersSettle(containersBefore), containersBefore, `${why}: no container is left on n1`);
  assert.deepEqual(sandboxRows(), rowsBefore, `${why}: no sandbox row`);
  return message;
}

// The container of a direct sandbox of dir on n1: there only, binding dir at
// /workspace read-write and, with a .git, dir/.git read-only, nothing else.
async function assertDirectOnN1(sandboxId, dir, withGit) {
  const info = await dockerInspect(sandboxId, node.SOCK);
  assert.ok(info, `${sandboxId} has no container on n1`);
  assert.equal(info.State?.Running, true, JSON.stringify(info.State));
  assert.equal(await dockerInspect(sandboxId), null, 'not on this machine\'s engine');
  const mounts = JSON.stringify(info.Mounts);
  const binds = (info.Mounts || []).filter((m) => m.Type === 'bind');
  const ws = binds.find((m) => m.Destination === '/workspace');
  assert.equal(ws?.Source, dir, mounts);
  assert.equal(ws?.RW, true, `/workspace is read-write: ${mounts}`);
  const g = binds.find((m) => m.Destination === '/workspace/.git');
  if (withGit) {
    assert.equal(g?.Source, path.join(dir, '.git'), mounts);
    assert.equal(g?.RW, false, `.git is read-only: ${mounts}`);
  } else {
    assert.equal(g, undefined, mounts);
  }
  assert.equal(binds.length, withGit ? 2 : 1, `no other bind mount (the helper is copied in): ${mounts}`);
  const wsMount = (info.Mounts || []).find((m) => m.Destination === '/workspace');
  assert.equal(wsMount?.Type, 'bind', `the workspace is the directory, not a volume: ${mounts}`);
  // Never restarted by n1's engine: its helper is a file of its own layer.
  assert.ok(['', 'no'].includes(info.HostConfig?.RestartPolicy?.Name || ''), JSON.stringify(info.HostConfig?.RestartPolicy));
}

ctx.test('a node added without --host-root: node show has no host roots and a direct workspace there is refused naming --host-root', async () => {
  let r = cli(['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  assert.equal(r.status, 0, r.desc);
  const show = cliJson(['node', 'show', 'n1', '--json']);
  assert.deepEqual(show.host_roots, [], `node show --json: ${JSON.stringify(show)}`);
  // A directory of its own, so that nothing decided here carries over.
  const dir = makeRepo(path.join(ROOT, 'before-roots'));
  const tools = await ctx.tools();
  const msg = await refusedOnN1(tools, dir, /--host-root/, 'a node without host roots');
  assert.match(msg, /n1/, msg);
  assert.doesNotMatch(msg, /CHAT2SBX_ALLOWED_HOST_ROOTS/, `n1's host roots decide, not this machine's: ${msg}`);
  // Its host roots are given at `node add`: remove and add it again.
  r = cli(['node', 'remove', 'n1']);
  assert.equal(r.status, 0, r.desc);
});

ctx.test('node add --host-root (twice) records the node\'s host roots', () => {
  const r = cli(['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY,
    '--host-root', ROOT, '--host-root', ROOT2]);
  assert.equal(r.status, 0, r.desc);
  const show = cliJson(['node', 'show', 'n1', '--json']);
  assert.deepEqual(show.host_roots, [ROOT, ROOT2], `node show --json: ${JSON.stringify(show)}`);
  assert.equal(show.state, 'ready', JSON.stringify(show));
});

ctx.test('a direct workspace on n1: approval naming n1, then a sandbox on n1 binding the directory and a read-only .git', async () => {
  const tools = await ctx.tools();
  makeRepo(P);
  const before = gitSnapshot(P);
  const rowsBefore = sandboxRows();
  const req = await requestApproval(tools, P);
  const again = await requestApproval(tools, P);
  assert.equal(again.approval_id, req.approval_id, 'the same path, mode and node: the same approval');
  assert.deepEqual(sandboxRows(), rowsBefore, 'no sandbox for a pending approval');
  const pending = approvalRow(req.approval_id);
  assert.equal(pending?.status, 'pending', JSON.stringify(pending));
  assert.equal(pending?.node, 'n1', `approval list --json names the node: ${JSON.stringify(pending)}`);
  assert.equal(pending?.mode, 'direct', JSON.stringify(pending));
  assert.equal(pending?.host_path, P, JSON.stringify(pending));

  const ap = cliJson(['approval', 'approve', req.approval_id, '--json']);
  assert.equal(ap.status, 'approved', JSON.stringify(ap));
  assert.match(String(ap.workspace_id), WORKSPACE_ID_RE, JSON.stringify(ap));
  const decided = approvalRow(req.approval_id);
  assert.equal(decided?.status, 'approved', JSON.stringify(decided));
  assert.equal(decided?.node, 'n1', JSON.stringify(decided));

  const t0 = Date.now();
  const sbx = await tools.create({ workspace_path: P, workspace_mode: 'direct', node: 'n1' });
  state.made.add(sbx.sandbox_id);
  console.log(`# sandbox_create of a direct workspace on n1 (after the approval): ${Date.now() - t0} ms`);
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.node, 'n1', JSON.stringify(sbx));
  assert.equal(sbx.workspace_mode, 'direct', JSON.stringify(sbx));
  assert.equal(sbx.workspace_id, ap.workspace_id, JSON.stringify(sbx));
  state.ws = sbx.workspace_id;
  state.sbx = sbx.sandbox_id;
  await assertDirectOnN1(sbx.sandbox_id, P, true);

  // serve looked at P on n1 with a container of its own, gone by now.
  const events = await n1Events(t0);
  const destroyed = new Set(events.filter((e) => e.action === 'destroy').map((e) => e.id));
  const checks = events.filter((e) => e.action === 'create' && e.name !== sbx.sandbox_id && destroyed.has(e.id));
  assert.ok(checks.length >= 1, `a check container was made on n1 during the create, and removed: ${JSON.stringify(events)}`);
  console.log(`# containers made and removed on n1 during the create: ${checks.map((e) => `${e.name} (${e.image})`).join(', ')}`);
  assert.equal(JSON.stringify(gitSnapshot(P)), JSON.stringify(before), 'creating changed nothing in .git');
});

ctx.test('inside: /workspace is the directory on this machine; .git is read-only as a whole; git log and git status work', async () => {
  const tools = await ctx.tools();
  const id = state.sbx;
  assert.ok(id, 'the approval test made the sandbox');
  const before = gitSnapshot(P);
  await sh(tools, id, 'cd /workspace && echo "from n1" > from-n1.txt');
  assert.equal(fs.readFileSync(path.join(P, 'from-n1.txt'), 'utf8'), 'from n1\n', 'written inside, at P here');
  const w = await tools.ok('write', { sandbox_id: id, path: 'notes.txt', content: 'by the write tool\n' });
  assert.equal(w.bytes_written, 18);
  assert.equal(fs.readFileSync(path.join(P, 'notes.txt'), 'utf8'), 'by the write tool\n');
  fs.writeFileSync(path.join(P, 'host.txt'), 'from the host\n');
  const r = await tools.ok('read', { sandbox_id: id, path: 'host.txt', line_numbers: false });
  assert.equal(r.content, 'from the host\n', 'written here, seen inside');

  const plants = [
    'touch /workspace/.git/x',
    'cd /workspace && git config user.name x',
    "cd /workspace && echo 'touch /tmp/planted' > .git/hooks/pre-commit",
    'cd /workspace && mv .git g',
    'cd /workspace && rm -f .git/config',
    'cd /workspace && echo planted > .git/HEAD',
  ];
  const problems = [];
  for (const c of plants) {
    const x = await run(tools, id, c);
    if (x.code === 0) problems.push(`${c}: exit 0 (${x.output.trim()})`);
  }
  assert.deepEqual(problems, [], 'each write to .git fails inside');
  const log = await sh(tools, id, 'cd /workspace && git log --format=%s');
  assert.equal(log.trim(), 'first');
  const st = await run(tools, id, 'cd /workspace && git status --porcelain');
  assert.equal(st.code, 0, `git status: ${st.output}`);
  assert.match(st.output, /\?\? from-n1\.txt/, st.output);
  assert.equal(JSON.stringify(gitSnapshot(P)), JSON.stringify(before), '.git here is as it was');
  assert.ok(!fs.existsSync(path.join(P, 'g')) && !fs.existsSync(path.join(P, '.git', 'x')));
});

ctx.test('refused on n1, leaving no container and no row: outside the host roots, through a symbolic link, a linked .git, a path n1 lacks', async () => {
  const tools = await ctx.tools();
  // Outside both host roots (it exists and is a repository).
  makeRepo(path.join(OUT, 'proj'));
  const out = await refusedOnN1(tools, path.join(OUT, 'proj'), /--host-root|host roots?\b/, 'outside the host roots');
  assert.match(out, /n1/, `names the node: ${out}`);
  assert.doesNotMatch(out, /CHAT2SBX_ALLOWED_HOST_ROOTS/, `n1's host roots decide, not this machine's: ${out}`);
  // A symbolic link on the way (ROOT/link -> ROOT/target), last or not
  // (two of each, so that neither path lies in the other).
  for (const n of ['1', '2']) {
    fs.mkdirSync(path.join(ROOT, `target${n}`, 'sub'), { recursive: true });
    fs.symlinkSync(path.join(ROOT, `target${n}`), path.join(ROOT, `link${n}`));
  }
  await refusedOnN1(tools, path.join(ROOT, 'link1'), /symbolic link/, 'the path is a symbolic link');
  await refusedOnN1(tools, path.join(ROOT, 'link2', 'sub'), /symbolic link/, 'a component of the path is a symbolic link');
  // A .git that links to another repository.
  const other = makeRepo(path.join(ROOT, 'other-repo'));
  fs.mkdirSync(path.join(ROOT, 'gitlink'));
  fs.symlinkSync(path.join(other, '.git'), path.join(ROOT, 'gitlink', '.git'));
  await refusedOnN1(tools, path.join(ROOT, 'gitlink'), /symbolic link/, '.git is a symbolic link');
  // Not there at all.
  await refusedOnN1(tools, path.join(ROOT, 'missing'), /does not exist on node 'n1'/, 'a path that does not exist on n1');
  // What the owner's git on n1 would follow or run (serve cannot watch a
  // node's .git): a gitfile naming a git directory inside the workspace,
  // a symbolic link anywhere in .git (a linked hook), a FIFO there, and a
  // commondir naming another directory.
  const gitfile = path.join(ROOT, 'gitfile');
  fs.mkdirSync(path.join(gitfile, '.repo'), { recursive: true });
  fs.writeFileSync(path.join(gitfile, '.git'), 'gitdir: .repo\n');
  await refusedOnN1(tools, gitfile, /\.git' on node 'n1' is a file/, 'a gitfile');
  const hooked = makeRepo(path.join(ROOT, 'hooked'));
  fs.mkdirSync(path.join(hooked, 'scripts'));
  fs.writeFileSync(path.join(hooked, 'scripts', 'pre-commit'), '#!/bin/sh\n');
  fs.rmSync(path.join(hooked, '.git', 'hooks', 'pre-commit'), { force: true });
  fs.symlinkSync('../../scripts/pre-commit', path.join(hooked, '.git', 'hooks', 'pre-commit'));
  await refusedOnN1(tools, hooked, /\.git\/hooks\/pre-commit' on node 'n1' is a symbolic link/, 'a linked hook in .git');
  const fifo = makeRepo(path.join(ROOT, 'fifo'));
  execFileSync('mkfifo', [path.join(fifo, '.git', 'logs-fifo')]);
  await refusedOnN1(tools, fifo, /\.git\/logs-fifo' on node 'n1' is a FIFO/, 'a FIFO in .git');
  const common = makeRepo(path.join(ROOT, 'common'));
  fs.writeFileSync(path.join(common, '.git', 'commondir'), '../elsewhere\n');
  await refusedOnN1(tools, common, /commondir' on node 'n1' names another directory/, 'a commondir elsewhere');
  // The running sandbox was not touched.
  assert.equal((await sh(tools, state.sbx, 'cat /workspace/from-n1.txt')), 'from n1\n');
});

ctx.test('a clean restart of serve re-attaches the direct sandbox on n1 and sweeps a leftover check container', async () => {
  assert.ok(state.ws && state.sbx, 'the approval test made the workspace and its sandbox');
  // A check container an earlier serve left (it died mid-check): this
  // registry's label, a stopped container of the template image.
  const registry = (await dockerInspect(state.sbx, node.SOCK)).Config.Labels['org.chat2sbx.registry'];
  const left = await dockerRequest(
    'POST',
    '/containers/create?name=chat2sbx-check-leftover-e2e',
    { Image: IMAGE, Entrypoint: ['true'], Labels: { 'org.chat2sbx.pathcheck.registry': registry }, HostConfig: { NetworkMode: 'none' } },
    node.SOCK,
  );
  assert.equal(left.status, 201, JSON.stringify(left.body));
  await ctx.restart('SIGTERM');
  assert.equal(await dockerInspect('chat2sbx-check-leftover-e2e', node.SOCK), null, 'swept by reconcile at start');
  const tools = await ctx.tools();
  const got = await tools.ok('sandbox_get', { sandbox_id: state.sbx });
  assert.equal(got.status, 'running', JSON.stringify(got));
  assert.equal(got.node, 'n1', JSON.stringify(got));
  assert.equal(await sh(tools, state.sbx, 'cd /workspace && cat from-n1.txt && git log --format=%s'), 'from n1\nfirst\n');
  const x = await run(tools, state.sbx, 'touch /workspace/.git/after-restart');
  assert.notEqual(x.code, 0, '.git is still read-only');
  await assertDirectOnN1(state.sbx, P, true);
});

ctx.test('destroyed, its files stay; its workspace\'s next sandbox goes back to n1 and \'local\' is refused', async () => {
  assert.ok(state.ws && state.sbx, 'the approval test made the workspace and its sandbox');
  const tools = await ctx.tools();
  const d = await tools.ok('sandbox_destroy', { sandbox_id: state.sbx }, CREATE_TIMEOUT);
  assert.equal(d.status, 'removed', JSON.stringify(d));
  state.made.delete(state.sbx);
  assert.equal(await dockerInspect(state.sbx, node.SOCK), null, 'its container is gone from n1');
  assert.equal(fs.readFileSync(path.join(P, 'from-n1.txt'), 'utf8'), 'from n1\n', 'the files at P stay');
  assert.equal(fs.readFileSync(path.join(P, 'README'), 'utf8'), 'hello\n');
  hostGitOk(P, 'status', '--porcelain');

  const rowsBefore = sandboxRows();
  const local = await tools.call('sandbox_create', { workspace_id: state.ws, node: 'local' }, CREATE_TIMEOUT);
  assert.equal(local.isError, true, resultText(local));
  assert.match(resultText(local), /stays on node 'n1'/, resultText(local));
  assert.deepEqual(sandboxRows(), rowsBefore, 'no sandbox row for the refusal');

  const again = await tools.create({ workspace_id: state.ws });
  state.made.add(again.sandbox_id);
  assert.equal(again.status, 'running', JSON.stringify(again));
  assert.equal(again.node, 'n1', JSON.stringify(again));
  assert.equal(again.workspace_id, state.ws);
  await assertDirectOnN1(again.sandbox_id, P, true);
  assert.equal(await sh(tools, again.sandbox_id, 'cat /workspace/from-n1.txt'), 'from n1\n');
  const d2 = await tools.ok('sandbox_destroy', { sandbox_id: again.sandbox_id }, CREATE_TIMEOUT);
  assert.equal(d2.status, 'removed', JSON.stringify(d2));
  state.made.delete(again.sandbox_id);
});

ctx.test('P swapped for a symbolic link after the approval is refused, leaving nothing; put back, it works again', async () => {
  assert.ok(state.ws && state.sbx, 'the approval test made the workspace and its sandbox');
  const tools = await ctx.tools();
  const elsewhere = path.join(ROOT, 'elsewhere');
  fs.mkdirSync(elsewhere, { recursive: true });
  fs.writeFileSync(path.join(elsewhere, 'decoy.txt'), 'not P\n');
  const away = path.join(ROOT, 'proj.away');
  fs.renameSync(P, away);
  fs.symlinkSync(elsewhere, P);
  try {
    const containersBefore = await n1Containers();
    const rowsBefore = sandboxRows();
    for (const args of [{ workspace_id: state.ws }, { workspace_path: P, workspace_mode: 'direct', node: 'n1' }]) {
      const res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
      if (res.structuredContent?.sandbox_id) state.made.add(res.structuredContent.sandbox_id);
      assert.equal(res.isError, true, `sandbox_create(${JSON.stringify(args)}) with P a symbolic link: ${resultText(res)}`);
      assert.match(resultText(res), /symbolic link/, `sandbox_create(${JSON.stringify(args)})`);
      console.log(`# P swapped for a link, sandbox_create(${Object.keys(args).join(', ')}): ${resultText(res).slice(0, 300)}`);
    }
    assert.deepEqual(await n1ContainersSettle(containersBefore), containersBefore, 'no container is left on n1');
    assert.deepEqual(sandboxRows(), rowsBefore, 'no sandbox row');
    assert.deepEqual(fs.readdirSync(elsewhere), ['decoy.txt'], 'nothing reached the link\'s target');
  } finally {
    fs.unlinkSync(P);
    fs.renameSync(away, P);
  }
  const sbx = await tools.create({ workspace_id: state.ws });
  state.made.add(sbx.sandbox_id);
  assert.equal(sbx.node, 'n1', JSON.stringify(sbx));
  await assertDirectOnN1(sbx.sandbox_id, P, true);
  assert.equal(await sh(tools, sbx.sandbox_id, 'cat /workspace/from-n1.txt'), 'from n1\n');
  const d = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  assert.equal(d.status, 'removed', JSON.stringify(d));
  state.made.delete(sbx.sandbox_id);
});

ctx.test('workspace add --mode direct --node n1 registers it approved; its sandbox runs on n1 (no .git: one bind)', async () => {
  const tools = await ctx.tools();
  fs.mkdirSync(P2, { recursive: true });
  fs.writeFileSync(path.join(P2, 'readme.txt'), 'plain\n');
  const add = cliJson(['workspace', 'add', P2, '--mode', 'direct', '--node', 'n1', '--json']);
  assert.match(String(add.workspace_id), WORKSPACE_ID_RE, JSON.stringify(add));
  const row = cliJson(['workspace', 'list', '--json']).find((w) => w.workspace_id === add.workspace_id);
  assert.equal(row?.mode, 'direct', JSON.stringify(row));
  assert.equal(row?.host_path, P2, JSON.stringify(row));
  // Which node's directory it is: said at the end, after its sandbox ran.
  const problems = [];
  if (row?.node !== 'n1') problems.push(`workspace list --json does not name node 'n1': ${JSON.stringify(row)}`);
  const mainRow = cliJson(['workspace', 'list', '--json']).find((w) => w.workspace_id === state.ws);
  if (mainRow?.node !== 'n1') problems.push(`workspace list --json does not name node 'n1' for the approved one: ${JSON.stringify(mainRow)}`);
  const toolRow = (await tools.ok('workspace_list', {})).workspaces.find((w) => w.workspace_id === add.workspace_id);
  if (toolRow?.node !== 'n1') console.log(`# workspace_list (the tool) row of a direct workspace on n1: ${JSON.stringify(toolRow)}`);

  const sbx = await tools.create({ workspace_id: add.workspace_id });
  state.made.add(sbx.sandbox_id);
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.node, 'n1', JSON.stringify(sbx));
  await assertDirectOnN1(sbx.sandbox_id, P2, false);
  assert.equal(await sh(tools, sbx.sandbox_id, 'cat /workspace/readme.txt && echo made > /workspace/made.txt'), 'plain\n');
  assert.equal(fs.readFileSync(path.join(P2, 'made.txt'), 'utf8'), 'made\n');
  const d = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  assert.equal(d.status, 'removed', JSON.stringify(d));
  state.made.delete(sbx.sandbox_id);
  assert.deepEqual(fs.readdirSync(P2).sort(), ['made.txt', 'readme.txt'], 'the files at P2 stay');
  assert.deepEqual(problems, []);
});

ctx.test('at the end nothing of ours runs on n1 and its directories are as the sandboxes left them', async () => {
  const label = encodeURIComponent(JSON.stringify({ label: ['org.chat2sbx.sandbox'] }));
  const cs = await dockerRequest('GET', `/containers/json?all=1&filters=${label}`, undefined, node.SOCK);
  assert.deepEqual((cs.body || []).map((c) => c.Names?.[0]), [], 'no sandbox container on n1');
  assert.ok(fs.existsSync(path.join(P, '.git', 'config')) && fs.existsSync(path.join(P, 'from-n1.txt')));
  assert.equal(runCliJson(ctx.srv, ['node', 'list', '--json']).find((n) => n.name === 'n1')?.sandboxes, 0);
  const r = cli(['node', 'remove', 'n1']);
  console.log(`# node remove n1 with two direct workspaces registered there: exit ${r.status}: ${r.stdout.trim()} ${r.stderr.trim()}`);
  assert.equal(r.status, 0, r.desc);
});

ctx.finish();
