// 07: the agent's tools inside a sandbox, through MCP: numbered reads in
// pages, edit, apply_patch (all or nothing), search, list, interactive input
// and terminals, bash_list, and the output discipline (bounded, escaped,
// nothing hangs on stdin, background jobs do not hold a call).
import assert from 'node:assert/strict';

import { useServer } from '../lib/server.mjs';

const ctx = useServer();
let sandboxId = null;

async function tools() {
  if (!sandboxId) throw new Error('no sandbox (setup failed)');
  return ctx.tools();
}

async function sh(command, extra = {}) {
  const t = await tools();
  return t.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 20000, ...extra });
}

ctx.test('setup: a sandbox for these tests', async () => {
  const t = await ctx.tools();
  sandboxId = (await t.create({})).sandbox_id;
  ctx.onCleanup(() => t.destroyQuietly(sandboxId));
});

ctx.test('read: numbered lines, pages through a 50 MB file, a 1 GiB sparse file with limit 1', async () => {
  const t = await tools();
  await t.ok('write', { sandbox_id: sandboxId, path: 'n.txt', content: 'alpha\nbeta\ngamma\n' });
  const r = await t.ok('read', { sandbox_id: sandboxId, path: 'n.txt', offset: 2, limit: 1 });
  assert.equal(r.content, '     2\tbeta\n', JSON.stringify(r));
  assert.equal(r.total_lines, 3);
  assert.equal(r.truncated, true, 'more lines follow the selection');

  await sh("python3 -c \"import sys\nfor i in range(1, 500001): sys.stdout.write('line %07d ' % i + 'x' * 88 + '\\n')\" > big.txt; ls -l big.txt");
  const p1 = await t.ok('read', { sandbox_id: sandboxId, path: 'big.txt', offset: 1, limit: 100, line_numbers: false });
  assert.equal(p1.lines, 100);
  assert.ok(p1.content.startsWith('line 0000001 '), p1.content.slice(0, 40));
  const p2 = await t.ok('read', { sandbox_id: sandboxId, path: 'big.txt', offset: 400001, limit: 100, line_numbers: false });
  assert.ok(p2.content.startsWith('line 0400001 '), p2.content.slice(0, 40));
  assert.ok(p2.content.length <= 60000 + 200, 'a page is bounded');

  await sh('truncate -s 1G sparse.bin && printf "first\\n" | dd of=sparse.bin conv=notrunc 2>/dev/null');
  const s = await t.ok('read', { sandbox_id: sandboxId, path: 'sparse.bin', limit: 1 });
  assert.ok(s.binary === true || typeof s.content === 'string', JSON.stringify(s).slice(0, 300));
});

ctx.test('edit: one match, many matches refused with where, CRLF kept', async () => {
  const t = await tools();
  await t.ok('write', { sandbox_id: sandboxId, path: 'e.txt', content: 'a = 1\nb = 1\nc = 2\n' });
  const many = await t.call('edit', { sandbox_id: sandboxId, path: 'e.txt', old_string: '= 1', new_string: '= 9' });
  assert.equal(many.isError, true);
  assert.match(many.content[0].text, /2 times/);
  const none = await t.call('edit', { sandbox_id: sandboxId, path: 'e.txt', old_string: 'zzz', new_string: 'y' });
  assert.equal(none.isError, true);
  assert.match(none.content[0].text, /not found/);
  const one = await t.ok('edit', { sandbox_id: sandboxId, path: 'e.txt', old_string: 'c = 2', new_string: 'c = 3' });
  assert.equal(one.replacements, 1);
  const all = await t.ok('edit', { sandbox_id: sandboxId, path: 'e.txt', old_string: '= 1', new_string: '= 0', replace_all: true });
  assert.equal(all.replacements, 2);
  const back = await t.ok('read', { sandbox_id: sandboxId, path: 'e.txt', line_numbers: false });
  assert.equal(back.content, 'a = 0\nb = 0\nc = 3\n');

  await sh("printf 'one\\r\\ntwo\\r\\n' > crlf.txt");
  await t.ok('edit', { sandbox_id: sandboxId, path: 'crlf.txt', old_string: 'one\ntwo', new_string: 'uno\ndos' });
  const od = await sh('od -c crlf.txt | head -2');
  assert.match(od.output, /u\s+n\s+o\s+\\r\s+\\n\s+d\s+o\s+s\s+\\r\s+\\n/, od.output);
});

ctx.test('apply_patch: add, update, delete, move; a failing hunk changes nothing', async () => {
  const t = await tools();
  await t.ok('write', { sandbox_id: sandboxId, path: 'p/a.py', content: 'def f():\n    return 1\n', create_dirs: true });
  await t.ok('write', { sandbox_id: sandboxId, path: 'p/b.py', content: 'x = 1\ny = 2\n' });
  await t.ok('write', { sandbox_id: sandboxId, path: 'p/gone.txt', content: 'bye\n' });
  const ok = await t.ok('apply_patch', {
    sandbox_id: sandboxId,
    patch: [
      '*** Begin Patch',
      '*** Add File: p/new.txt',
      '+fresh',
      '*** Update File: p/a.py',
      '@@ def f():',
      '-    return 1',
      '+    return 2',
      '*** Update File: p/b.py',
      '*** Move to: p/c.py',
      ' x = 1',
      '-y = 2',
      '+y = 3',
      '*** Delete File: p/gone.txt',
      '*** End Patch',
    ].join('\n'),
  });
  assert.equal(ok.files.length, 4, JSON.stringify(ok));
  const ls = await sh('cd p && ls && cat a.py c.py new.txt');
  assert.equal(ls.output, 'a.py\nc.py\nnew.txt\ndef f():\n    return 2\nx = 1\ny = 3\nfresh\n');

  const bad = await t.call('apply_patch', {
    sandbox_id: sandboxId,
    patch: [
      '*** Begin Patch',
      '*** Update File: p/a.py',
      '-    return 2',
      '+    return 5',
      '*** Update File: p/c.py',
      '-no such line',
      '+z',
      '*** End Patch',
    ].join('\n'),
  });
  assert.equal(bad.isError, true, JSON.stringify(bad));
  assert.match(bad.content[0].text, /p\/c\.py/);
  const still = await sh('cat p/a.py');
  assert.equal(still.output, 'def f():\n    return 2\n', 'the first file is untouched');

  // A patch guarded by the hash read returned refuses when the file moved on.
  const seen = await t.ok('read', { sandbox_id: sandboxId, path: 'p/a.py' });
  await sh("sed -i 's/return 2/return 7/' p/a.py");
  const stale = await t.call('apply_patch', {
    sandbox_id: sandboxId,
    patch: '*** Begin Patch\n*** Update File: p/a.py\n-    return 7\n+    return 8\n*** End Patch',
    expected_sha256: { 'p/a.py': seen.sha256 },
  });
  assert.equal(stale.isError, true, JSON.stringify(stale));
  assert.match(stale.content[0].text, /changed since it was read/);
  assert.equal((await sh('cat p/a.py')).output, 'def f():\n    return 7\n');
});

ctx.test('search and list', async () => {
  const t = await tools();
  await sh('mkdir -p s/sub s/.git && echo "needle one" > s/a.txt && echo "NEEDLE two" > s/sub/b.md && echo needle > s/.git/x && printf "needle\\0bin" > s/c.bin');
  const r = await t.ok('search', { sandbox_id: sandboxId, pattern: 'needle', path: 's', case_insensitive: true });
  assert.equal(r.count, 2, r.matches);
  assert.match(r.matches, /a\.txt:1:needle one/);
  assert.match(r.matches, /sub\/b\.md:1:NEEDLE two/);
  const g = await t.ok('search', { sandbox_id: sandboxId, pattern: 'needle', path: 's', glob: '*.md', case_insensitive: true });
  assert.equal(g.count, 1, g.matches);
  const badRe = await t.call('search', { sandbox_id: sandboxId, pattern: '(unclosed' });
  assert.equal(badRe.isError, true);
  const l = await t.ok('list', { sandbox_id: sandboxId, path: 's', depth: 2 });
  const paths = l.entries.map((e) => e.path);
  assert.ok(paths.includes('a.txt') && paths.includes('sub') && paths.includes('sub/b.md'), JSON.stringify(paths));
  assert.equal(l.entries.find((e) => e.path === 'a.txt').type, 'file');
  assert.equal(l.entries.find((e) => e.path === 'sub').type, 'dir');
});

ctx.test('stdin: at EOF by default; interactive input and close; a terminal', async () => {
  const t = await tools();
  const cat = await sh('cat; read x; echo "rc=$?"');
  assert.equal(cat.status, 'exited');
  assert.match(cat.output, /rc=1/);

  const py = await t.ok('bash', { sandbox_id: sandboxId, command: "python3 -c 'print(\"got\", input())'", interactive: true, yield_time_ms: 500 });
  assert.equal(py.status, 'running', JSON.stringify(py));
  const w = await t.ok('bash_input', { sandbox_id: sandboxId, session_id: py.session_id, data: 'hello\n' });
  assert.equal(w.bytes_written, 6);
  let out = py.output;
  let last = py;
  for (let i = 0; i < 10 && last.status === 'running'; i++) {
    last = await t.ok('bash_poll', { sandbox_id: sandboxId, session_id: py.session_id, yield_time_ms: 2000 });
    out += last.output;
  }
  assert.equal(out, 'got hello\n');
  assert.equal(last.exit_code, 0);

  const c2 = await t.ok('bash', { sandbox_id: sandboxId, command: 'wc -l', interactive: true, yield_time_ms: 300 });
  await t.ok('bash_input', { sandbox_id: sandboxId, session_id: c2.session_id, data: 'a\nb\n', close: true });
  const end = await t.ok('bash_poll', { sandbox_id: sandboxId, session_id: c2.session_id, yield_time_ms: 5000 });
  assert.equal(end.output.trim(), '2');

  const notInteractive = await t.ok('bash', { sandbox_id: sandboxId, command: 'sleep 5', yield_time_ms: 100 });
  const refused = await t.call('bash_input', { sandbox_id: sandboxId, session_id: notInteractive.session_id, data: 'x' });
  assert.equal(refused.isError, true);
  await t.ok('bash_stop', { sandbox_id: sandboxId, session_id: notInteractive.session_id });

  const tty = await sh('tty; stty size', { tty: true, rows: 30, cols: 100 });
  assert.match(tty.output, /\/dev\/pts\/\d+/);
  assert.match(tty.output, /30 100/);
});

ctx.test('output discipline: bounded, escaped, background jobs, signals, bash_list', async () => {
  const t = await tools();
  const big = await sh('yes | head -c 20000000');
  assert.ok(big.output.length <= 61000, `bounded: ${big.output.length}`);
  assert.match(big.output, /bytes left out here/, 'an ended command: head, note, tail');
  assert.equal(big.has_more_output, false);
  const bin = await sh("printf '\\xff\\xfe'; echo");
  const env = await sh('echo "$USER $HOME $LANG"; env | grep -c CHAT2SBX_E2E || true');
  assert.match(env.output, /^root \/root C\.UTF-8\n0\n$/);
  assert.equal(bin.output, '\ufffd\ufffd\n');
  const t0 = Date.now();
  const bg = await sh('sleep 100 & echo started');
  assert.equal(bg.status, 'exited');
  assert.equal(bg.output, 'started\n');
  assert.ok(Date.now() - t0 < 10000, 'the call returns when the shell exits');
  const missing = await sh('no-such-command-here');
  assert.equal(missing.exit_code, 127);
  const killed = await sh('kill -9 $$');
  assert.equal(killed.exit_code, 137);
  assert.equal(killed.signal, 'SIGKILL');
  const list = await t.ok('bash_list', { sandbox_id: sandboxId });
  assert.ok(list.sessions.some((s) => s.session_id === bg.session_id), JSON.stringify(list).slice(0, 300));
});

ctx.finish();
