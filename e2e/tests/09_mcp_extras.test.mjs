// 09: MCP extras against a real sandbox. Resumption: a client reads the SSE
// answer of a long bash, drops the connection after the first event, and
// gets the rest with GET + Last-Event-ID (no duplicate, no gap). Cancellation:
// notifications/cancelled ends the wait of a bash with a 30 s yield well
// before the yield, and the command keeps running and can be polled.
// sandbox_create reports each step as notifications/progress. Every JSON-RPC
// request leaves exactly one row in the audit table.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';

import { CALL_TIMEOUT, CREATE_TIMEOUT, SANDBOX_ID_RE, authHeaders, useServer } from '../lib/server.mjs';

const run = promisify(execFile);
const ctx = useServer();

// ---- helpers of this file ----

const HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };

// Splits SSE text into events [{id, data}] (complete events only).
function sseEvents(text) {
  const out = [];
  const blocks = text.split(/\r?\n\r?\n/);
  blocks.pop(); // the part after the last blank line is not complete
  for (const block of blocks) {
    let id = null;
    const data = [];
    for (const line of block.split(/\r?\n/)) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
    }
    if (id !== null || data.length) out.push({ id, data: data.join('\n') });
  }
  return out;
}

// Initializes a session with raw POSTs; returns its id.
async function initSession(url) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...authHeaders(url) },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'init',
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'e2e-09', version: '1' } },
    }),
  });
  const body = await res.text();
  assert.equal(res.status, 200, body);
  const sid = res.headers.get('mcp-session-id');
  assert.ok(sid, 'initialize returns Mcp-Session-Id');
  const n = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...authHeaders(url), 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  });
  assert.equal(n.status, 202);
  return sid;
}

// Reads a streaming response until `enough(text)` holds, then drops the
// connection. Returns the text read.
async function readThenDrop(res, controller, enough) {
  const reader = res.body.getReader();
  const dec = new TextDecoder();
  let text = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += dec.decode(value, { stream: true });
    if (enough(text)) break;
  }
  controller.abort();
  try {
    await reader.cancel();
  } catch {
    /* already aborted */
  }
  return text;
}

async function resume(url, sid, lastEventId) {
  const res = await fetch(url, {
    method: 'GET',
    headers: {
      ...authHeaders(url),
      Accept: 'text/event-stream',
      'Mcp-Session-Id': sid,
      'MCP-Protocol-Version': '2025-11-25',
      'Last-Event-ID': lastEventId,
    },
    signal: AbortSignal.timeout(CALL_TIMEOUT.timeout),
  });
  return { status: res.status, ct: res.headers.get('content-type') || '', text: await res.text() };
}

// The registry database of this run's server (STATE_DIR/chat2sbx.sqlite).
function dbPath() {
  const p = path.join(ctx.srv.dataRoot, 'state', 'chat2sbx.sqlite');
  assert.ok(fs.existsSync(p), `no registry at ${p}`);
  return p;
}

async function sql(query) {
  const { stdout } = await run('sqlite3', ['-readonly', '-json', dbPath(), query], { timeout: 20_000 });
  return stdout.trim() ? JSON.parse(stdout) : [];
}

async function eventually(fn, what, ms = 20_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

let sandboxId = null;
ctx.onCleanup(async () => {
  if (sandboxId) await (await ctx.tools()).destroyQuietly(sandboxId);
});

// ---- tests ----

ctx.test('sandbox_create reports each step as notifications/progress, increasing', async () => {
  const tools = await ctx.tools();
  const seen = [];
  const res = await tools.client.callTool({ name: 'sandbox_create', arguments: {} }, undefined, {
    ...CREATE_TIMEOUT,
    onprogress: (p) => seen.push(p),
  });
  assert.ok(!res.isError, JSON.stringify(res.content));
  sandboxId = res.structuredContent.sandbox_id;
  tools.server.sandboxIds.add(sandboxId);
  assert.match(sandboxId, SANDBOX_ID_RE);
  assert.ok(seen.length >= 5, `progress events: ${JSON.stringify(seen)}`);
  for (let i = 1; i < seen.length; i++) {
    assert.ok(seen[i].progress > seen[i - 1].progress, `progress must increase: ${JSON.stringify(seen)}`);
  }
  const last = seen[seen.length - 1];
  assert.equal(last.progress, last.total, `the last event completes: ${JSON.stringify(last)}`);
  const steps = seen.map((p) => p.message).join(' | ');
  for (const step of ['creating the container', 'starting the container', 'waiting for the helper']) {
    assert.ok(steps.includes(step), `step '${step}' reported: ${steps}`);
  }
});

ctx.test('a dropped SSE stream of a long bash resumes with Last-Event-ID: no duplicate, no gap', async () => {
  assert.ok(sandboxId, 'the create test ran');
  const url = ctx.srv.url;
  const sid = await initSession(url);
  const controller = new AbortController();
  const res = await fetch(url, {
    method: 'POST',
    headers: { ...HEADERS, ...authHeaders(url), 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'long-bash',
      method: 'tools/call',
      params: {
        name: 'bash',
        _meta: { progressToken: 'pt-1' },
        arguments: {
          sandbox_id: sandboxId,
          command: 'for i in 1 2 3 4 5 6; do echo line-$i; sleep 0.5; done',
          yield_time_ms: 20000,
        },
      },
    }),
    signal: controller.signal,
  });
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') || '', /text\/event-stream/);
  // Read the first event (the progress notification), then drop the connection.
  const head = sseEvents(await readThenDrop(res, controller, (t) => sseEvents(t).length >= 1));
  assert.ok(head.length >= 1, 'at least one event before the drop');
  const first = head[0];
  assert.ok(first.id, 'events carry ids');
  assert.equal(JSON.parse(first.data).method, 'notifications/progress');
  assert.ok(!head.some((e) => /"result"/.test(e.data)), 'dropped before the result arrived');
  const lastSeen = head[head.length - 1].id;

  // Resume: the events after lastSeen on that stream, live until the result.
  const r = await resume(url, sid, lastSeen);
  assert.equal(r.status, 200, r.text);
  assert.match(r.ct, /text\/event-stream/);
  const rest = sseEvents(r.text + '\n\n');
  assert.ok(rest.length >= 1, `resumed events: ${r.text}`);
  const ids = [...head, ...rest].map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, `no event twice: ${ids}`);
  const [key] = first.id.split('-');
  const seqs = ids.map((id) => {
    assert.ok(id.startsWith(`${key}-`), `every event is of the same stream: ${ids}`);
    return Number(id.slice(key.length + 1));
  });
  seqs.forEach((s, i) => assert.equal(s, i + 1, `no gap: ${ids}`));
  const final = JSON.parse(rest[rest.length - 1].data);
  assert.equal(final.id, 'long-bash');
  const out = final.result.structuredContent;
  assert.equal(out.status, 'exited', JSON.stringify(out));
  for (let i = 1; i <= 6; i++) assert.ok(out.output.includes(`line-${i}`), out.output);

  // A second resume from the same id redelivers the same events.
  const again = await resume(url, sid, lastSeen);
  assert.equal(again.text, r.text);
  // Another session cannot read this stream; an unknown id is refused.
  const other = await initSession(url);
  const foreign = await resume(url, other, lastSeen);
  assert.equal(foreign.status, 400, foreign.text);
  assert.match(JSON.parse(foreign.text).error.message, /unknown or its stream expired/);
});

ctx.test('notifications/cancelled ends the wait of a long bash; the command runs on and can be polled', async () => {
  assert.ok(sandboxId, 'the create test ran');
  const tools = await ctx.tools();
  const marker = `cancel-me-${Date.now()}`;
  const controller = new AbortController();
  const started = Date.now();
  const call = tools.client.callTool(
    {
      name: 'bash',
      arguments: { sandbox_id: sandboxId, command: `sleep 25; echo ${marker}`, yield_time_ms: 30000 },
    },
    undefined,
    { signal: controller.signal, timeout: 60_000 },
  );
  // Let the command start, then cancel (the SDK sends notifications/cancelled).
  const list = await eventually(async () => {
    const l = await tools.ok('bash_list', { sandbox_id: sandboxId });
    return l.sessions?.some?.((s) => JSON.stringify(s).includes(marker)) ? l : null;
  }, 'the bash session to start');
  controller.abort('the test cancels');
  await assert.rejects(call, 'the cancelled call rejects on the client');

  // The server stopped waiting: its audit row for the call says CANCELLED,
  // written when the handler returned, well before the 30 s yield.
  const rows = await eventually(
    async () => {
      const r = await sql("SELECT status, duration_ms FROM audit WHERE action = 'bash' AND status = 'CANCELLED'");
      return r.length ? r : null;
    },
    'the cancelled call to be freed',
    20_000,
  );
  assert.ok(rows[0].duration_ms < 30000, `freed before the yield: ${JSON.stringify(rows)}`);
  assert.ok(Date.now() - started < 30000, 'the call ended before its yield');

  // The command goes on, and the session can be polled and stopped.
  const session = list.sessions.find((s) => JSON.stringify(s).includes(marker));
  const sessionId = session.session_id;
  const polled = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: sessionId, yield_time_ms: 100 });
  assert.equal(polled.status, 'running', JSON.stringify(polled));
  const stopped = await tools.ok('bash_stop', { sandbox_id: sandboxId, session_id: sessionId });
  assert.notEqual(stopped.status, 'running');
});

ctx.test('every JSON-RPC request leaves exactly one audit row', async () => {
  const url = ctx.srv.url;
  const sid = await initSession(url);
  const h = { ...HEADERS, ...authHeaders(url), 'Mcp-Session-Id': sid, 'MCP-Protocol-Version': '2025-11-25' };
  const send = async (msg) => {
    const res = await fetch(url, { method: 'POST', headers: h, body: JSON.stringify(msg) });
    await res.text();
    return res.status;
  };
  assert.equal(await send({ jsonrpc: '2.0', id: 1, method: 'ping' }), 200);
  assert.equal(await send({ jsonrpc: '2.0', id: 2, method: 'tools/list' }), 200);
  assert.equal(
    await send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'sandbox_list', arguments: {} } }),
    200,
  );
  assert.equal(
    await send({
      jsonrpc: '2.0',
      id: 4,
      method: 'tools/call',
      params: { name: 'sandbox_get', arguments: { sandbox_id: sandboxId } },
    }),
    200,
  );
  assert.equal(await send({ jsonrpc: '2.0', id: 5, method: 'no/such/method' }), 200);
  // serve writes a request's row in a batch a few milliseconds after the
  // answer (issue 27): read them once the last request's row is there.
  await eventually(
    async () => (await sql(`SELECT id FROM audit WHERE session = '${sid.slice(0, 8)}' AND method = 'no/such/method'`)).length,
    "the last request's audit row",
  );
  const rows = await sql(
    `SELECT method, action, status, sandbox_id, session FROM audit WHERE session = '${sid.slice(0, 8)}' ORDER BY id`,
  );
  assert.deepEqual(
    rows.map((r) => [r.method, r.action, r.status]),
    [
      ['initialize', 'initialize', 'ok'],
      ['notifications/initialized', 'notifications/initialized', 'ok'],
      ['ping', 'ping', 'ok'],
      ['tools/list', 'tools/list', 'ok'],
      ['tools/call', 'sandbox_list', 'ok'],
      ['tools/call', 'sandbox_get', 'ok'],
      ['no/such/method', 'no/such/method', 'METHOD_NOT_FOUND'],
    ],
  );
  assert.equal(rows[5].sandbox_id, sandboxId);
  // The session column holds a prefix only, never the whole id.
  const whole = await sql(`SELECT COUNT(*) AS n FROM audit WHERE session = '${sid}' OR message LIKE '%${sid}%'`);
  assert.equal(whole[0].n, 0);
  // The stderr log has one structured line per request too.
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  const mine = log.split('\n').filter((l) => l.includes(`session=${sid.slice(0, 8)}`));
  assert.equal(mine.length, 7, mine.join('\n'));
});

ctx.test('sandbox_destroy', async () => {
  const tools = await ctx.tools();
  const res = await tools.ok('sandbox_destroy', { sandbox_id: sandboxId }, CREATE_TIMEOUT);
  assert.equal(res.sandbox_id, sandboxId);
  sandboxId = null;
});

ctx.finish();
