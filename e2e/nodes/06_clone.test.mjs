// 06 (make test-nodes): a clone of a host repository on another node
// (issue 28, item 4; docs/nodes.md "A clone on another node"). One extra
// engine (engine.sh, the template image loaded) is node n1. A host git
// repository with two branches, a tag, an uncommitted file and HEAD on a
// third branch at main's commit (a bundle does not say which) is cloned
// into a sandbox pinned to n1: no path of this machine is mounted there
// (the source is a bundle streamed in through the archive API), /workspace
// holds the branches, HEAD's checked out, and the committed files, not the
// uncommitted one, and its origin names the same path a local clone's does; a commit made
// there comes home with sandbox_export and `chat2sbx export apply`, as
// from a local clone. A plain directory is copied as it is, and a symbolic
// link in it to a file outside stays a link: the outside bytes never reach
// the node. A source over the ceiling (CHAT2SBX_MAX_EXPORT_BYTES, 1 MiB
// here) is refused naming it and leaves nothing: no container, no volume,
// no row, no temporary file. A .git that is a link to a repository
// elsewhere is refused, not followed. A direct workspace of this machine stays
// on local (a directory of n1 is 10_direct's).
// Needs root.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import { cloneHelpers, runCli, runCliJson } from '../lib/clones.mjs';
import { useNodeEngine } from '../lib/nodes.mjs';
import { dockerInspect, dockerRequest, resultText, useServer } from '../lib/server.mjs';

const CEILING = 1024 * 1024;
const SECRET = `outside-the-directory-${crypto.randomBytes(6).toString('hex')}`;

const node = useNodeEngine(process.env.E2E_CLONE_NODE_NUMBER || '67');

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'runc', CHAT2SBX_MAX_EXPORT_BYTES: String(CEILING) } });
const { reposRoot, cli, cliJson, git, hostRepo, sh, GITID } = cloneHelpers(ctx);
const made = [];

ctx.onCleanup(async () => {
  const tools = await ctx.tools();
  for (const id of made) await tools.destroyQuietly(id);
});

// Containers and volumes of this registry on n1's engine.
async function ours() {
  const label = encodeURIComponent(JSON.stringify({ label: ['org.chat2sbx.registry'] }));
  const cs = await dockerRequest('GET', `/containers/json?all=1&filters=${label}`, undefined, node.SOCK);
  const vs = await dockerRequest('GET', `/volumes?filters=${label}`, undefined, node.SOCK);
  const mine = (labels) => String((labels || {})['org.chat2sbx.registry'] || '').startsWith(ctx.srv.dataRoot);
  return {
    containers: (cs.body || []).filter((c) => mine(c.Labels)).map((c) => c.Names?.[0]).sort(),
    volumes: (vs.body?.Volumes || []).filter((v) => mine(v.Labels)).map((v) => v.Name).sort(),
  };
}

// A clone sandbox of dir on n1, its copy finished.
async function remoteClone(tools, dir) {
  const sbx = await tools.create({ workspace_path: dir, workspace_mode: 'clone', node: 'n1' });
  made.push(sbx.sandbox_id);
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.node, 'n1', JSON.stringify(sbx));
  if (sbx.copy_session_id) {
    let r;
    do r = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: sbx.copy_session_id, yield_time_ms: 10000 });
    while (r.status === 'running');
    assert.equal(r.exit_code, 0, JSON.stringify(r));
  }
  // On n1's engine only, with no path of this machine mounted.
  const info = await dockerInspect(sbx.sandbox_id, node.SOCK);
  assert.ok(info, `${sbx.sandbox_id} has no container on n1`);
  assert.equal(await dockerInspect(sbx.sandbox_id), null, 'not on this machine\'s engine');
  assert.deepEqual((info.Mounts || []).filter((m) => m.Type === 'bind'), [], JSON.stringify(info.Mounts));
  const ws = (info.Mounts || []).find((m) => m.Destination === '/workspace');
  assert.equal(ws?.Type, 'volume', JSON.stringify(info.Mounts));
  return sbx.sandbox_id;
}

ctx.test('node n1 is added', () => {
  const r = runCli(ctx.srv, ['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  assert.equal(r.status, 0, r.desc);
});

ctx.test('a clone of a host repository on n1 has both branches and the committed files, and its work comes home', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('remote');
  fs.writeFileSync(path.join(dir, 'wip.txt'), 'not committed\n');
  // HEAD on a branch at main's commit: a bundle does not say which branch
  // HEAD names (git clone would guess main); the clone must check out this one.
  git(dir, 'checkout', '-qb', 'same');
  const t0 = Date.now();
  const id = await remoteClone(tools, dir);
  console.log(`# clone of a small repository on n1: sandbox_create and copy ${Date.now() - t0} ms`);
  const branches = await sh(tools, id, "cd /workspace && git for-each-ref --format='%(refname)' refs/heads refs/tags");
  assert.deepEqual(branches.trim().split('\n').sort(), ['refs/heads/feature', 'refs/heads/main', 'refs/heads/same', 'refs/tags/v1']);
  assert.equal((await sh(tools, id, 'cd /workspace && git symbolic-ref --short HEAD')).trim(), 'same');
  assert.equal(await sh(tools, id, 'cat /workspace/a.txt'), 'alpha\n');
  assert.equal(await sh(tools, id, 'cd /workspace && git show feature:f.txt'), 'feature\n');
  assert.equal((await sh(tools, id, 'test -e /workspace/wip.txt && echo there || echo absent')).trim(), 'absent');
  // The origin a local clone has: the source's path (here a bundle there).
  assert.equal((await sh(tools, id, 'cd /workspace && git remote get-url origin')).trim(), '/.chat2sbx/source');
  assert.equal((await sh(tools, id, 'test -f /.chat2sbx/source && git bundle list-heads /.chat2sbx/source | wc -l')).trim(), '5',
    'the bundle holds main, feature, same, v1 and HEAD, nothing else of the repository');

  await sh(tools, id, `cd /workspace && git checkout -q main && echo beta > b.txt && git add b.txt && ${GITID} commit -qm 'on n1'`);
  const saved = await tools.ok('sandbox_export', { sandbox_id: id, message: 'from n1' });
  assert.equal(saved.saved, true, JSON.stringify(saved));
  assert.equal(saved.kind, 'git');
  assert.equal(saved.commits_ahead, 1, JSON.stringify(saved));
  const applied = cliJson(['export', 'apply', saved.export_id, '--json']);
  assert.ok(applied.refs_updated >= 1, JSON.stringify(applied));
  const ns = `refs/remotes/chat2sbx/${id}`;
  assert.equal(git(dir, 'log', '-1', '--format=%s', `${ns}/main`).trim(), 'on n1');
  assert.equal(git(dir, 'show', `${ns}/main:b.txt`), 'beta\n');
  assert.equal(git(dir, 'rev-parse', `${ns}/main^`).trim(), git(dir, 'rev-parse', 'main').trim(), 'built on the host\'s main');
});

ctx.test('a plain directory is copied to n1 as it is; a link out of it stays a link, its target\'s bytes stay here', async () => {
  const tools = await ctx.tools();
  const outside = path.join(ctx.srv.root, 'outside.txt');
  fs.writeFileSync(outside, `${SECRET}\n`);
  const dir = path.join(reposRoot(), 'plain');
  fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'top.txt'), 'top\n');
  fs.writeFileSync(path.join(dir, 'sub', 'deep.txt'), 'deep\n');
  fs.symlinkSync(outside, path.join(dir, 'link-out'));
  fs.symlinkSync(path.dirname(outside), path.join(dir, 'dir-out'));
  const r = cli(['workspace', 'add', dir, '--mode', 'clone']);
  assert.equal(r.status, 0, r.desc);
  const id = await remoteClone(tools, dir);
  assert.equal(await sh(tools, id, 'cat /workspace/top.txt /workspace/sub/deep.txt'), 'top\ndeep\n');
  assert.equal((await sh(tools, id, 'readlink /workspace/link-out')).trim(), outside, 'the link is kept as a link');
  assert.equal((await sh(tools, id, 'test -e /workspace/link-out && echo there || echo dangling')).trim(), 'dangling');
  // Everything that came from this machine: the copy and its source.
  const found = await sh(tools, id, `grep -rl ${SECRET} /workspace /.chat2sbx 2>/dev/null || true`);
  assert.equal(found.trim(), '', `the outside file's bytes are not on the node: ${found}`);
});

ctx.test('a source over the ceiling is refused naming it and leaves nothing on n1 or here', async () => {
  const tools = await ctx.tools();
  const dir = path.join(reposRoot(), 'big');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'blob.bin'), crypto.randomBytes(2 * CEILING));
  const r = cli(['workspace', 'add', dir, '--mode', 'clone']);
  assert.equal(r.status, 0, r.desc);
  const before = await ours();
  const rows = (await tools.ok('sandbox_list', {})).sandboxes.length;
  const res = await tools.call('sandbox_create', { workspace_path: dir, workspace_mode: 'clone', node: 'n1' });
  assert.equal(res.isError, true, resultText(res));
  assert.match(resultText(res), /CHAT2SBX_MAX_EXPORT_BYTES \(1048576 bytes\)/);
  assert.match(resultText(res), /node 'local'/);
  assert.deepEqual(await ours(), before, 'no container or volume was made on n1');
  assert.equal((await tools.ok('sandbox_list', {})).sandboxes.length, rows, 'no sandbox row');
  const tmp = path.join(ctx.srv.dataRoot, 'state', 'clone-sources');
  assert.deepEqual(fs.readdirSync(tmp), [], 'no temporary file is left');
  assert.equal(fs.statSync(tmp).mode & 0o777, 0o700);
  // The same repository as a git bundle over the ceiling: refused too.
  const repo = hostRepo('bigrepo');
  fs.writeFileSync(path.join(repo, 'blob.bin'), crypto.randomBytes(2 * CEILING));
  git(repo, 'add', 'blob.bin');
  git(repo, 'commit', '-qm', 'big');
  const res2 = await tools.call('sandbox_create', { workspace_path: repo, workspace_mode: 'clone', node: 'n1' });
  assert.equal(res2.isError, true, resultText(res2));
  assert.match(resultText(res2), /a bundle of the repository .* is larger than CHAT2SBX_MAX_EXPORT_BYTES/);
  assert.deepEqual(await ours(), before);
});

ctx.test('a .git that links to a repository elsewhere is refused, not followed', async () => {
  const tools = await ctx.tools();
  const other = hostRepo('elsewhere');
  const dir = path.join(reposRoot(), 'linked');
  fs.mkdirSync(dir, { recursive: true });
  fs.symlinkSync(path.join(other, '.git'), path.join(dir, '.git'));
  const r = cli(['workspace', 'add', dir, '--mode', 'clone']);
  assert.equal(r.status, 0, r.desc);
  const before = await ours();
  const res = await tools.call('sandbox_create', { workspace_path: dir, workspace_mode: 'clone', node: 'n1' });
  assert.equal(res.isError, true, resultText(res));
  assert.match(resultText(res), /\.git' is a symbolic link, which names a repository outside the approved directory/);
  assert.deepEqual(await ours(), before, 'nothing was made on n1');
});

ctx.test('a direct workspace stays on local: another node is refused', async () => {
  const tools = await ctx.tools();
  const dir = path.join(reposRoot(), 'direct');
  fs.mkdirSync(dir, { recursive: true });
  const r = cli(['workspace', 'add', dir, '--mode', 'direct', '--json']);
  assert.equal(r.status, 0, r.desc);
  const ws = JSON.parse(r.stdout).workspace_id;
  const res = await tools.call('sandbox_create', { workspace_id: ws, node: 'n1' });
  assert.equal(res.isError, true, resultText(res));
  assert.match(resultText(res), /direct workspace 'ws_[^']+' stays on node 'local'/);
  // With a path, node names whose directory it is (10_direct): n1 was
  // added without --host-root, so none of its paths may be asked for.
  const other = await tools.call('sandbox_create', { workspace_path: dir, workspace_mode: 'direct', node: 'n1' });
  assert.equal(other.isError, true, resultText(other));
  assert.match(resultText(other), /node 'n1' offers no host directory/);
});

ctx.test('destroying the clones leaves nothing of ours on n1', async () => {
  const tools = await ctx.tools();
  for (const id of made.splice(0)) {
    const d = await tools.ok('sandbox_destroy', { sandbox_id: id }, 120_000);
    assert.equal(d.status, 'removed', JSON.stringify(d));
  }
  assert.deepEqual(await ours(), { containers: [], volumes: [] });
  assert.equal(runCliJson(ctx.srv, ['node', 'list', '--json']).find((n) => n.name === 'n1').sandboxes, 0);
});
