// 23: nothing the model did in a clone sandbox is lost (issue 14). The work
// of a clone (every branch, tag, HEAD and a snapshot of uncommitted and
// untracked files) is saved before every removal and on sandbox_export;
// only the person brings it home with `chat2sbx export apply`, which writes
// refs/remotes/chat2sbx/<sandbox>/... and nothing else of the host
// repository (checked byte for byte). No save, no removal: destroy refuses
// without force (a size cap, a clone without git or tar, a helper that does
// not answer), expiry stops the container instead and retries. Hostile
// clones (bad ref names, refs outside heads/tags, .gitmodules attacks,
// oversized work, a tar that escapes) are refused with a clear message.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { EXPORT_ID_RE, cloneHelpers, unsavedWork } from '../lib/clones.mjs';
import { CREATE_TIMEOUT, dockerInspect, dockerRequest, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

const { reposRoot, cli, cliJson, git, hostRepo, hostState, sh, cloneSandbox, GITID } = cloneHelpers(ctx);

ctx.test('destroy saves both branches, the new one and the snapshot; apply brings them home and nothing else', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('roundtrip');
  const sbx = await cloneSandbox(tools, dir);
  const id = sbx.sandbox_id;
  await sh(tools, id,
    `cd /workspace && ${GITID} checkout -qb work && echo one > w.txt && git add w.txt && ${GITID} commit -qm 'work: first' && ` +
    `echo changed >> a.txt && echo fresh > untracked.txt && mkdir -p build && echo junk > build/out.o && ` +
    `git status --porcelain`);
  assert.equal(await unsavedWork(tools, id), true, 'sandbox_get shows unsaved work');

  const before = hostState(dir);
  const t0 = Date.now();
  const destroyed = await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  const saveMs = Date.now() - t0;
  assert.equal(destroyed.status, 'removed', JSON.stringify(destroyed));
  assert.match(String(destroyed.export?.export_id), EXPORT_ID_RE, JSON.stringify(destroyed));
  const exp = destroyed.export.export_id;
  assert.equal(destroyed.export.kind, 'git');
  assert.match(destroyed.message, new RegExp(`chat2sbx export apply`), destroyed.message);
  assert.equal(destroyed.export.commits_ahead, 1, JSON.stringify(destroyed.export));
  assert.equal(destroyed.export.dirty_files, 2, 'a.txt modified, untracked.txt new; build/ is ignored');

  const list = cliJson(['export', 'list', '--json']);
  const row = list.find((x) => x.export_id === exp);
  assert.ok(row, JSON.stringify(list));
  assert.equal(row.state, 'not-applied');
  assert.equal(row.reason, 'destroy');
  const st = fs.statSync(row.path);
  assert.equal(st.mode & 0o777, 0o700, 'the export directory is private');
  for (const f of fs.readdirSync(row.path)) assert.equal(fs.statSync(path.join(row.path, f)).mode & 0o077, 0, `${f} is private`);
  console.log(`e2e 23: export of a small repository: ${row.bytes} bytes, destroy with the save ${saveMs} ms`);

  const show = cliJson(['export', 'show', exp, '--json']);
  const names = show.refs.map((r) => r.name).sort();
  assert.deepEqual(names, ['HEAD', 'refs/chat2sbx/uncommitted', 'refs/heads/feature', 'refs/heads/main', 'refs/heads/work', 'refs/tags/v1']);
  const work = show.refs.find((r) => r.name === 'refs/heads/work');
  assert.equal(work.new_commits, 1);
  assert.equal(work.commits[0].subject, 'work: first');
  assert.deepEqual(work.files, ['w.txt']);
  assert.deepEqual(show.snapshot.files.map((f) => `${f.status} ${f.path}`).sort(), ['A untracked.txt', 'M a.txt']);
  const text = cli(['export', 'show', exp]);
  assert.equal(text.status, 0, text.desc);
  assert.match(text.stdout, /work: first/);

  const applied = cliJson(['export', 'apply', exp, '--json']);
  assert.ok(applied.refs_updated >= 5, JSON.stringify(applied));
  const after = hostState(dir);
  assert.deepEqual(after, before, 'the working tree, index, branches, HEAD and config are byte for byte the same');
  const ns = `refs/remotes/chat2sbx/${id}`;
  assert.equal(git(dir, 'rev-parse', `${ns}/work`).trim(), work.oid);
  assert.equal(git(dir, 'log', '-1', '--format=%s', `${ns}/work`).trim(), 'work: first');
  assert.equal(git(dir, 'show', `${ns}/uncommitted:a.txt`), 'alpha\nchanged\n');
  assert.equal(git(dir, 'show', `${ns}/uncommitted:untracked.txt`), 'fresh\n');
  assert.notEqual(spawnSync('git', ['-C', dir, 'cat-file', '-e', `${ns}/uncommitted:build/out.o`]).status, 0,
    'ignored files are not in the snapshot');
  assert.equal(git(dir, 'rev-parse', `${ns}/uncommitted^`).trim(), work.oid, "the snapshot's parent is HEAD");
  assert.equal(git(dir, 'rev-parse', `${ns}/tags/v1`).trim(), git(dir, 'rev-parse', 'v1').trim());
  assert.match(cli(['export', 'apply', exp]).stdout, /nothing changed/);
  const again = cliJson(['export', 'apply', exp, '--json']);
  assert.equal(again.refs_updated, 0, `applying twice changes nothing: ${JSON.stringify(again)}`);
  assert.deepEqual(hostState(dir), before);
  assert.equal(cliJson(['export', 'list', '--json']).find((x) => x.export_id === exp).state, 'applied');
});

ctx.test('sandbox_export mid-work, more commits, destroy: two exports, the second holds the later commits', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('checkpoints');
  const sbx = await cloneSandbox(tools, dir);
  const id = sbx.sandbox_id;
  const clean = await tools.ok('sandbox_export', { sandbox_id: id, message: 'nothing yet' });
  assert.equal(clean.kind, 'none', `a clone with nothing new saves only the manifest: ${JSON.stringify(clean)}`);
  await sh(tools, id, `cd /workspace && echo 1 > one.txt && git add one.txt && ${GITID} commit -qm 'step one' && echo wip > wip.txt && echo staged > staged.txt && git add staged.txt`);
  const state = 'cd /workspace && sha256sum .git/index && git stash list | wc -l && git status --porcelain=v1 && git for-each-ref';
  const stateBefore = await sh(tools, id, state);
  const first = await tools.ok('sandbox_export', { sandbox_id: id, message: 'after step one' });
  assert.equal(first.saved, true);
  assert.equal(first.kind, 'git');
  assert.equal(first.commits_ahead, 1);
  assert.equal(first.dirty_files, 2, 'staged.txt (staged) and wip.txt (untracked)');
  assert.match(first.command, new RegExp(`^chat2sbx export apply ${first.export_id}$`));
  assert.equal(await sh(tools, id, state), stateBefore, "the clone's index, stash, status and refs are as they were");
  const list = await tools.ok('bash_list', { sandbox_id: id });
  assert.ok(!JSON.stringify(list).includes('chat2sbx-export'), 'the save runs as a hidden session');
  const same = await tools.ok('sandbox_export', { sandbox_id: id });
  assert.equal(same.saved, false, 'the same state is not saved twice');
  assert.equal(same.export_id, first.export_id);
  assert.equal(await unsavedWork(tools, id), false);

  await sh(tools, id, `cd /workspace && git add -A && ${GITID} commit -qm 'step two' && ${GITID} checkout -qb side && echo s > s.txt && git add s.txt && ${GITID} commit -qm 'side work'`);
  const destroyed = await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  const second = destroyed.export.export_id;
  assert.notEqual(second, first.export_id);
  const a = cliJson(['export', 'show', first.export_id, '--json']);
  const b = cliJson(['export', 'show', second, '--json']);
  assert.equal(a.message, 'after step one');
  assert.deepEqual(a.refs.find((r) => r.name === 'refs/heads/main').commits.map((c) => c.subject), ['step one']);
  assert.deepEqual(b.refs.find((r) => r.name === 'refs/heads/main').commits.map((c) => c.subject), ['step two', 'step one']);
  assert.deepEqual(b.refs.find((r) => r.name === 'refs/heads/side').commits.map((c) => c.subject), ['side work', 'step two', 'step one']);
  assert.equal(b.snapshot.oid, undefined, 'nothing uncommitted at the end');
  assert.ok(!a.refs.some((r) => r.name === 'refs/heads/side'));
  const before = hostState(dir);
  cliJson(['export', 'apply', first.export_id, '--json']);
  cliJson(['export', 'apply', second, '--json']);
  assert.deepEqual(hostState(dir), before);
  assert.equal(git(dir, 'log', '-1', '--format=%s', `chat2sbx/${id}/main`).trim(), 'step two', 'the later export moves the refs on');
  const audit = spawnSync('sqlite3', [path.join(ctx.srv.dataRoot, 'state', 'chat2sbx.sqlite'),
    `SELECT action, status FROM audit WHERE action LIKE 'export.%' AND (sandbox_id = '${id}')`], { encoding: 'utf8' });
  assert.match(audit.stdout, /export\.save\|ok/);
  assert.match(audit.stdout, /export\.apply\|ok/);
});

const restart = (env) => ctx.restartWith(env);

const HOUR = 3600_000;

// Every maintenance pass tries the save of an expired sandbox again (it
// starts the container for it and stops it when the save fails), so "stopped"
// is what it settles to, not what every instant shows.
async function stoppedSoon(id) {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const info = await dockerInspect(id);
    assert.ok(info, `the container of ${id} still exists`);
    if (!info.State.Running) return;
    assert.ok(Date.now() < deadline, `the container of ${id} is still running`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

ctx.test('no save, no removal: destroy refuses without force, expiry stops instead, create starts it again, a later pass saves', async () => {
  let tools = await ctx.tools();
  const dir = hostRepo('nosave');
  const small = { CHAT2SBX_MAX_EXPORT_BYTES: '65536' };
  await restart(small);
  tools = await ctx.tools();
  const sbx = await cloneSandbox(tools, dir);
  const id = sbx.sandbox_id;
  await sh(tools, id, 'cd /workspace && head -c 300000 /dev/urandom > big.bin && echo note > note.txt');
  const refused = await tools.call('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(refused.isError, true, resultText(refused));
  assert.match(resultText(refused), /CHAT2SBX_MAX_EXPORT_BYTES/);
  assert.match(resultText(refused), /force/);
  assert.equal((await dockerInspect(id)).State.Running, true, 'nothing was removed');

  // Idle for a day: the start-time expiry pass cannot save, so it stops the container.
  await restart({ ...small, CHAT2SBX_CLOCK_OFFSET_MS: String(25 * HOUR) });
  tools = await ctx.tools();
  let row = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === id);
  assert.equal(row?.status, 'expired', JSON.stringify(row));
  assert.match(row.failure_reason, /CHAT2SBX_MAX_EXPORT_BYTES/);
  await stoppedSoon(id);
  const status = cliJson(['status', '--json']);
  assert.ok(status.sandboxes.expired >= 1, JSON.stringify(status.sandboxes));
  const call = await tools.call('bash', { sandbox_id: id, command: 'true' });
  assert.match(resultText(call), /expired.*sandbox_create/);

  // sandbox_create for its workspace starts that very sandbox again, clone intact.
  const again = await tools.create({ workspace_id: sbx.workspace_id });
  assert.equal(again.sandbox_id, id, JSON.stringify(again));
  assert.equal(again.reused, true);
  assert.match(again.options_note, /expired/);
  assert.match(await sh(tools, id, 'cd /workspace && cat note.txt && stat -c %s big.bin'), /note\n300000/);

  // Idle again, still too big: expired again. Then the cause is gone (a larger cap): the next pass saves and removes.
  await restart({ ...small, CHAT2SBX_CLOCK_OFFSET_MS: String(50 * HOUR) });
  tools = await ctx.tools();
  row = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === id);
  assert.equal(row?.status, 'expired', JSON.stringify(row));
  await restart({ CHAT2SBX_CLOCK_OFFSET_MS: String(50 * HOUR) });
  tools = await ctx.tools();
  const gone = await tools.ok('sandbox_get', { sandbox_id: id });
  assert.equal(gone.status, 'removed', JSON.stringify(gone));
  const exp = cliJson(['export', 'list', '--json']).filter((x) => x.sandbox_id === id);
  assert.equal(exp.length, 1, JSON.stringify(exp));
  assert.equal(exp[0].reason, 'expire');
  const show = cliJson(['export', 'show', exp[0].export_id, '--json']);
  assert.deepEqual(show.snapshot.files.map((f) => f.path).sort(), ['big.bin', 'note.txt']);
  const inspect = await dockerRequest('GET', `/containers/${id}/json`);
  assert.equal(inspect.status, 404, 'the container is gone');
  await restart({});
});

ctx.test("a broken clone: destroy refuses and says so; the model's force stops and keeps it, the person's removes it", async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('broken');
  const sbx = await cloneSandbox(tools, dir);
  const id = sbx.sandbox_id;
  // Without git the save falls back to a tar of /workspace (.git included);
  // without tar as well nothing can be saved.
  await sh(tools, id, `cd /workspace && ${GITID} commit -qm empty --allow-empty && mv /usr/bin/git /usr/bin/git.off && mv "$(command -v tar)" /tmp/tar.off`);
  const refused = await tools.call('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(refused.isError, true, resultText(refused));
  assert.match(resultText(refused), /was not removed: its work could not be saved .*failed inside it/);
  const cliRefused = cli(['sandbox', 'destroy', id]);
  assert.notEqual(cliRefused.status, 0, cliRefused.desc);
  assert.match(cliRefused.stderr, /--force/);
  // Only the person can discard unsaved work (issue 23): the model's force stops the sandbox and keeps it.
  const forced = await tools.ok('sandbox_destroy', { sandbox_id: id, force: true }, CREATE_TIMEOUT);
  assert.equal(forced.status, 'failed', JSON.stringify(forced));
  assert.equal(forced.kept_for_person, true, JSON.stringify(forced));
  assert.equal(forced.lost, undefined, 'nothing is lost');
  assert.match(forced.message, new RegExp(`chat2sbx sandbox destroy ${id} --force`), forced.message);
  const kept = await dockerInspect(id);
  assert.equal(kept.State.Running, false, 'stopped');
  const call = await tools.call('bash', { sandbox_id: id, command: 'true' });
  assert.equal(call.isError, true, 'no model call reaches it any more');
  const again = await tools.ok('sandbox_destroy', { sandbox_id: id, force: true }, CREATE_TIMEOUT);
  assert.equal(again.kept_for_person, true, 'a second force by the model keeps it too');
  assert.equal((await dockerInspect(id)).Id, kept.Id, 'the container is still there');
  const removed = cli(['sandbox', 'destroy', id, '--force']);
  assert.equal(removed.status, 0, removed.desc);
  assert.match(removed.stdout + removed.stderr, /not saved and are gone|lost/, removed.desc);
  assert.equal((await tools.ok('sandbox_get', { sandbox_id: id })).status, 'removed');
  assert.equal((await dockerRequest('GET', `/containers/${id}/json`)).status, 404, 'the person removed it');
});

ctx.test('a helper that does not answer: destroy refuses with nothing removed; once it answers, the save and the removal happen', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('frozen');
  const sbx = await cloneSandbox(tools, dir);
  const id = sbx.sandbox_id;
  await sh(tools, id, `cd /workspace && ${GITID} commit -qm 'before the freeze' --allow-empty`);
  // Frozen from the host (SIGSTOP on the container's first process: the
  // helper, or the runtime that holds it), so nothing answers the save.
  const pid = (await dockerInspect(id)).State.Pid;
  assert.ok(pid > 1, 'the container has a process');
  process.kill(pid, 'SIGSTOP');
  let refused;
  try {
    refused = await tools.call('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  } finally {
    process.kill(pid, 'SIGCONT');
  }
  assert.equal(refused.isError, true, resultText(refused));
  assert.match(resultText(refused), /was not removed: its work could not be saved/);
  assert.match(resultText(refused), /force/);
  assert.equal((await dockerInspect(id)).State.Running, true, 'nothing was removed');
  assert.equal((await tools.ok('sandbox_get', { sandbox_id: id })).status, 'running');
  const done = await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(done.status, 'removed');
  assert.ok(done.export?.export_id, JSON.stringify(done));
  const show = cliJson(['export', 'show', done.export.export_id, '--json']);
  assert.ok(JSON.stringify(show).includes('before the freeze'), JSON.stringify(show));
});
