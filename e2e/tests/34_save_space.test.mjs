// e2e 34: saved work is bounded and deduplicated (issue 23 point 4, item 7).
// serve runs with its data root on a small tmpfs the test mounts (as e2e 28
// does), so "nearly full" is real: a save that would cross
// CHAT2SBX_MIN_FREE_DISK is refused before it streams and the sandbox keeps
// its work; a sandbox that sends far more than it announced (its own git
// keeps appending to the bundle after the host opened it) is stopped at the
// chunk that would cross, and free space never drops below the watermark.
// A branch rename keeps no second bundle (exports/ does not grow, the two
// exports share one file, apply brings the renamed branch home even after
// the first export went to the trash). The caps refuse with the cap named.
// `export apply --to` of a plain copy makes hard links, skips and lists a
// FIFO, and a refused entry leaves no DIR and nothing beside it.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { cloneSandbox as cloneOf, git, runCli, runCliJson, sh as shIn, tmpfsDataRoot, tmpfsDataRootDone } from '../lib/clones.mjs';
import { CREATE_TIMEOUT, Server, dockerInspect, resultText } from '../lib/server.mjs';

const root = !process.getuid();
const skip = !root && 'needs root to mount a tmpfs';
const MiB = 1024 * 1024;
const WATERMARK_MIB = 32;
const BASE_ENV = { CHAT2SBX_MIN_FREE_DISK: `${WATERMARK_MIB}m` };
const srv = new Server();
let mnt = null;
let tools = null;

before(async () => {
  if (!root) return;
  mnt = await tmpfsDataRoot(srv, 'space', '192m');
  await srv.start({ env: BASE_ENV });
  tools = srv.tools(await srv.client());
});

after(async () => {
  if (!root) return;
  await tmpfsDataRootDone(srv, mnt);
});

async function restart(env) {
  for (const c of srv.clients) await c.close().catch(() => {});
  srv.clients.clear();
  srv.proc.kill('SIGTERM');
  await srv.exited;
  await srv.start({ env: { ...BASE_ENV, ...env } });
  tools = srv.tools(await srv.client());
}

const home = () => path.join(srv.root, 'home');
const freeBytes = () => {
  const s = fs.statfsSync(mnt);
  return s.bavail * s.bsize;
};

// Takes the tmpfs down to `bytes` free with one file (host side).
function fillTo(bytes) {
  unfill();
  const want = freeBytes() - bytes;
  if (want <= 0) return;
  const r = spawnSync('fallocate', ['-l', String(want), path.join(mnt, 'filler')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
}
function unfill() {
  fs.rmSync(path.join(mnt, 'filler'), { force: true });
}

// A host repository with one commit on main, registered as a clone workspace.
function hostRepo(name) {
  const dir = path.join(home(), 'repositories', name);
  fs.mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'first');
  assert.equal(cli(['workspace', 'add', dir, '--mode', 'clone']).status, 0);
  return dir;
}

const cli = (args) => runCli(srv, args);
const cliJson = (args) => runCliJson(srv, args);
const sh = (sandboxId, command) => shIn(tools, sandboxId, command);
const cloneSandbox = async (dir) => (await cloneOf(tools, dir)).sandbox_id;
const GITID = 'git -c user.name=model -c user.email=model@sandbox';
const exportsDir = () => path.join(mnt, 'exports');
const duKiB = () => Number(spawnSync('du', ['-sk', exportsDir()], { encoding: 'utf8' }).stdout.split('\t')[0]);
const leftovers = (id) => (fs.existsSync(path.join(exportsDir(), id)) ? fs.readdirSync(path.join(exportsDir(), id)) : []);

test('a save on a nearly full data root is refused before it streams; the sandbox keeps its work', { skip }, async () => {
  const dir = hostRepo('space');
  const id = await cloneSandbox(dir);
  await sh(id, `cd /workspace && head -c 24000000 /dev/urandom > big.bin && git add big.bin && ${GITID} commit -qm 'big work'`);
  // 40 MiB above the watermark: the 24 MB bundle, its scratch copy and the margin need 56.
  fillTo((WATERMARK_MIB + 40) * MiB);
  const before = freeBytes();
  const res = await tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(res.isError, true, resultText(res));
  const text = resultText(res);
  assert.match(text, /was not saved: saving it needs [\d.]+ MiB more on the disk of the data root/, text);
  assert.match(text, /keeps 32\.0 MiB free \(CHAT2SBX_MIN_FREE_DISK\)/, text);
  assert.match(text, /The sandbox keeps its work.*chat2sbx export delete ID/, text);
  assert.doesNotMatch(text, /stopped after/, 'refused before anything streamed');
  assert.ok(freeBytes() >= before - MiB, `nothing was written: ${before} -> ${freeBytes()}`);
  assert.deepEqual(leftovers(id), [], 'no export directory is left');
  // No save, no removal.
  const refused = await tools.call('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(refused.isError, true, resultText(refused));
  assert.match(resultText(refused), /was not removed/);
  assert.equal((await dockerInspect(id)).State.Running, true);
  // Room again: the work is all there and saves.
  unfill();
  const saved = await tools.ok('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(saved.saved, true);
  assert.ok(saved.bytes > 20_000_000, JSON.stringify(saved));
  await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
});

// The sandbox's own git makes a real bundle, then keeps the file open and,
// once the host has opened it (blob.open unlinks the path), appends 150 MB:
// the size the host was told is a few MB.
const GROWING_GIT = `#!/bin/sh
if [ "$1" = bundle ] && [ "$2" = create ]; then
  /usr/bin/git "$@" || exit $?
  f=$3
  ( exec 3>>"$f"; i=0; while [ -e "$f" ] && [ $i -lt 2000000 ]; do i=$((i+1)); done; head -c 150000000 /dev/zero >&3 ) </dev/null >/dev/null 2>&1 &
  exit 0
fi
exec /usr/bin/git "$@"
`;

test('a sandbox sending more than it announced is stopped before free space crosses the watermark', { skip }, async () => {
  const dir = path.join(home(), 'repositories', 'space');
  const id = await cloneSandbox(dir);
  await tools.ok('write', { sandbox_id: id, path: '/usr/local/bin/git', content: GROWING_GIT });
  await sh(id, `chmod +x /usr/local/bin/git && cd /workspace && head -c 4000000 /dev/urandom > more.bin && git add more.bin && ${GITID} commit -qm more`);
  fillTo((WATERMARK_MIB + 60) * MiB);
  const before = freeBytes();
  let lowest = before;
  const sampler = setInterval(() => {
    lowest = Math.min(lowest, freeBytes());
  }, 10);
  let res;
  try {
    res = await tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  } finally {
    clearInterval(sampler);
  }
  const text = resultText(res);
  assert.equal(res.isError, true, text);
  assert.match(text, /it stopped after [\d.]+ MiB of more than the sandbox announced, which were dropped/, text);
  assert.match(text, /CHAT2SBX_MIN_FREE_DISK/, text);
  console.log(`e2e 34: a growing bundle was stopped; lowest free ${(lowest / MiB).toFixed(1)} MiB (watermark ${WATERMARK_MIB} MiB)`);
  assert.ok(lowest >= WATERMARK_MIB * MiB, `free space stayed above the watermark (lowest ${lowest})`);
  assert.ok(freeBytes() >= before - MiB, 'what streamed was removed');
  assert.deepEqual(leftovers(id), []);
  unfill();
  await sh(id, 'rm /usr/local/bin/git');
  await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
});

test('a branch rename keeps no second bundle; apply brings the renamed branch home from the shared file', { skip }, async () => {
  unfill();
  const dir = hostRepo('rename');
  const id = await cloneSandbox(dir);
  await sh(id, `cd /workspace && ${GITID} checkout -qb work && head -c 6000000 /dev/urandom > w.bin && git add w.bin && ${GITID} commit -qm 'work: data' && echo dirty >> a.txt`);
  const first = await tools.ok('sandbox_export', { sandbox_id: id, message: 'before the rename' }, CREATE_TIMEOUT);
  assert.equal(first.saved, true);
  assert.ok(first.bytes > 5_000_000, JSON.stringify(first));
  const du0 = duKiB();
  await sh(id, 'cd /workspace && git branch -m work renamed');
  const second = await tools.ok('sandbox_export', { sandbox_id: id, message: 'after the rename' }, CREATE_TIMEOUT);
  assert.equal(second.saved, true, 'a new export: the refs changed');
  assert.notEqual(second.export_id, first.export_id);
  const grew = duKiB() - du0;
  console.log(`e2e 34: the rename-only export added ${grew} KiB to exports/ (the bundle is ${first.bytes} bytes)`);
  assert.ok(grew < 512, `exports/ grew by ${grew} KiB, not by the bundle`);

  const a = cliJson(['export', 'show', first.export_id, '--json']);
  const b = cliJson(['export', 'show', second.export_id, '--json']);
  assert.equal(b.shares_bundle_of, first.export_id, JSON.stringify(b));
  assert.equal(b.message, 'after the rename');
  const renamed = b.refs.find((r) => r.name === 'refs/heads/renamed');
  assert.equal(renamed.bundle_ref, 'refs/heads/work');
  assert.equal(renamed.oid, a.refs.find((r) => r.name === 'refs/heads/work').oid);
  assert.equal(renamed.new_commits, 1);
  assert.equal(b.snapshot.oid, a.snapshot.oid, 'the same uncommitted change is the same snapshot');
  const ia = fs.statSync(path.join(a.path, 'bundle')), ib = fs.statSync(path.join(b.path, 'bundle'));
  assert.equal(ia.ino, ib.ino, 'one file');
  const list = cliJson(['export', 'list', '--json']);
  assert.equal(list.find((x) => x.export_id === second.export_id).shares_bundle_of, first.export_id);
  assert.match(cli(['export', 'show', second.export_id]).stdout, /shared +its bundle is export exp_\w+'s/);

  // The first export goes to the trash: the second still applies whole.
  const del = cli(['export', 'delete', first.export_id]);
  assert.equal(del.status, 0, del.desc);
  assert.match(del.stdout, /moved export exp_\w+ to the trash: .*\/trash\/exp_/);
  assert.equal(cliJson(['export', 'list', '--json']).find((x) => x.export_id === first.export_id).state, 'trashed');
  const again = cli(['export', 'delete', first.export_id]);
  assert.notEqual(again.status, 0);
  assert.match(again.stderr, /in the trash already/);
  const applied = cliJson(['export', 'apply', second.export_id, '--json']);
  assert.ok(applied.refs_updated >= 3, JSON.stringify(applied));
  const ns = `refs/remotes/chat2sbx/${id}`;
  assert.equal(git(dir, 'rev-parse', `${ns}/renamed`).trim(), renamed.oid);
  assert.equal(git(dir, 'show', `${ns}/uncommitted:a.txt`), 'alpha\ndirty\n');
  assert.notEqual(spawnSync('git', ['-C', dir, 'rev-parse', '-q', '--verify', `${ns}/work`]).status, 0, 'the old name is not applied');

  // A real change keeps its own bundle.
  await sh(id, `cd /workspace && echo new > n.txt && git add n.txt && ${GITID} commit -qm 'new work'`);
  const third = await tools.ok('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(cliJson(['export', 'show', third.export_id, '--json']).shares_bundle_of, undefined);
  assert.match(fs.readFileSync(srv.stderrPath, 'utf8'), /its bundle is shared \(a hard link\), not copied/);
  await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
});

test('the caps refuse a save with the cap named; export delete makes room', { skip }, async () => {
  const dir = hostRepo('caps');
  await restart({ CHAT2SBX_MAX_EXPORTS_PER_SANDBOX: '2' });
  const id = await cloneSandbox(dir);
  const step = (n) => sh(id, `cd /workspace && echo ${n} > s${n}.txt && git add -A && ${GITID} commit -qm step-${n}`);
  await step(1);
  const e1 = await tools.ok('sandbox_export', { sandbox_id: id });
  await step(2);
  await tools.ok('sandbox_export', { sandbox_id: id });
  await step(3);
  let res = await tools.call('sandbox_export', { sandbox_id: id });
  assert.equal(res.isError, true, resultText(res));
  assert.match(resultText(res), /keeps 2 exports already, the most one sandbox may keep \(CHAT2SBX_MAX_EXPORTS_PER_SANDBOX=2\)/);
  assert.match(resultText(res), /chat2sbx export list; chat2sbx export apply ID; chat2sbx export delete ID/);
  const refused = await tools.call('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(refused.isError, true, 'no save, no removal');
  assert.equal((await dockerInspect(id)).State.Running, true);
  assert.equal(cli(['export', 'delete', e1.export_id]).status, 0);
  const e3 = await tools.ok('sandbox_export', { sandbox_id: id });
  assert.equal(e3.saved, true);

  await restart({ CHAT2SBX_MAX_EXPORT_BYTES_PER_SANDBOX: '1048576' });
  await sh(id, `cd /workspace && head -c 2000000 /dev/urandom > big.bin && git add big.bin && ${GITID} commit -qm big`);
  res = await tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(res.isError, true, resultText(res));
  assert.match(resultText(res), /more would pass the 1\.0 MiB one sandbox may keep \(CHAT2SBX_MAX_EXPORT_BYTES_PER_SANDBOX\)/);

  const kept = cliJson(['export', 'list', '--json']).filter((x) => x.state !== 'trashed' && x.kind !== 'none').length;
  await restart({ CHAT2SBX_MAX_EXPORTS_TOTAL: String(kept) });
  res = await tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(res.isError, true, resultText(res));
  assert.match(resultText(res), new RegExp(`the data root keeps ${kept} exports already.*CHAT2SBX_MAX_EXPORTS_TOTAL=${kept}`));

  await restart({});
  await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
});

// The plain copy's tar with one more entry appended that climbs out of DIR.
const ESCAPING_TAR = `#!/bin/sh
/usr/bin/tar "$@" || exit $?
out=; prev=; for a in "$@"; do [ "$prev" = -cf ] && out=$a; prev=$a; done
cd /tmp && echo pwned > p.txt && /usr/bin/tar -rf "$out" --transform 's,^p.txt,../escape.txt,' p.txt
`;

test('apply --to makes hard links, skips a FIFO and lists it; a refused entry leaves no DIR', { skip }, async () => {
  const dir = path.join(home(), 'repositories', 'plain');
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'readme.txt'), 'plain\n');
  assert.equal(cli(['workspace', 'add', dir, '--mode', 'clone']).status, 0);
  let id = await cloneSandbox(dir);
  await sh(id, 'cd /workspace && echo a > a && ln a b && mkdir d && ln a d/c && mkfifo f');
  const d1 = await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(d1.export.kind, 'tar');
  const out = path.join(srv.root, 'copy');
  const r = cli(['export', 'apply', d1.export.export_id, '--to', out]);
  assert.equal(r.status, 0, r.desc);
  assert.match(r.stdout, /skipped: FIFO "\.\/f" \(not made\)/, r.stdout);
  assert.match(r.stdout, /1 FIFO\(s\), socket\(s\) or device\(s\) were not made/);
  const ino = (p) => fs.statSync(path.join(out, p)).ino;
  assert.equal(ino('a'), ino('b'), 'a hard link, inside the copy');
  assert.equal(ino('a'), ino('d/c'));
  assert.equal(fs.statSync(path.join(out, 'a')).nlink, 3);
  assert.equal(fs.existsSync(path.join(out, 'f')), false);
  assert.equal(fs.readFileSync(path.join(out, 'readme.txt'), 'utf8'), 'plain\n');
  assert.deepEqual(fs.readdirSync(srv.root).filter((n) => n.includes('chat2sbx-partial')), []);

  id = await cloneSandbox(dir);
  await tools.ok('write', { sandbox_id: id, path: '/usr/local/bin/tar', content: ESCAPING_TAR });
  await sh(id, 'chmod +x /usr/local/bin/tar && echo more >> /workspace/readme.txt');
  const d2 = await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  const into = path.join(srv.root, 'evil', 'copy');
  const bad = cli(['export', 'apply', d2.export.export_id, '--to', into]);
  assert.notEqual(bad.status, 0, bad.desc);
  assert.match(bad.stderr, /nothing was written to '.*copy': entry "\.\.\/escape\.txt" was refused: it holds "\.\."/, bad.stderr);
  assert.equal(fs.existsSync(into), false, 'no partial DIR');
  assert.deepEqual(fs.readdirSync(path.join(srv.root, 'evil')), [], 'nothing beside it');
  assert.equal(fs.existsSync(path.join(srv.root, 'evil', 'escape.txt')), false);
});
