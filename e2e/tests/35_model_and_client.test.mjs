// e2e 35: what a model and a client notice (issue 18), each with the exact
// inputs of the report: the end of a 20 MB output is in the first answer
// (head, a note of what was left out and where, tail) and the left-out bytes
// are readable; the newest lines show while a long command runs; an edit whose
// search text overlaps itself is two matches; a patch appending after a last
// line without a newline ends its lines; a terminal program that closes its
// terminal early exits with its own status (50 runs, no SIGHUP); a 25 MiB
// write through the official SDK client gets the 413 JSON-RPC error, not a
// broken pipe; serve --stdio stops in order on SIGTERM (its warm pool removed)
// and a probing process creates nothing; null stands for every omitted
// optional argument; expected_sha256 as an array of {path, sha256}; and every
// tool's inputSchema passes the openai package's strict converter and the MCP
// Inspector CLI's --strict lint (whose only notes are the type-union warnings
// of the optional arguments' [T, "null"], issue 25).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { BIN, CREATE_TIMEOUT, LABEL_REGISTRY, REPO_ROOT, childEnv, dockerRequest, freePort, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();
let sandboxId = null;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function tools() {
  if (!sandboxId) throw new Error('no sandbox (setup failed)');
  return ctx.tools();
}

ctx.test('setup: a sandbox for these tests', async () => {
  const t = await ctx.tools();
  sandboxId = (await t.create({})).sandbox_id;
  ctx.onCleanup(() => t.destroyQuietly(sandboxId));
});

ctx.test('the end of long output: head, what was left out and where, tail; nothing lost or repeated', async () => {
  const t = await tools();
  const r = await t.ok('bash', {
    sandbox_id: sandboxId,
    command: 'yes | head -c 20000000; echo; echo tail-marker',
    yield_time_ms: 30000,
  });
  assert.equal(r.status, 'exited');
  assert.equal(r.total_output_bytes, 20000013);
  assert.match(r.output, /^y\ny\ny\n/);
  assert.match(r.output, /\ntail-marker\n$/, 'the last line is in the first answer');
  assert.equal(r.has_more_output, false, 'everything is accounted for');
  const m = r.output.match(/\[\.\.\. (\d+) bytes left out here: bytes (\d+) to (\d+) of 20000013 in (\S+); read them with bash: (tail -c \+\d+ \S+ \| head -c \d+)/);
  assert.ok(m, r.output.slice(0, 200));
  const [, n, a, b, log, cmd] = m;
  assert.equal(Number(b) - Number(a), Number(n));
  assert.equal(r.omitted_start, Number(a));
  assert.equal(r.omitted_end, Number(b));
  assert.equal(log, r.log_path);
  assert.ok(r.output.length < 70_000, `bounded: ${r.output.length}`);
  // The command the note gives prints exactly the left-out bytes.
  const left = await t.ok('bash', { sandbox_id: sandboxId, command: `${cmd} | wc -c; ${cmd} | sort -u` });
  const lines = left.output.split('\n');
  assert.equal(Number(lines[0]), Number(n));
  assert.deepEqual(new Set(lines.slice(1).filter((l) => l !== '')), new Set(['y']));
  // A poll after it repeats nothing.
  const p = await t.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 0 });
  assert.equal(p.output, '');
});

ctx.test('while a long command runs: exact cursor delivery with the newest lines beside; tail: true on demand', async () => {
  const t = await tools();
  const r = await t.ok('bash', {
    sandbox_id: sandboxId,
    command: 'yes | head -c 300000; echo; echo newest-line; sleep 60',
    yield_time_ms: 3000,
  });
  assert.equal(r.status, 'running');
  assert.equal(r.has_more_output, true);
  assert.match(r.latest_output, /newest-line\n$/);
  assert.doesNotMatch(r.output, /newest-line/);
  // Cursor delivery stays exact: every byte exactly once, in order.
  let seen = r.output_bytes;
  let text = r.output;
  for (let i = 0; i < 20 && seen < 300000 + 13; i++) {
    const p = await t.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 0 });
    seen += p.output_bytes;
    text += p.output;
  }
  assert.equal(seen, 300013);
  assert.equal(text, `${'y\n'.repeat(150000)}\nnewest-line\n`);
  const s = await t.ok('bash_stop', { sandbox_id: sandboxId, session_id: r.session_id });
  assert.equal(s.status, 'killed');

  const r2 = await t.ok('bash', {
    sandbox_id: sandboxId,
    command: 'seq 1 200000; sleep 60',
    yield_time_ms: 3000,
    tail: true,
  });
  assert.equal(r2.status, 'running');
  assert.match(r2.output, /^1\n2\n3\n/);
  assert.match(r2.output, /bytes left out here/);
  assert.match(r2.output, /\n199999\n200000\n$/);
  await t.ok('bash_stop', { sandbox_id: sandboxId, session_id: r2.session_id });
});

ctx.test('edit: overlapping occurrences are two matches; apply_patch ends appended lines', async () => {
  const t = await tools();
  await t.ok('write', { sandbox_id: sandboxId, path: 'o.txt', content: 'aaa' });
  const e = await t.call('edit', { sandbox_id: sandboxId, path: 'o.txt', old_string: 'aa', new_string: 'b' });
  assert.equal(e.isError, true);
  assert.match(resultText(e), /matches 2 times .*lines 1, 1/);
  assert.equal((await t.ok('read', { sandbox_id: sandboxId, path: 'o.txt', line_numbers: false })).content, 'aaa');

  await t.ok('write', { sandbox_id: sandboxId, path: 'p.txt', content: 'hello\nworld' });
  await t.ok('apply_patch', {
    sandbox_id: sandboxId,
    patch: '*** Begin Patch\n*** Update File: p.txt\n@@\n hello\n world\n+tail\n*** End Patch\n',
  });
  assert.equal((await t.ok('read', { sandbox_id: sandboxId, path: 'p.txt', line_numbers: false })).content, 'hello\nworld\ntail\n');
});

ctx.test('a terminal program that closes its terminal early exits with its own status (50 runs)', async () => {
  const t = await tools();
  for (let i = 0; i < 50; i++) {
    const r = await t.ok('bash', { sandbox_id: sandboxId, command: 'wc -c', tty: true, yield_time_ms: 0 });
    await t.ok('bash_input', { sandbox_id: sandboxId, session_id: r.session_id, data: 'hello', close: true });
    let p = null;
    for (let k = 0; k < 50; k++) {
      p = await t.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 5000 });
      if (p.status !== 'running') break;
    }
    assert.equal(p.status, 'exited', `run ${i}: ${JSON.stringify(p)}`);
    assert.equal(p.exit_code, 0, `run ${i}: ${JSON.stringify(p)}`);
    assert.equal(p.signal, undefined, `run ${i}: ${JSON.stringify(p)}`);
  }
});

ctx.test('a 25 MiB write through the official SDK client gets the 413 JSON-RPC error', async () => {
  const t = await tools();
  const content = 'x'.repeat(25 * 1024 * 1024);
  for (let i = 0; i < 3; i++) {
    await assert.rejects(
      t.call('write', { sandbox_id: sandboxId, path: 'big.txt', content }),
      (e) => {
        assert.equal(e.cause?.code, 413, e.message);
        assert.match(e.message, /"code":-32600,"message":"request body exceeds the 20 MiB limit \(CHAT2SBX_MAX_BODY_BYTES\)/, e.message);
        assert.doesNotMatch(e.message, /EPIPE|fetch failed/, e.message);
        return true;
      },
    );
  }
  // The connection and the server go on.
  await t.ok('bash', { sandbox_id: sandboxId, command: 'true' });
});

ctx.test('null stands for every omitted optional argument', async () => {
  const t = await tools();
  const { tools: list } = await t.client.listTools();
  await t.ok('write', { sandbox_id: sandboxId, path: 'n/a.txt', content: 'one\n', create_dirs: true });
  const valid = {
    sandbox_id: sandboxId,
    path: 'n/a.txt',
    content: 'one\n',
    command: 'true',
    old_string: 'one',
    new_string: 'one',
    patch: '*** Begin Patch\n*** Update File: n/a.txt\n@@\n-one\n+one\n*** End Patch\n',
    pattern: 'one',
    port: 8000,
  };
  // Destroying or creating is checked below with its own care; the rest is
  // called with every optional argument null.
  const skip = new Set(['sandbox_create', 'sandbox_destroy', 'workspace_release', 'bash_poll', 'bash_stop', 'bash_input', 'sandbox_unexpose']);
  let called = 0;
  for (const tool of list) {
    if (skip.has(tool.name)) continue;
    const required = tool.inputSchema.required ?? [];
    const args = {};
    for (const k of Object.keys(tool.inputSchema.properties ?? {})) {
      if (required.includes(k)) {
        assert.ok(k in valid, `no test value for ${tool.name}.${k}`);
        args[k] = valid[k];
      } else {
        args[k] = null;
      }
    }
    const r = await t.call(tool.name, args, CREATE_TIMEOUT);
    if (r.isError) assert.doesNotMatch(resultText(r), /null|must be|not an? /, `${tool.name}: ${resultText(r)}`);
    called++;
  }
  assert.ok(called >= 8, `called ${called} tools`);
  const b = await t.ok('bash', { sandbox_id: sandboxId, command: 'echo hi', cwd: null, timeout_ms: null, tty: null, tail: null, yield_time_ms: null });
  assert.equal(b.output, 'hi\n');
  await t.ok('bash_poll', { sandbox_id: sandboxId, session_id: b.session_id, yield_time_ms: null, tail: null });
  await t.ok('bash_stop', { sandbox_id: sandboxId, session_id: b.session_id });
  // sandbox_create with workspace_id null is a plain create of a new
  // managed workspace; destroy it right away.
  const c = await t.create({ workspace_id: null, memory: null, cpus: null, pids_limit: null, network: null, workspace_path: null, workspace_mode: null, disk: null });
  await t.ok('sandbox_destroy', { sandbox_id: c.sandbox_id }, CREATE_TIMEOUT);
});

ctx.test('apply_patch expected_sha256: an array of {path, sha256}; the map form still works', async () => {
  const t = await tools();
  await t.ok('write', { sandbox_id: sandboxId, path: 'h.txt', content: 'v1\n' });
  const { sha256 } = await t.ok('read', { sandbox_id: sandboxId, path: 'h.txt' });
  const patch = (from, to) => `*** Begin Patch\n*** Update File: h.txt\n@@\n-${from}\n+${to}\n*** End Patch\n`;
  await t.ok('apply_patch', { sandbox_id: sandboxId, patch: patch('v1', 'v2'), expected_sha256: [{ path: 'h.txt', sha256 }] });
  const stale = await t.call('apply_patch', { sandbox_id: sandboxId, patch: patch('v2', 'v3'), expected_sha256: [{ path: 'h.txt', sha256 }] });
  assert.equal(stale.isError, true);
  assert.match(resultText(stale), /changed|sha256/);
  assert.equal((await t.ok('read', { sandbox_id: sandboxId, path: 'h.txt', line_numbers: false })).content, 'v2\n');
  const now = (await t.ok('read', { sandbox_id: sandboxId, path: 'h.txt' })).sha256;
  await t.ok('apply_patch', { sandbox_id: sandboxId, patch: patch('v2', 'v3'), expected_sha256: { 'h.txt': now } });
  const dup = await t.call('apply_patch', { sandbox_id: sandboxId, patch: patch('v3', 'v4'), expected_sha256: [{ path: 'h.txt', sha256: now }, { path: 'h.txt', sha256: now }] });
  assert.match(resultText(dup), /names 'h.txt' twice/);
  const bad = await t.call('apply_patch', { sandbox_id: sandboxId, patch: patch('v3', 'v4'), expected_sha256: [{ path: 'h.txt' }] });
  assert.match(resultText(bad), /expected_sha256\[0\] is not an object with exactly the strings 'path' and 'sha256'/);
});

ctx.test('every inputSchema passes the openai strict converter and the MCP Inspector --strict lint', async () => {
  const t = await tools();
  const { tools: list } = await t.client.listTools();
  const { toStrictJsonSchema } = await import(path.join(REPO_ROOT, 'e2e/schema-check/node_modules/openai/lib/transform.mjs'));
  const optional = new Set();
  for (const tool of list) {
    const strict = toStrictJsonSchema(structuredClone(tool.inputSchema));
    const required = new Set(tool.inputSchema.required || []);
    for (const [arg, p] of Object.entries(tool.inputSchema.properties)) {
      if (required.has(arg)) continue;
      optional.add(`${tool.name}.${arg}`);
      // Typed with its bounds after the strict conversion too (issue 25).
      assert.deepEqual(strict.properties[arg].type, p.type, `${tool.name}.${arg}`);
      assert.equal(strict.properties[arg].maximum, p.maximum, `${tool.name}.${arg}`);
    }
  }
  const sc = list.find((x) => x.name === 'sandbox_create').inputSchema.properties.cpus;
  assert.deepEqual(sc.type, ['number', 'null']);

  // The Inspector CLI against serve --stdio (nothing is created).
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-lint-'));
  try {
    const env = childEnv({}, home, path.join(home, 'data'), await freePort());
    const cli = path.join(REPO_ROOT, 'e2e/schema-check/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js');
    const envArgs = Object.entries(env).filter(([k]) => k.startsWith('CHAT2SBX_') || k === 'HOME').flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    const r = spawnSync(process.execPath, [cli, ...envArgs, '--method', 'tools/list', '--strict', BIN, 'serve', '--stdio'], {
      env: { ...process.env, HOME: home },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr.slice(-2000));
    assert.equal(JSON.parse(r.stdout).tools.length, list.length);
    // Its findings, one block each (Warning/Error, Path, Issue, Suggestion):
    // only type-union warnings, exactly one per optional argument.
    const lines = r.stderr.split('\n').filter((l) => !/^\d{4}-\d\d-\d\dT.* (info|debug|warn) /.test(l) && l.trim() !== '');
    const findings = [];
    for (let i = 0; i < lines.length; i++) {
      const m = lines[i].match(/^(Warning|Error): tool "([^"]+)"$/);
      if (!m) continue;
      findings.push({ severity: m[1], tool: m[2], path: lines[i + 1].trim(), issue: lines[i + 2].trim() });
    }
    assert.deepEqual(findings.filter((f) => f.severity !== 'Warning' || !f.issue.startsWith('Issue: `type` is an array')), [], r.stderr.slice(-3000));
    const warned = findings.map((f) => `${f.tool}.${f.path.replace(/^Path: inputSchema\.properties\./, '')}`);
    assert.deepEqual(warned.sort(), [...optional].sort());
    assert.match(lines[lines.length - 1], new RegExp(`^0 errors, ${optional.size} warnings across \\d+ tools\\.$`));
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

// Containers labelled with a registry under root.
async function containersUnder(root) {
  const all = await dockerRequest('GET', '/containers/json?all=1');
  return all.body.filter((c) => (c.Labels[LABEL_REGISTRY] || '').startsWith(root)).map((c) => c.Names[0].slice(1));
}

ctx.test('serve --stdio: a probe creates nothing; SIGTERM stops in order and removes its warm pool', async () => {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-stdio-sig-'));
  const dataRoot = path.join(home, 'data');
  const env = childEnv({ CHAT2SBX_WARM_POOL: '1' }, home, dataRoot, await freePort());
  const connect = async () => {
    const transport = new StdioClientTransport({ command: BIN, args: ['serve', '--stdio'], env, cwd: home, stderr: 'pipe' });
    const client = new Client({ name: 'e2e-35', version: '0.1.0' }, { capabilities: {} });
    await client.connect(transport, { timeout: 30_000 });
    return { transport, client };
  };
  try {
    // A probing process (as the Agents SDK starts one per connect).
    const probe = await connect();
    await probe.client.listTools();
    await probe.client.close();
    await sleep(1500);
    assert.deepEqual(await containersUnder(dataRoot), [], 'a probe creates nothing');

    const { transport, client } = await connect();
    const res = await client.callTool({ name: 'sandbox_create', arguments: {} }, undefined, CREATE_TIMEOUT);
    assert.notEqual(res.isError, true, resultText(res));
    const sid = res.structuredContent.sandbox_id;
    // The first create starts the warm pool: a second container appears.
    const until = Date.now() + 60_000;
    while ((await containersUnder(dataRoot)).length < 2 && Date.now() < until) await sleep(500);
    assert.equal((await containersUnder(dataRoot)).length, 2, 'the sandbox and a warm-pool member');
    const pid = transport.pid;
    const exited = new Promise((resolve) => {
      const timer = setInterval(() => {
        try {
          process.kill(pid, 0);
        } catch {
          clearInterval(timer);
          resolve();
        }
      }, 100);
    });
    process.kill(pid, 'SIGTERM');
    await Promise.race([exited, sleep(30_000).then(() => assert.fail('serve --stdio did not stop within 30 s of SIGTERM'))]);
    const left = await containersUnder(dataRoot);
    assert.ok(left.every((c) => c === sid), `the warm-pool member is removed at the orderly stop: left ${left}`);
    await client.close().catch(() => {});
    await dockerRequest('DELETE', `/containers/${sid}?force=1&v=1`);
  } finally {
    for (const c of await containersUnder(dataRoot)) await dockerRequest('DELETE', `/containers/${c}?force=1&v=1`);
    fs.rmSync(home, { recursive: true, force: true });
  }
});
