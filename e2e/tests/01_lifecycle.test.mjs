// 01: a sandbox's whole life through the official SDK client, checked against
// the engine and the host file system, not only against what the server says.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import {
  SANDBOX_ID_RE,
  SESSION_ID_RE,
  WORKSPACE_ID_RE,
  dockerInspect,
  resultText,
  useServer,
} from '../lib/server.mjs';

const ctx = useServer();

ctx.test('sandbox lifecycle: create, bash, read/write, list from a second session, destroy', async (t) => {
  const srv = ctx.srv;
  const tools = srv.tools(await srv.client());
  let sandboxId = null;
  let destroyed = false;
  t.after(async () => {
    if (sandboxId && !destroyed) await tools.destroyQuietly(sandboxId);
  });

  // ---- create ----
  const res = await tools.call('sandbox_create', {}, { timeout: 90_000 });
  assert.ok(!res.isError, `sandbox_create returned isError: ${resultText(res)}`);
  const sbx = res.structuredContent;
  assert.ok(sbx && typeof sbx === 'object', `sandbox_create has no structuredContent; text: ${resultText(res)}`);
  sandboxId = sbx.sandbox_id;
  assert.match(String(sbx.sandbox_id), SANDBOX_ID_RE, 'sandbox_id is sbx_ + 20 base32 chars');
  assert.match(String(sbx.workspace_id), WORKSPACE_ID_RE, 'workspace_id is ws_ + 20 base32 chars');
  assert.equal(typeof sbx.workspace_path, 'string', 'workspace_path is a string');
  assert.ok(path.isAbsolute(sbx.workspace_path), `workspace_path is absolute: ${sbx.workspace_path}`);
  assert.ok(
    sbx.workspace_path.startsWith(srv.dataRoot + path.sep),
    `managed workspace ${sbx.workspace_path} lies under CHAT2SBX_DATA_ROOT ${srv.dataRoot}`,
  );
  assert.equal(sbx.status, 'running');
  assert.equal(sbx.workspace_mode, 'managed');
  assert.equal(sbx.reused, false);
  // Same answer as JSON text in content[0] (docs/tools.md).
  assert.equal(res.content?.[0]?.type, 'text', 'content[0] is text');
  assert.deepEqual(JSON.parse(res.content[0].text), sbx, 'content[0].text is the structuredContent as JSON');

  // ---- the engine agrees ----
  const info = await dockerInspect(sbx.container_id || sbx.sandbox_id);
  assert.ok(info, `engine knows no container ${sbx.container_id || sbx.sandbox_id}`);
  assert.equal(info.State?.Running, true, `container is running (State: ${JSON.stringify(info.State)})`);
  assert.ok(info.Name.includes(sbx.sandbox_id), `container name ${info.Name} carries the sandbox id`);
  const labelValues = Object.values(info.Config?.Labels || {});
  assert.ok(labelValues.includes(sbx.sandbox_id), `a label carries the sandbox id: ${JSON.stringify(info.Config?.Labels)}`);
  assert.ok(labelValues.includes(sbx.workspace_id), `a label carries the workspace id: ${JSON.stringify(info.Config?.Labels)}`);
  if (sbx.container_id) assert.ok(info.Id.startsWith(sbx.container_id), `container_id ${sbx.container_id} matches ${info.Id}`);
  assert.notEqual(info.HostConfig?.Privileged, true, 'container is not privileged');
  const wsMount = (info.Mounts || []).find((m) => m.Destination === '/workspace');
  assert.ok(wsMount, `/workspace is mounted: ${JSON.stringify(info.Mounts)}`);
  assert.equal(wsMount.Source, sbx.workspace_path, 'the managed workspace is what is mounted at /workspace');
  assert.ok(
    !(info.Mounts || []).some((m) => /docker\.sock/.test(m.Source || '')),
    'the Docker socket is not mounted',
  );

  // ---- bash ----
  const uname = await tools.ok('bash', { sandbox_id: sandboxId, command: 'uname -a' });
  assert.match(String(uname.session_id), SESSION_ID_RE, 'bash returns a bash_ session id');
  assert.equal(uname.status, 'exited', `uname status: ${JSON.stringify(uname)}`);
  assert.equal(uname.exit_code, 0);
  assert.match(uname.output, /Linux/);

  const echo = await tools.ok('bash', { sandbox_id: sandboxId, command: 'echo hello > /workspace/hello.txt' });
  assert.equal(echo.status, 'exited', JSON.stringify(echo));
  assert.equal(echo.exit_code, 0, JSON.stringify(echo));

  // ---- read what bash wrote; the host sees it too ----
  const r1 = await tools.ok('read', { sandbox_id: sandboxId, path: 'hello.txt', line_numbers: false });
  assert.equal(r1.content, 'hello\n', `read hello.txt: ${JSON.stringify(r1)}`);
  const onHost = path.join(sbx.workspace_path, 'hello.txt');
  assert.equal(fs.readFileSync(onHost, 'utf8'), 'hello\n', `host file ${onHost}`);

  // ---- write, read back, cat ----
  const text = 'alpha\nβeta ✓\nlast line\n';
  const w = await tools.ok('write', { sandbox_id: sandboxId, path: 'notes.txt', content: text });
  assert.equal(w.bytes_written, Buffer.byteLength(text), `write: ${JSON.stringify(w)}`);
  assert.equal(w.created, true, `write created a new file: ${JSON.stringify(w)}`);
  const r2 = await tools.ok('read', { sandbox_id: sandboxId, path: 'notes.txt', line_numbers: false });
  assert.equal(r2.content, text, 'read returns what write wrote');
  const cat = await tools.ok('bash', { sandbox_id: sandboxId, command: 'cat notes.txt' });
  assert.equal(cat.exit_code, 0, JSON.stringify(cat));
  assert.equal(cat.output, text, 'bash cat (cwd /workspace) returns what write wrote');
  assert.equal(fs.readFileSync(path.join(sbx.workspace_path, 'notes.txt'), 'utf8'), text, 'host copy');

  // overwrite is not "created"; absolute path with create_dirs
  const w2 = await tools.ok('write', { sandbox_id: sandboxId, path: '/workspace/notes.txt', content: 'v2\n' });
  assert.equal(w2.created, false, `overwrite: ${JSON.stringify(w2)}`);
  const w3 = await tools.ok('write', {
    sandbox_id: sandboxId,
    path: 'deep/er/file.txt',
    content: 'nested\n',
    create_dirs: true,
  });
  assert.equal(w3.created, true, JSON.stringify(w3));
  const r3 = await tools.ok('read', { sandbox_id: sandboxId, path: '/workspace/deep/er/file.txt', line_numbers: false });
  assert.equal(r3.content, 'nested\n');

  // ---- read's sha256 guards a write: a stale hash changes nothing ----
  const before = await tools.ok('read', { sandbox_id: sandboxId, path: 'notes.txt', line_numbers: false });
  assert.match(before.sha256 ?? '', /^[0-9a-f]{64}$/, `read returns a sha256: ${JSON.stringify(before)}`);
  await tools.ok('bash', { sandbox_id: sandboxId, command: 'echo changed-by-someone > notes.txt' });
  const stale = await tools.call('write', {
    sandbox_id: sandboxId, path: 'notes.txt', content: 'mine\n', expected_sha256: before.sha256,
  });
  assert.equal(stale.isError, true, `stale write refused: ${JSON.stringify(stale)}`);
  assert.match(stale.content[0].text, /changed since it was read/);
  const reread = await tools.ok('read', { sandbox_id: sandboxId, path: 'notes.txt', line_numbers: false });
  assert.equal(reread.content, 'changed-by-someone\n', 'the refused write changed nothing');
  const fresh = await tools.ok('write', {
    sandbox_id: sandboxId, path: 'notes.txt', content: 'mine\n', expected_sha256: reread.sha256,
  });
  assert.equal(fresh.bytes_written, 5);

  // ---- a second client session sees it ----
  const tools2 = srv.tools(await srv.client({ name: 'chat2sbx-e2e-second' }));
  const list = await tools2.ok('sandbox_list', {});
  assert.ok(Array.isArray(list.sandboxes), `sandbox_list: ${JSON.stringify(list)}`);
  const mine = list.sandboxes.find((s) => s.sandbox_id === sandboxId);
  assert.ok(mine, `sandbox_list from a new session lists ${sandboxId}: ${JSON.stringify(list)}`);
  assert.equal(mine.status, 'running');
  assert.ok(list.active_count >= 1, `active_count ${list.active_count}`);
  const got = await tools2.ok('sandbox_get', { sandbox_id: sandboxId });
  assert.equal(got.sandbox_id, sandboxId);
  assert.equal(got.workspace_id, sbx.workspace_id);
  assert.equal(got.workspace_path, sbx.workspace_path);
  assert.equal(got.status, 'running');
  assert.ok(Array.isArray(got.bash_sessions), `sandbox_get has bash_sessions: ${JSON.stringify(got)}`);
  const wl = await tools2.ok('workspace_list', {});
  const ws = (wl.workspaces || []).find((x) => x.workspace_id === sbx.workspace_id);
  assert.ok(ws, `workspace_list lists ${sbx.workspace_id}: ${JSON.stringify(wl)}`);
  assert.equal(ws.mode, 'managed');

  // ---- destroy ----
  const d = await tools2.ok('sandbox_destroy', { sandbox_id: sandboxId }, { timeout: 90_000 });
  destroyed = true;
  assert.equal(d.sandbox_id, sandboxId);
  assert.equal(d.status, 'removed', JSON.stringify(d));
  assert.equal(d.workspace_kept, true, JSON.stringify(d));
  assert.equal(await dockerInspect(info.Id), null, 'the container is gone from the engine after sandbox_destroy');
  assert.ok(fs.statSync(sbx.workspace_path).isDirectory(), 'the managed workspace directory is kept');
  assert.equal(fs.readFileSync(onHost, 'utf8'), 'hello\n', 'workspace content is kept');

  const list2 = await tools2.ok('sandbox_list', {});
  assert.ok(!list2.sandboxes.some((s) => s.sandbox_id === sandboxId), 'a removed sandbox is not listed');

  // ---- a call on the destroyed sandbox is a tool error naming it ----
  const after = await tools.call('bash', { sandbox_id: sandboxId, command: 'true' });
  assert.equal(after.isError, true, `bash on a destroyed sandbox: ${JSON.stringify(after)}`);
  assert.ok(resultText(after).includes(sandboxId), `error names the sandbox: ${resultText(after)}`);
});

ctx.test('results validate against each tool\'s outputSchema (SDK client after tools/list)', async (t) => {
  // The SDK validates structuredContent against outputSchema once it has the
  // tool list, including on isError results. Collect every mismatch.
  const srv = ctx.srv;
  const tools = srv.tools(await srv.client({ listTools: true, name: 'chat2sbx-e2e-validating' }));
  const problems = [];
  const attempt = async (label, fn) => {
    try {
      return await fn();
    } catch (e) {
      problems.push(`${label}: ${e.message}`);
      return null;
    }
  };
  let sandboxId = null;
  t.after(async () => {
    if (sandboxId) await tools.destroyQuietly(sandboxId);
  });
  const sbx = await attempt('sandbox_create', () => tools.create({}));
  sandboxId = sbx?.sandbox_id ?? [...srv.sandboxIds].pop() ?? null;
  if (sandboxId) {
    const b = await attempt('bash', () => tools.ok('bash', { sandbox_id: sandboxId, command: 'sleep 2; echo x', yield_time_ms: 200 }));
    if (b?.session_id) {
      await attempt('bash_poll', () => tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: b.session_id, yield_time_ms: 5000 }));
    }
    await attempt('write', () => tools.ok('write', { sandbox_id: sandboxId, path: 'v.txt', content: 'v\n' }));
    await attempt('read', () => tools.ok('read', { sandbox_id: sandboxId, path: 'v.txt', line_numbers: false }));
    await attempt('sandbox_list', () => tools.ok('sandbox_list', {}));
    await attempt('sandbox_get', () => tools.ok('sandbox_get', { sandbox_id: sandboxId }));
    await attempt('workspace_list', () => tools.ok('workspace_list', {}));
    await attempt('read (isError: missing file)', async () => {
      const r = await tools.call('read', { sandbox_id: sandboxId, path: 'no/such/file' });
      assert.equal(r.isError, true, 'reading a missing file is isError');
    });
    const d = await attempt('sandbox_destroy', () => tools.ok('sandbox_destroy', { sandbox_id: sandboxId }, { timeout: 90_000 }));
    if (d) sandboxId = null;
  }
  await attempt('bash (isError: unknown sandbox)', async () => {
    const r = await tools.call('bash', { sandbox_id: 'sbx_aaaaaaaaaaaaaaaaaaaa', command: 'true' });
    assert.equal(r.isError, true);
  });
  assert.deepEqual(problems, [], `SDK output-schema validation failures:\n  ${problems.join('\n  ')}`);
});

ctx.finish();
