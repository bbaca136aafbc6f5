// 36: what one sandbox does cannot slow the others' clients or the helper
// (issue 23, points 7 and 8). sandbox_list asks every running clone about
// unsaved work; a clone whose git hangs (a fsmonitor that sleeps, a git the
// model replaced) must not hold the answer: the probes run in parallel under
// one short wait, a slow one answers "unknown", and a failed one is not asked
// again at once. apply_patch bounds its files and bytes instead of tying
// the helper up for longer than the call waits.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { cloneSandbox as clone, git, runCli, sh } from '../lib/clones.mjs';
import { CREATE_TIMEOUT, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

function hostRepo(name) {
  const dir = path.join(ctx.srv.root, 'home', 'repositories', name);
  fs.mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'first');
  const r = runCli(ctx.srv, ['workspace', 'add', dir, '--mode', 'clone']);
  assert.equal(r.status, 0, r.desc);
  return dir;
}

const cloneSandbox = async (tools, dir) => (await clone(tools, dir)).sandbox_id;

const restart = (env) => ctx.restartWith(env);

async function timedList(tools) {
  const t0 = Date.now();
  const list = await tools.ok('sandbox_list', {});
  return { ms: Date.now() - t0, list };
}

const unsavedOf = (list, id) => list.sandboxes.find((s) => s.sandbox_id === id)?.unsaved_work;

ctx.test('hanging clones do not slow sandbox_list: a sleeping fsmonitor is ignored, a hung git answers "unknown"', async () => {
  const tools = await ctx.tools();
  const a = await cloneSandbox(tools, hostRepo('slow-a'));
  const b = await cloneSandbox(tools, hostRepo('slow-b'));
  assert.notEqual(a, b);
  // The clone's own config names a fsmonitor that sleeps a minute: the
  // probe turns fsmonitor off and answers as usual.
  for (const id of [a, b]) await sh(tools, id, `cd /workspace && git config core.fsmonitor 'sleep 60; false' && echo more >> a.txt`);
  let { ms, list } = await timedList(tools);
  assert.ok(ms < 1000, `sandbox_list took ${ms} ms with two clones whose fsmonitor sleeps`);
  assert.equal(unsavedOf(list, a), true, JSON.stringify(list));
  assert.equal(unsavedOf(list, b), true, JSON.stringify(list));

  // Now the model replaces git itself with one that hangs; the answers are
  // older than a minute (the clock is moved on), so both clones are asked again.
  for (const id of [a, b]) {
    await tools.ok('write', { sandbox_id: id, path: '/usr/local/bin/git', content: '#!/bin/sh\nsleep 120\n' });
    await sh(tools, id, 'chmod +x /usr/local/bin/git && hash -r');
  }
  await restart({ CHAT2SBX_CLOCK_OFFSET_MS: String(2 * 60_000) });
  const tools2 = await ctx.tools();
  ({ ms, list } = await timedList(tools2));
  assert.ok(ms < 1000, `sandbox_list took ${ms} ms with two hung clones`);
  assert.equal(unsavedOf(list, a), 'unknown', JSON.stringify(list));
  assert.equal(unsavedOf(list, b), 'unknown', JSON.stringify(list));
  const get = await tools2.ok('sandbox_get', { sandbox_id: a });
  assert.equal(get.unsaved_work, 'unknown', JSON.stringify(get));
  // Asked again at once: still quick, still unknown (in flight or backing off).
  for (let i = 0; i < 3; i++) {
    ({ ms, list } = await timedList(tools2));
    assert.ok(ms < 1000, `sandbox_list took ${ms} ms`);
    assert.equal(unsavedOf(list, a), 'unknown');
  }
  // Other calls on the sandbox still work while its probe hangs.
  const r = await tools2.ok('bash', { sandbox_id: a, command: 'echo alive' });
  assert.match(r.output, /alive/);
  for (const id of [a, b]) {
    await sh(tools2, id, 'rm /usr/local/bin/git');
    await tools2.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
  }
  await restart({});
});

ctx.test('apply_patch refuses a patch of more than 1000 files before writing any, and applies 1000', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  const id = sbx.sandbox_id;
  const files = (n, tag) =>
    ['*** Begin Patch', ...Array.from({ length: n }, (_, i) => `*** Add File: ${tag}/f${i}.txt\n+x`), '*** End Patch'].join('\n');
  const t0 = Date.now();
  const big = await tools.call('apply_patch', { sandbox_id: id, patch: files(60000, 'many') });
  assert.equal(big.isError, true, resultText(big));
  assert.match(resultText(big), /touches 60000 files; at most 1000 per apply_patch call.*nothing was changed/, resultText(big));
  console.log(`e2e 36: a 60 000-file patch refused in ${Date.now() - t0} ms`);
  const listed = await tools.call('list', { sandbox_id: id, path: '/workspace' });
  assert.ok(!resultText(listed).includes('many'), 'nothing was written');
  const ok = await tools.ok('apply_patch', { sandbox_id: id, patch: files(1000, 'some') });
  assert.match(ok.summary, /applied the patch to 1000 files/);
  const n = await sh(tools, id, 'ls /workspace/some | wc -l');
  assert.equal(n.trim(), '1000');
  await tools.ok('sandbox_destroy', { sandbox_id: id }, CREATE_TIMEOUT);
});
