// 24: hostile clones cannot reach past their save (issue 14; split from 23
// to keep each file well inside its time limit). A clone whose root puts
// its own git or tar first on PATH hands the save bad ref names, refs
// outside heads/tags, a .gitmodules attack or a tar that tries to leave the
// directory it is extracted into; each is refused with a clear message and
// the host repository stays as it was, byte for byte.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { cloneHelpers } from '../lib/clones.mjs';
import { CREATE_TIMEOUT, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

const { reposRoot, cli, cliJson, git, hostRepo, hostState, sh, cloneSandbox, GITID } = cloneHelpers(ctx);

// A hostile clone: root in the sandbox puts its own git first on PATH,
// which hands the save a bundle whose header claims the ref in
// /etc/evil-ref instead of refs/heads/main (or, with "list", adds that ref
// to the list of refs).
const EVIL_GIT = `#!/bin/sh
if [ "$1" = bundle ] && [ "$2" = create ] && [ "$(cat /etc/evil-mode)" = bundle ]; then
  /usr/bin/git "$@" || exit $?
  sed -i "0,\\| refs/heads/main$|s|| $(cat /etc/evil-ref)|" "$3"
  exit 0
fi
if [ "$1" = for-each-ref ] && [ "$(cat /etc/evil-mode)" = list ]; then
  /usr/bin/git "$@" || exit $?
  printf '%s %s\\n' "$(/usr/bin/git rev-parse HEAD)" "$(cat /etc/evil-ref)"
  exit 0
fi
exec /usr/bin/git "$@"
`;

ctx.test('a hostile clone cannot write outside the chat2sbx namespace and fails with a clear message', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('hostile');
  const cases = [
    { mode: 'bundle', ref: 'refs/notes/evil', msg: /"refs\/notes\/evil" is refused: an export carries only HEAD, refs\/heads/ },
    { mode: 'bundle', ref: 'refs/heads/a..b', msg: /"refs\/heads\/a\.\.b" is refused: it holds "\.\."/ },
    { mode: 'bundle', ref: 'refs/heads/x\x1b[31mred', msg: /refs\/heads\/x\\x1b\[31mred" is refused: it holds a control character/ },
    { mode: 'list', ref: 'refs/remotes/origin/evil', msg: /list of refs was refused.*"refs\/remotes\/origin\/evil" is refused/ },
  ];
  const before = hostState(dir);
  for (const c of cases) {
    const sbx = await cloneSandbox(tools, dir);
    const id = sbx.sandbox_id;
    fs.writeFileSync(path.join(ctx.srv.root, 'evil-git'), EVIL_GIT);
    await tools.ok('write', { sandbox_id: id, path: '/usr/local/bin/git', content: EVIL_GIT });
    await tools.ok('write', { sandbox_id: id, path: '/etc/evil-ref', content: c.ref });
    await tools.ok('write', { sandbox_id: id, path: '/etc/evil-mode', content: c.mode });
    await sh(tools, id, `chmod +x /usr/local/bin/git && cd /workspace && echo x > x.txt && git add x.txt && ${GITID} commit -qm hostile`);
    const res = await tools.call('sandbox_export', { sandbox_id: id });
    assert.equal(res.isError, true, `${c.ref}: ${resultText(res)}`);
    assert.match(resultText(res), c.msg, `${JSON.stringify(c.ref)}: ${resultText(res)}`);
    assert.ok(!/[\x00-\x08\x0b-\x1f]/.test(resultText(res)), 'no raw control byte reaches the answer');
    const refused = await tools.call('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
    assert.equal(refused.isError, true, resultText(refused));
    assert.ok(!cliJson(['export', 'list', '--json']).some((x) => x.sandbox_id === id), 'nothing was kept');
    const removed = cli(['sandbox', 'destroy', id, '--force']);
    assert.equal(removed.status, 0, removed.desc);
    assert.deepEqual(hostState(dir), before);
    assert.equal(git(dir, 'for-each-ref', `refs/remotes/chat2sbx/${id}`), '');
  }

  // A .gitmodules that aims a submodule outside its place fails git's object checks on the host.
  const sbx = await cloneSandbox(tools, dir);
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: '/workspace/.gitmodules',
    content: '[submodule "../../../../modules/evil"]\n\tpath = evil\n\turl = ./evil\n' });
  await sh(tools, sbx.sandbox_id, `cd /workspace && git add .gitmodules && ${GITID} commit -qm 'submodule attack'`);
  const res = await tools.call('sandbox_export', { sandbox_id: sbx.sandbox_id });
  assert.equal(res.isError, true, resultText(res));
  assert.match(resultText(res), /failed git's object checks.*gitmodules/i, resultText(res));
  const removed = cli(['sandbox', 'destroy', sbx.sandbox_id, '--force']);
  assert.equal(removed.status, 0, removed.desc);
  assert.deepEqual(hostState(dir), before);
});

// A tar that root in the sandbox doctored: after the real archive, entries
// that try to leave the directory they are extracted into.
const EVIL_TAR = `#!/bin/sh
/usr/bin/tar "$@" || exit $?
out=; prev=; for a in "$@"; do [ "$prev" = -cf ] && out=$a; prev=$a; done
rm -rf /tmp/h && mkdir -p /tmp/h/real && cd /tmp/h && echo pwned > p.txt && echo through > real/x
if [ "$(cat /etc/evil-mode)" = escape ]; then
  /usr/bin/tar -rf "$out" --transform 's,^p.txt,../escape.txt,' p.txt
elif [ "$(cat /etc/evil-mode)" = setuid ]; then
  # the sandbox cannot chmod u+s (seccomp), but a tar it writes can claim it
  /usr/bin/tar -rf "$out" --mode=6755 --transform 's,^p.txt,suid.txt,' p.txt
else
  ln -s "$(cat /etc/evil-ref)" link
  /usr/bin/tar -rf "$out" link
  /usr/bin/tar -rf "$out" --transform 's,^real,link,' real/x
fi
`;

ctx.test('a plain copy round-trips through --to; a doctored tar cannot write outside DIR', async () => {
  const tools = await ctx.tools();
  const dir = path.join(reposRoot(), 'plain');
  fs.mkdirSync(path.join(dir, 'sub'), { recursive: true });
  fs.writeFileSync(path.join(dir, 'readme.txt'), 'plain\n');
  fs.writeFileSync(path.join(dir, 'sub', 'data.txt'), 'data\n');
  assert.equal(cli(['workspace', 'add', dir, '--mode', 'clone']).status, 0);
  const sbx = await cloneSandbox(tools, dir);
  await sh(tools, sbx.sandbox_id, 'cd /workspace && echo more >> readme.txt && echo new > sub/new.txt && chmod 755 sub/new.txt && ln -s readme.txt link.txt');
  const destroyed = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  const exp = destroyed.export.export_id;
  assert.equal(destroyed.export.kind, 'tar');
  const noTo = cli(['export', 'apply', exp]);
  assert.notEqual(noTo.status, 0);
  assert.match(noTo.stderr, /--to DIR/);
  const out = path.join(ctx.srv.root, 'plain-copy');
  const r = cli(['export', 'apply', exp, '--to', out]);
  assert.equal(r.status, 0, r.desc);
  assert.equal(fs.readFileSync(path.join(out, 'readme.txt'), 'utf8'), 'plain\nmore\n');
  assert.equal(fs.readFileSync(path.join(out, 'sub', 'new.txt'), 'utf8'), 'new\n');
  assert.equal(fs.readlinkSync(path.join(out, 'link.txt')), 'readme.txt');
  assert.equal(fs.readFileSync(path.join(dir, 'readme.txt'), 'utf8'), 'plain\n', 'the source is untouched');
  const again = cli(['export', 'apply', exp, '--to', out]);
  assert.notEqual(again.status, 0);
  assert.match(again.stderr, /not empty/);

  // A tar whose entry claims setuid and setgid: applied, without the bits.
  const s1 = await cloneSandbox(tools, dir);
  await tools.ok('write', { sandbox_id: s1.sandbox_id, path: '/usr/local/bin/tar', content: EVIL_TAR });
  await tools.ok('write', { sandbox_id: s1.sandbox_id, path: '/etc/evil-mode', content: 'setuid' });
  await sh(tools, s1.sandbox_id, 'chmod +x /usr/local/bin/tar && echo changed >> /workspace/readme.txt');
  const d1 = await tools.ok('sandbox_destroy', { sandbox_id: s1.sandbox_id }, CREATE_TIMEOUT);
  const suidOut = path.join(ctx.srv.root, 'suid-copy');
  const rs = cli(['export', 'apply', d1.export.export_id, '--to', suidOut]);
  assert.equal(rs.status, 0, rs.desc);
  assert.equal(fs.readFileSync(path.join(suidOut, 'suid.txt'), 'utf8'), 'pwned\n');
  assert.equal(fs.statSync(path.join(suidOut, 'suid.txt')).mode & 0o7000, 0, 'no setuid or setgid bit is made');

  const target = path.join(ctx.srv.root, 'outside-target');
  fs.mkdirSync(target, { recursive: true });
  for (const mode of ['escape', 'symlink']) {
    const s2 = await cloneSandbox(tools, dir);
    await tools.ok('write', { sandbox_id: s2.sandbox_id, path: '/usr/local/bin/tar', content: EVIL_TAR });
    await tools.ok('write', { sandbox_id: s2.sandbox_id, path: '/etc/evil-mode', content: mode });
    await tools.ok('write', { sandbox_id: s2.sandbox_id, path: '/etc/evil-ref', content: target });
    await sh(tools, s2.sandbox_id, 'chmod +x /usr/local/bin/tar && echo changed >> /workspace/readme.txt');
    const d2 = await tools.ok('sandbox_destroy', { sandbox_id: s2.sandbox_id }, CREATE_TIMEOUT);
    const into = path.join(ctx.srv.root, `evil-${mode}`, 'inner');
    const bad = cli(['export', 'apply', d2.export.export_id, '--to', into]);
    assert.notEqual(bad.status, 0, bad.desc);
    assert.match(bad.stderr, mode === 'escape' ? /"\.\.\/escape\.txt" was refused/ : /"link\/x" was refused/, bad.stderr);
    assert.ok(!fs.existsSync(path.join(ctx.srv.root, `evil-${mode}`, 'escape.txt')), 'nothing above DIR');
    assert.deepEqual(fs.readdirSync(target), [], 'nothing written through the link');
  }
});
