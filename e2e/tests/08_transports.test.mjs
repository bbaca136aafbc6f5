// 08: the transports. The same short session (create, bash, destroy) over
// Streamable HTTP with the SDK client and over stdio with the SDK's
// StdioClientTransport (stdout carries only JSON-RPC, the process ends when the
// client closes); a ChatGPT-like client that re-initializes per batch and then
// calls tools without Mcp-Session-Id (stateless), with raw fetch POSTs only;
// and a flood of initializes without DELETE, which the session table caps by
// evicting the least recently used sessions.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import {
  BIN,
  CALL_TIMEOUT,
  CREATE_TIMEOUT,
  LABEL_REGISTRY,
  REPO_ROOT,
  SANDBOX_ID_RE,
  Tools,
  authHeaders,
  childEnv,
  dockerInspect,
  dockerRequest,
  freePort,
  measure,
  useServer,
} from '../lib/server.mjs';

const ctx = useServer();

// ---- helpers of this file ----

// Removes every container whose registry label is dbPath, or that names or is
// labelled with one of ids. Returns the names removed.
async function removeContainers({ dbPath, ids = new Set() }) {
  const removed = [];
  const list = await dockerRequest('GET', '/containers/json?all=1');
  for (const c of Array.isArray(list.body) ? list.body : []) {
    const names = (c.Names || []).map((n) => n.replace(/^\//, ''));
    const labels = c.Labels || {};
    const ours =
      (dbPath && labels[LABEL_REGISTRY] === dbPath) ||
      names.some((n) => ids.has(n)) ||
      Object.values(labels).some((v) => ids.has(v));
    if (!ours) continue;
    await dockerRequest('DELETE', `/containers/${c.Id}?force=1&v=1`);
    removed.push(names[0] || c.Id);
  }
  return removed;
}

// Parses a POST answer the way a client accepting both media types must: a
// JSON body, or an SSE body whose data: lines carry JSON-RPC messages.
function parseBody(contentType, text) {
  if (!text) return [];
  if (contentType.includes('text/event-stream')) {
    const msgs = [];
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (data) msgs.push(JSON.parse(data));
    }
    return msgs;
  }
  const v = JSON.parse(text);
  return Array.isArray(v) ? v : [v];
}

// One raw POST as ChatGPT (through the tunnel) sends it: no session header
// unless given, never GET or DELETE. Returns {status, headers, text, msgs, msg}
// where msg is the response whose id is the request's (or the only message).
async function post(url, message, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'User-Agent': 'openai-mcp/1.0.0',
      ...authHeaders(url),
      ...headers,
    },
    body: JSON.stringify(message),
    signal: AbortSignal.timeout(CREATE_TIMEOUT.timeout),
  });
  const text = await res.text();
  const ct = res.headers.get('content-type') || '';
  let msgs;
  try {
    msgs = parseBody(ct, text);
  } catch (e) {
    throw new Error(`${message.method}: HTTP ${res.status} ${ct}: body is neither JSON nor SSE JSON: ${text.slice(0, 300)}`);
  }
  const msg = msgs.find((m) => 'id' in m && ('result' in m || 'error' in m)) || msgs[msgs.length - 1] || null;
  return { status: res.status, headers: res.headers, text, ct, msgs, msg };
}

const describe = (r) => `HTTP ${r.status} ${r.ct} ${r.text.slice(0, 400)}`;

// A JSON-RPC error answer that must carry the request's id.
function assertErrorWithId(r, id, what) {
  assert.ok(r.msg, `${what}: no JSON-RPC message in the answer: ${describe(r)}`);
  assert.equal(r.msg.jsonrpc, '2.0', `${what}: ${describe(r)}`);
  assert.ok(r.msg.error, `${what}: expected a JSON-RPC error: ${describe(r)}`);
  assert.equal(typeof r.msg.error.code, 'number', `${what}: ${describe(r)}`);
  assert.equal(typeof r.msg.error.message, 'string', `${what}: ${describe(r)}`);
  assert.ok(r.msg.error.message.length > 0, `${what}: an empty error message`);
  assert.deepEqual(r.msg.id, id, `${what}: the error reply must carry the request id: ${describe(r)}`);
}

// A successful JSON-RPC answer to request id.
function assertResult(r, id, what) {
  assert.equal(r.status, 200, `${what}: ${describe(r)}`);
  assert.ok(r.msg, `${what}: no JSON-RPC message: ${describe(r)}`);
  assert.equal(r.msg.jsonrpc, '2.0', `${what}: ${describe(r)}`);
  assert.deepEqual(r.msg.id, id, `${what}: the reply must carry the request id: ${describe(r)}`);
  assert.ok(!r.msg.error, `${what}: unexpected error: ${describe(r)}`);
  assert.ok(r.msg.result && typeof r.msg.result === 'object', `${what}: no result: ${describe(r)}`);
  return r.msg.result;
}

// A tools/call result that is not an error: its structuredContent (or text as JSON).
function toolOk(result, what) {
  const text = result.content?.find?.((c) => c.type === 'text')?.text ?? '';
  assert.notEqual(result.isError, true, `${what} returned isError: ${text}`);
  if (result.structuredContent && typeof result.structuredContent === 'object') return result.structuredContent;
  return JSON.parse(text);
}

// ---- 1: Streamable HTTP with the SDK client ----

ctx.test('Streamable HTTP (SDK client): initialize, tools/list, create, bash echo hi, destroy', async () => {
  const client = await ctx.srv.client({ listTools: false, name: 'e2e-08-http' });
  const tools = ctx.srv.tools(client);
  const list = await client.listTools(); // makes the SDK validate results against outputSchema
  const names = list.tools.map((t) => t.name);
  for (const n of ['sandbox_create', 'bash', 'sandbox_destroy']) assert.ok(names.includes(n), `tools/list lacks ${n}: ${names}`);
  const sbx = await tools.create({});
  let destroyed = false;
  try {
    assert.match(sbx.sandbox_id, SANDBOX_ID_RE);
    assert.equal(sbx.status, 'running');
    const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo hi' });
    assert.equal(r.status, 'exited', JSON.stringify(r));
    assert.equal(r.exit_code, 0, JSON.stringify(r));
    assert.equal(r.output, 'hi\n', JSON.stringify(r));
    const d = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
    destroyed = true;
    assert.equal(d.status, 'removed', JSON.stringify(d));
  } finally {
    if (!destroyed) await tools.destroyQuietly(sbx.sandbox_id);
  }
  assert.equal(await dockerInspect(sbx.sandbox_id), null, 'the container is gone from the engine');
});

// ---- 2: stdio with the SDK's StdioClientTransport ----

ctx.test('stdio (SDK StdioClientTransport): same session, stdout only JSON-RPC, exits when the client closes', async (t) => {
  // Its own data root: one serve per data root, and the HTTP server of this
  // file holds ctx.srv.dataRoot.
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'chat2sbx-e2e-stdio-'));
  const home = path.join(root, 'home');
  const dataRoot = path.join(root, 'data');
  const dbPath = path.join(dataRoot, 'state', 'chat2sbx.sqlite');
  await fsp.mkdir(home, { recursive: true });
  const stderrPath = path.join(root, 'serve-stdio.stderr.log');
  const stderrFile = fs.createWriteStream(stderrPath);
  const env = childEnv({ CHAT2SBX_ENABLE_TUNNEL: '0' }, home, dataRoot, await freePort());

  const transport = new StdioClientTransport({ command: BIN, args: ['serve', '--stdio'], env, cwd: root, stderr: 'pipe' });
  transport.stderr?.pipe(stderrFile);

  // Tap the child's stdout from its very first byte (the SDK spawns it inside
  // start(), synchronously): every line must be one JSON-RPC message.
  let child = null;
  let exit = null;
  let exited = null;
  let stdoutRaw = '';
  const origStart = transport.start.bind(transport);
  transport.start = () => {
    const p = origStart();
    child = transport._process;
    if (child) {
      child.stdout.on('data', (b) => {
        stdoutRaw += b.toString('utf8');
      });
      exited = new Promise((resolve) => {
        child.once('exit', (code, signal) => {
          exit = { code, signal, at: performance.now() };
          resolve(exit);
        });
      });
    }
    return p;
  };

  const transportErrors = [];
  const client = new Client({ name: 'e2e-08-stdio', version: '0.1.0' }, { capabilities: {} });
  client.onerror = (e) => transportErrors.push(e.message);
  const ids = new Set();
  let ok = false;
  let closed = false;
  try {
    await client.connect(transport, { timeout: 20_000 });
    assert.ok(child, 'the SDK spawned the server');
    assert.ok(client.getServerVersion()?.name, 'initialize answered with serverInfo');
    const list = await client.listTools();
    const names = list.tools.map((x) => x.name);
    assert.ok(names.includes('bash'), `tools/list lacks bash: ${names}`);
    const tools = new Tools(client, null);
    const sbx = await tools.create({});
    ids.add(sbx.sandbox_id);
    assert.match(sbx.sandbox_id, SANDBOX_ID_RE);
    const info = await dockerInspect(sbx.sandbox_id);
    assert.equal(info?.Config?.Labels?.[LABEL_REGISTRY], dbPath, 'the container is labelled with the stdio registry');
    const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'echo hi' });
    assert.equal(r.exit_code, 0, JSON.stringify(r));
    assert.equal(r.output, 'hi\n', JSON.stringify(r));
    const d = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
    assert.equal(d.status, 'removed', JSON.stringify(d));
    assert.equal(await dockerInspect(sbx.sandbox_id), null, 'the container is gone from the engine');

    // The client closes: the SDK ends stdin, waits 2 s, then sends SIGTERM.
    const t0 = performance.now();
    await client.close();
    closed = true;
    let timer;
    await Promise.race([exited, new Promise((r2) => (timer = setTimeout(r2, 5000)))]);
    clearTimeout(timer);
    assert.ok(exit, 'serve --stdio still runs 5 s after the client closed');
    const closeMs = Math.round(exit.at - t0);
    measure({ stdio_exit_after_close_ms: closeMs });
    assert.equal(exit.signal, null, `serve --stdio ended by signal ${exit.signal} (it did not exit on stdin EOF)`);
    assert.equal(exit.code, 0, `serve --stdio exit code after stdin EOF`);
    assert.ok(closeMs < 1900, `serve --stdio took ${closeMs} ms to exit on stdin EOF (the SDK sends SIGTERM at 2 s)`);

    // stdout: nothing but newline-delimited JSON-RPC messages.
    assert.deepEqual(transportErrors, [], 'the SDK reported transport errors');
    assert.ok(stdoutRaw.endsWith('\n'), 'the last stdout line is complete');
    const lines = stdoutRaw.split('\n').slice(0, -1);
    // initialize, tools/list, create, bash, destroy (the initialized notification has no reply)
    assert.equal(lines.length, 5, `stdout carried ${lines.length} lines, one per reply`);
    for (const line of lines) {
      let m;
      try {
        m = JSON.parse(line);
      } catch {
        assert.fail(`stdout carried a line that is not JSON: ${JSON.stringify(line.slice(0, 200))}`);
      }
      assert.equal(m.jsonrpc, '2.0', `stdout line is not JSON-RPC: ${line.slice(0, 200)}`);
    }
    ok = true;
  } finally {
    if (!closed) await client.close().catch(() => {});
    if (child && !exit) {
      child.kill('SIGKILL');
      await exited;
    }
    await new Promise((r2) => stderrFile.end(r2));
    let removed = [];
    try {
      removed = await removeContainers({ dbPath, ids });
    } catch (e) {
      console.log(`e2e cleanup (stdio): ${e.message}`);
    }
    if (removed.length) console.log(`e2e cleanup (stdio): removed leftover containers: ${removed.join(', ')}`);
    if (!ok) {
      const text = fs.existsSync(stderrPath) ? fs.readFileSync(stderrPath, 'utf8').split('\n').slice(-60).join('\n') : '';
      console.log(`---- serve --stdio stderr (last lines; full log ${stderrPath}) ----\n${text}\n----`);
      console.log(`e2e: stdio data root kept for inspection: ${root}; exit ${JSON.stringify(exit)}`);
    } else if (!process.env.E2E_KEEP) {
      await fsp.rm(root, { recursive: true, force: true });
    }
  }
  t.diagnostic(`stdio child exit: ${JSON.stringify(exit)}`);
});

// ---- 3: a ChatGPT-like client through the tunnel: stateless, raw POSTs ----

ctx.test('ChatGPT-like stateless client: initialize per batch, tools/call without Mcp-Session-Id', async () => {
  const url = ctx.srv.url;
  const version = { 'MCP-Protocol-Version': '2025-06-18' };
  let sandboxId = null;
  let destroyed = false;

  // A fresh initialize + initialized, as ChatGPT does per batch; the session
  // id is read and then dropped.
  const handshake = async (batch) => {
    const init = await post(url, {
      jsonrpc: '2.0',
      id: 0, // ChatGPT numbers from 0: a falsy id must still come back
      method: 'initialize',
      params: {
        protocolVersion: '2025-06-18',
        capabilities: {},
        clientInfo: { name: 'openai-mcp', version: '1.0.0' },
      },
    });
    const res = assertResult(init, 0, `batch ${batch} initialize`);
    assert.equal(res.protocolVersion, '2025-06-18', JSON.stringify(res));
    assert.ok(res.capabilities?.tools, `initialize announces tools: ${JSON.stringify(res)}`);
    assert.ok(res.serverInfo?.name, JSON.stringify(res));
    const sid = init.headers.get('mcp-session-id');
    assert.ok(sid && /^[\x21-\x7e]+$/.test(sid), `batch ${batch}: initialize returned Mcp-Session-Id ${sid}`);
    const note = await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, version);
    assert.equal(note.status, 202, `batch ${batch} notifications/initialized without a session: ${describe(note)}`);
    return sid;
  };
  const call = (id, name, args) =>
    post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } }, version);

  try {
    // Batch 1: list and create.
    const sid1 = await handshake(1);
    const list = assertResult(
      await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, version),
      1,
      'batch 1 tools/list',
    );
    assert.ok(list.tools.some((x) => x.name === 'bash'), 'tools/list has bash');
    const created = toolOk(assertResult(await call(2, 'sandbox_create', {}), 2, 'batch 1 sandbox_create'), 'sandbox_create');
    sandboxId = created.sandbox_id;
    assert.match(sandboxId, SANDBOX_ID_RE);
    ctx.srv.sandboxIds.add(sandboxId);

    // Batch 2: bash on the sandbox of batch 1, then error replies that must
    // carry the request id.
    const sid2 = await handshake(2);
    assert.notEqual(sid2, sid1, 'every initialize gets its own session id');
    const r = toolOk(
      assertResult(await call(1, 'bash', { sandbox_id: sandboxId, command: 'echo hi' }), 1, 'batch 2 bash'),
      'bash',
    );
    assert.equal(r.exit_code, 0, JSON.stringify(r));
    assert.equal(r.output, 'hi\n', JSON.stringify(r));

    const unknownMethod = await post(url, { jsonrpc: '2.0', id: 'req-7', method: 'no/such_method', params: {} }, version);
    assertErrorWithId(unknownMethod, 'req-7', 'unknown method');
    assert.equal(unknownMethod.msg.error.code, -32601, describe(unknownMethod));

    const noName = await post(url, { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { arguments: {} } }, version);
    assertErrorWithId(noName, 8, 'tools/call without a name');

    const unknownTool = await call(9, 'no_such_tool', {});
    assert.ok(unknownTool.msg, describe(unknownTool));
    assert.equal(unknownTool.msg.id, 9, `unknown tool: the reply must carry the request id: ${describe(unknownTool)}`);
    assert.ok(
      unknownTool.msg.error || unknownTool.msg.result?.isError === true,
      `unknown tool is an error: ${describe(unknownTool)}`,
    );

    const badVersion = await post(url, { jsonrpc: '2.0', id: 10, method: 'ping' }, { 'MCP-Protocol-Version': '1999-01-01' });
    assert.equal(badVersion.status, 400, describe(badVersion));
    assertErrorWithId(badVersion, 10, 'unsupported MCP-Protocol-Version');

    const badSandbox = await call(11, 'bash', { sandbox_id: 'sbx_aaaaaaaaaaaaaaaaaaaa', command: 'true' });
    assert.equal(badSandbox.msg?.id, 11, `bash on an unknown sandbox: reply id: ${describe(badSandbox)}`);
    assert.ok(badSandbox.msg.error || badSandbox.msg.result?.isError === true, describe(badSandbox));

    // Batch 3: destroy.
    const sid3 = await handshake(3);
    assert.notEqual(sid3, sid2);
    const d = toolOk(
      assertResult(await call(1, 'sandbox_destroy', { sandbox_id: sandboxId }), 1, 'batch 3 sandbox_destroy'),
      'sandbox_destroy',
    );
    destroyed = true;
    assert.equal(d.status, 'removed', JSON.stringify(d));
    assert.equal(await dockerInspect(sandboxId), null, 'the container is gone from the engine');
  } finally {
    if (sandboxId && !destroyed) await call(99, 'sandbox_destroy', { sandbox_id: sandboxId }).catch(() => {});
  }
});

// ---- 4: initializes without DELETE: the session table is capped ----

function sessionCap() {
  const src = fs.readFileSync(path.join(REPO_ROOT, 'controlplane', 'serve.c'), 'utf8');
  const m = src.match(/#define\s+MCP_MAX_SESSIONS\s+\(?\s*(\d+)u?\s*\)?/);
  if (!m) throw new Error('cannot read MCP_MAX_SESSIONS from controlplane/serve.c');
  return Number(m[1]);
}

ctx.test('initializes without DELETE: the session table stays capped, oldest evicted, newest live', async () => {
  const url = ctx.srv.url;
  const cap = sessionCap();
  // 1000, or enough past the cap that the first sessions of the burst must go.
  const n = Math.max(1000, cap + 50);
  const ids = [];
  const t0 = performance.now();
  const deadline = Date.now() + 30_000;
  for (let i = 0; i < n; i++) {
    if (Date.now() > deadline) assert.fail(`only ${i} of ${n} initializes within 30 s`);
    const r = await post(url, {
      jsonrpc: '2.0',
      id: i,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: `flood-${i}`, version: '1' } },
    });
    assertResult(r, i, `initialize #${i}`);
    const sid = r.headers.get('mcp-session-id');
    assert.ok(sid, `initialize #${i} returned no Mcp-Session-Id: ${describe(r)}`);
    ids.push(sid);
  }
  const ms = performance.now() - t0;
  measure({ initialize_flood: n, initialize_flood_ms: Math.round(ms), initialize_per_s: Math.round((n * 1000) / ms) });
  assert.equal(new Set(ids).size, n, 'session ids are unique');
  assert.ok(await ctx.srv.healthy(), 'serve is still up after the flood');

  const ping = (id, sid) =>
    post(url, { jsonrpc: '2.0', id, method: 'ping' }, { 'MCP-Protocol-Version': '2025-06-18', ...(sid ? { 'Mcp-Session-Id': sid } : {}) });

  // Sessions before this burst are older still, so exactly the last `cap`
  // ids of the burst are live: index n-cap-1 is gone, index n-cap is not.
  const first = await ping('p-first', ids[0]);
  assert.equal(first.status, 404, `the first session of the burst was not evicted: ${describe(first)}`);
  assertErrorWithId(first, 'p-first', 'ping on an evicted session');
  const lastGone = await ping('p-edge-gone', ids[n - cap - 1]);
  assert.equal(lastGone.status, 404, `session #${n - cap - 1} (cap ${cap}) should be evicted: ${describe(lastGone)}`);
  const oldestLive = await ping('p-edge-live', ids[n - cap]);
  assertResult(oldestLive, 'p-edge-live', `ping on session #${n - cap}, the oldest that fits the cap of ${cap}`);

  const newest = await ping('p-newest', ids[n - 1]);
  assertResult(newest, 'p-newest', 'ping on the newest session');
  const newestList = await post(
    url,
    { jsonrpc: '2.0', id: 'l-newest', method: 'tools/list', params: {} },
    { 'MCP-Protocol-Version': '2025-06-18', 'Mcp-Session-Id': ids[n - 1] },
  );
  assert.ok(assertResult(newestList, 'l-newest', 'tools/list on the newest session').tools.length > 0);

  // Stateless requests still work, and an SDK client can still connect.
  assertResult(await ping('p-stateless'), 'p-stateless', 'stateless ping after the flood');
  const client = await ctx.srv.client({ name: 'e2e-08-after-flood' });
  await client.ping(CALL_TIMEOUT);
  await client.close();
  ctx.srv.clients.delete(client);
});

ctx.finish();
