// 33: bytes a clone sandbox hands over are hostile on the host too (issue
// 23). A 10-level delta bomb from the sandbox's own `git bundle` is
// refused at a bound, with every host process of serve far under the
// memory ceiling (measured from /proc while it runs, and from serve's own
// report of its git children); four parallel sandbox_export calls of one
// sandbox run one at a time; 5 000 new branches are refused before the
// host runs git; a branch named `x;touch${IFS}/tmp/PWNED;#` (and one with a
// right-to-left override) is printed quoted by `export show` and `export
// apply`, and running the printed git lines with bash creates nothing; a
// serve killed while a save streams leaves nothing of it in exports/ once
// it has started again. In every refusal the sandbox keeps its work.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';

import { cloneHelpers } from '../lib/clones.mjs';
import { CREATE_TIMEOUT, dockerInspect, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();
const { cli, cliJson, git, hostRepo, sh, cloneSandbox, GITID } = cloneHelpers(ctx);
const CEILING_KIB = 1024 * 1024; // CHAT2SBX_SAVE_MEMORY_BYTES' default, 1 GiB

// ---- the delta bomb: a 1 MiB blob of zeros and ten REF_DELTAs, each
// copying the one before twice (real ids, so git would resolve it) ----

function varint(v) {
  const out = [];
  do {
    let b = v % 128;
    v = Math.floor(v / 128);
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return Buffer.from(out);
}

function entry(type, size, baseOid, data) {
  const head = [(type << 4) | (size & 15)];
  let rest = Math.floor(size / 16);
  while (rest) {
    head[head.length - 1] |= 0x80;
    head.push(rest % 128);
    rest = Math.floor(rest / 128);
  }
  return Buffer.concat([Buffer.from(head), baseOid || Buffer.alloc(0), zlib.deflateSync(data, { level: 9 })]);
}

function zerosOid(size) {
  const h = crypto.createHash('sha1');
  h.update(`blob ${size}\0`);
  const chunk = Buffer.alloc(1 << 20);
  for (let done = 0; done < size; done += chunk.length) h.update(size - done < chunk.length ? chunk.subarray(0, size - done) : chunk);
  return h.digest();
}

function bombPack(levels = 10, base = 1 << 20) {
  const parts = [Buffer.from('PACK'), Buffer.from([0, 0, 0, 2]), Buffer.alloc(4)];
  parts[2].writeUInt32BE(levels + 1);
  parts.push(entry(3, base, null, Buffer.alloc(base)));
  let size = base;
  for (let l = 0; l < levels; l++, size *= 2) {
    const ops = [varint(size), varint(2 * size)];
    // Copies of at most 8 MiB (patch-delta.c: offset in 4 bytes, size in 3).
    const chunk = Math.min(size, 8 << 20);
    for (let t = 0; t < 2; t++)
      for (let off = 0; off < size; off += chunk) {
        const op = [0x80];
        for (let k = 0; k < 4; k++) {
          const b = Math.floor(off / 2 ** (8 * k)) & 0xff;
          if (b) {
            op[0] |= 1 << k;
            op.push(b);
          }
        }
        for (let k = 0; k < 3; k++) {
          const b = Math.floor(chunk / 2 ** (8 * k)) & 0xff;
          if (b) {
            op[0] |= 0x10 << k;
            op.push(b);
          }
        }
        ops.push(Buffer.from(op));
      }
    const delta = Buffer.concat(ops);
    parts.push(entry(7, delta.length, zerosOid(size), delta));
  }
  const pack = Buffer.concat(parts);
  return Buffer.concat([pack, crypto.createHash('sha1').update(pack).digest()]);
}

// ---- serve's process tree, sampled from /proc ----

function rssKib(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

function descendants(root) {
  const kids = new Map();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch {
      /* gone meanwhile */
    }
  }
  const out = [];
  const todo = [...(kids.get(root) || [])];
  while (todo.length) {
    const p = todo.pop();
    out.push(p);
    todo.push(...(kids.get(p) || []));
  }
  return out;
}

// Samples serve's own RSS and the sum over its descendants every 20 ms
// while fn runs; returns fn's result and the peaks (KiB).
async function sampled(fn) {
  const serve = ctx.srv.proc.pid;
  const peak = { serve: 0, children: 0, samples: 0, serveBefore: rssKib(serve) };
  const timer = setInterval(() => {
    peak.samples++;
    peak.serve = Math.max(peak.serve, rssKib(serve));
    peak.children = Math.max(peak.children, descendants(serve).reduce((a, p) => a + rssKib(p), 0));
  }, 20);
  try {
    return { result: await fn(), peak };
  } finally {
    clearInterval(timer);
  }
}

// A `git` first on PATH in the sandbox whose `bundle create` runs body
// (sh, "$3" is the bundle) and passes everything else to /usr/bin/git.
async function fakeGit(tools, id, body) {
  const script = `#!/bin/sh\nif [ "$1" = bundle ] && [ "$2" = create ]; then\n${body}\nfi\nexec /usr/bin/git "$@"\n`;
  await tools.ok('write', { sandbox_id: id, path: '/usr/local/bin/git', content: script });
  await sh(tools, id, 'chmod +x /usr/local/bin/git');
}

async function keepsItsWork(tools, id) {
  const refused = await tools.call('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(refused.isError, true, `destroy without force must refuse: ${resultText(refused)}`);
  assert.equal((await dockerInspect(id)).State.Running, true, 'the sandbox keeps running, with its work');
  await tools.ok('sandbox_destroy', { sandbox_id: id, force: true }, CREATE_TIMEOUT);
}

ctx.test('a 10-level delta bomb is refused at a bound, host memory far under the ceiling', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('bomb');
  const { sandbox_id: id } = await cloneSandbox(tools, dir);
  const pack = bombPack();
  console.log(`e2e 33: the bomb is a pack of ${pack.length} bytes that resolves to 1 GiB at its top`);
  assert.ok(pack.length < 8192, `a small pack: ${pack.length}`);
  await tools.ok('write', { sandbox_id: id, path: '/tmp/bomb.b64', content: pack.toString('base64') });
  await fakeGit(tools, id,
    `{ printf '# v2 git bundle\\n%s %s\\n\\n' "$(/usr/bin/git rev-parse HEAD)" "$(/usr/bin/git symbolic-ref HEAD)"; ` +
    'base64 -d /tmp/bomb.b64; } > "$3"; exit 0');
  await sh(tools, id, `cd /workspace && echo more > more.txt && git add more.txt && ${GITID} commit -qm 'before the bomb'`);

  const t0 = Date.now();
  const { result: res, peak } = await sampled(() => tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT));
  const ms = Date.now() - t0;
  const text = resultText(res);
  assert.equal(res.isError, true, `the bomb must be refused: ${text}`);
  assert.match(text, /per-object bound of 256\.0 MiB/, text);
  assert.match(text, /CHAT2SBX_SAVE_MEMORY_BYTES/, text);
  assert.match(text, /keeps its work/, text);
  assert.ok(peak.samples > 0);
  // serve's own report of its host git children for this save.
  const report = /the save of (sbx_\w+) was refused on the host: (\d+) git process\(es\), peak rss (\d+) KiB/g;
  let gitPeak = 0;
  for (const m of fs.readFileSync(ctx.srv.stderrPath, 'utf8').matchAll(report)) if (m[1] === id) gitPeak = Number(m[3]);
  console.log(
    `e2e 33: delta bomb refused in ${ms} ms; peak RSS of serve's children ${peak.children} KiB (sampled ${peak.samples}×), ` +
      `of serve ${peak.serve} KiB (${peak.serveBefore} KiB before), host git ${gitPeak} KiB; ceiling ${CEILING_KIB} KiB`,
  );
  assert.ok(peak.children < CEILING_KIB, `children peaked at ${peak.children} KiB`);
  assert.ok(gitPeak < CEILING_KIB, `host git peaked at ${gitPeak} KiB`);
  assert.ok(peak.serve - peak.serveBefore < 256 * 1024, `serve itself grew by ${peak.serve - peak.serveBefore} KiB`);
  assert.ok(!cliJson(['export', 'list', '--json']).some((x) => x.sandbox_id === id), 'nothing was kept');
  await keepsItsWork(tools, id);
});

ctx.test('four parallel sandbox_export calls of one sandbox run one at a time', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('parallel');
  const { sandbox_id: id } = await cloneSandbox(tools, dir);
  // Each bundle takes 2 s; a second one running meanwhile leaves a mark.
  await fakeGit(tools, id,
    'mkdir /tmp/c2s-inflight 2>/dev/null || echo overlap >> /tmp/c2s-overlaps; echo run >> /tmp/c2s-runs; ' +
    'sleep 2; /usr/bin/git "$@"; rc=$?; rmdir /tmp/c2s-inflight; exit $rc');
  await sh(tools, id, `cd /workspace && echo p > p.txt && git add p.txt && ${GITID} commit -qm parallel`);
  const t0 = Date.now();
  const results = await Promise.all([0, 1, 2, 3].map(() => tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT)));
  const ms = Date.now() - t0;
  for (const r of results) assert.ok(!r.isError, resultText(r));
  const answers = results.map((r) => r.structuredContent);
  assert.equal(answers.filter((a) => a.saved).length, 1, `one saved, three found it saved: ${JSON.stringify(answers)}`);
  assert.equal(new Set(answers.map((a) => a.export_id)).size, 1, 'all four answer the same export');
  const marks = await sh(tools, id, 'cat /tmp/c2s-overlaps 2>/dev/null; wc -l < /tmp/c2s-runs');
  assert.equal(marks.trim(), '1', `no bundle ran beside another, and only one ran: ${marks}`);
  console.log(`e2e 33: four parallel sandbox_export of one sandbox: ${ms} ms, one bundle made`);
  await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
});

ctx.test('5 000 new branches are refused before the host runs git, quickly', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('manyrefs');
  const { sandbox_id: id } = await cloneSandbox(tools, dir);
  await sh(tools, id, 'cd /workspace && for i in $(seq 1 5000); do echo "create refs/heads/b$i HEAD"; done | git update-ref --stdin && git for-each-ref refs/heads | wc -l');
  const t0 = Date.now();
  const res = await tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  const ms = Date.now() - t0;
  const text = resultText(res);
  assert.equal(res.isError, true, text);
  assert.match(text, /50\d\d branches, tags and other refs that are new or moved/, text);
  assert.match(text, /at most 500 \(the ref bound\)/, text);
  assert.match(text, /before the host ran git/, text);
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  assert.ok(!new RegExp(`the save of ${id} was refused on the host: [1-9]`).test(log), 'no host git ran for it');
  console.log(`e2e 33: 5 000 new branches refused in ${ms} ms (the bundle made in the sandbox included)`);
  assert.ok(ms < 40_000, `refused in ${ms} ms`);
  await keepsItsWork(tools, id);
});

ctx.test('hostile branch names are printed quoted; running the printed lines with bash creates nothing', async () => {
  const tools = await ctx.tools();
  const dir = hostRepo('quoted');
  const { sandbox_id: id } = await cloneSandbox(tools, dir);
  const pwned = '/tmp/PWNED';
  fs.rmSync(pwned, { force: true });
  const evil = 'x;touch${IFS}/tmp/PWNED;#';
  const bidi = 'r\u202eab';
  await tools.ok('write', { sandbox_id: id, path: '/tmp/names', content: `${evil}\n${bidi}\n` });
  await sh(tools, id,
    `cd /workspace && while read -r b; do ${GITID} checkout -q main && ${GITID} checkout -qb "$b" && ` +
    `echo "$b" > "f$(printf %s "$b" | sha1sum | cut -c1-8).txt" && git add -A && ${GITID} commit -qm "on $b"; done < /tmp/names`);
  const destroyed = await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  const exp = destroyed.export.export_id;

  const show = cli(['export', 'show', exp]);
  assert.equal(show.status, 0, show.desc);
  assert.ok(show.stdout.includes(`branch 'refs/heads/${evil}' -> 'refs/remotes/chat2sbx/${id}/${evil}'`), show.stdout);
  assert.ok(show.stdout.includes(`branch $'refs/heads/r\\xe2\\x80\\xaeab'`), `the override is shown escaped: ${show.stdout}`);
  assert.ok(!show.stdout.includes('\u202e'), 'no raw right-to-left override reaches the terminal');

  const applied = cli(['export', 'apply', exp]);
  assert.equal(applied.status, 0, applied.desc);
  assert.ok(applied.stdout.includes(`git merge 'chat2sbx/${id}/${evil}'`), applied.stdout);
  assert.ok(!applied.stdout.includes('\u202e'), applied.stdout);
  const lines = [...show.stdout.split('\n'), ...applied.stdout.split('\n')].filter((l) => /^\s+git /.test(l));
  assert.ok(lines.length >= 5, `git lines to paste: ${lines.join(' | ')}`);
  const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', GIT_MERGE_AUTOEDIT: 'no',
    GIT_AUTHOR_NAME: 'p', GIT_AUTHOR_EMAIL: 'p@h', GIT_COMMITTER_NAME: 'p', GIT_COMMITTER_EMAIL: 'p@h' };
  let merged = 0;
  for (const line of lines) {
    const r = spawnSync('bash', ['-c', line], { cwd: dir, env, encoding: 'utf8', timeout: 30_000 });
    assert.equal(r.status, 0, `${line}: ${r.stderr}`);
    merged += /^\s+git merge /.test(line);
  }
  assert.equal(merged, 2, 'both branches merged by the printed lines');
  assert.ok(!fs.existsSync(pwned), `${pwned} was created by a printed line`);
  assert.match(git(dir, 'log', '--format=%s'), /on x;touch/);
});

ctx.test('kill -9 of serve during a save leaves nothing in exports/ after the next start', async () => {
  let tools = await ctx.tools();
  const dir = hostRepo('killed');
  const { sandbox_id: id } = await cloneSandbox(tools, dir);
  // 150 MB that does not compress: the bundle streams out for a while.
  await sh(tools, id, `cd /workspace && head -c 150000000 /dev/urandom > big.bin && git add big.bin && ${GITID} commit -qm big`);
  const exports = path.join(ctx.srv.dataRoot, 'exports');
  const pending = tools.call('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT).catch((e) => e);
  // Killed once the bundle streams in (a few MB of bundle.partial).
  let seen = '';
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const sdir = path.join(exports, id);
    for (const e of fs.existsSync(sdir) ? fs.readdirSync(sdir) : [])
      if (fs.existsSync(path.join(sdir, e, 'bundle.partial'))) seen = path.join(sdir, e, 'bundle.partial');
    if (seen && fs.statSync(seen, { throwIfNoEntry: false })?.size > 4_000_000) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  assert.ok(seen, 'a partial bundle appeared while the save streamed');
  ctx.srv.proc.kill('SIGKILL');
  await ctx.srv.exited;
  await pending;
  assert.ok(fs.existsSync(seen), 'the kill left a partial bundle behind');
  console.log(`e2e 33: serve killed with ${fs.statSync(seen).size} bytes in ${path.relative(ctx.srv.dataRoot, seen)}`);
  await ctx.srv.start({ env: ctx.srv.env });
  ctx.generation++;
  // The sweep runs in serve's first maintenance pass, at start: what is
  // left in exports/ is exactly the exports on record, none partial.
  const onDisk = () => {
    const found = [];
    for (const s of fs.existsSync(exports) ? fs.readdirSync(exports) : [])
      for (const e of fs.readdirSync(path.join(exports, s))) found.push(`${s}/${e}`);
    return found.sort();
  };
  const recorded = cliJson(['export', 'list', '--json']).filter((x) => !x.state.startsWith('trash')).map((x) => `${x.sandbox_id}/${x.export_id}`).sort();
  let left = null;
  for (let i = 0; i < 100; i++) {
    left = onDisk();
    if (JSON.stringify(left) === JSON.stringify(recorded)) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(left, recorded, 'exports/ holds the recorded exports and nothing else');
  assert.ok(!fs.existsSync(path.join(exports, id)), 'nothing of the killed save is left');
  assert.match(fs.readFileSync(ctx.srv.stderrPath, 'utf8'), /the remains of a save that never finished/);
  tools = await ctx.tools();
  const again = await tools.ok('sandbox_export', { sandbox_id: id }, CREATE_TIMEOUT);
  assert.equal(again.saved, true, 'the work was still there to save');
  await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
});

ctx.finish();
