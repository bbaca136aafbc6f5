// 03: bad input gets the answer the spec and docs/tools.md name, and the server
// keeps serving. Also the stateless paths ChatGPT and the tunnel take.
import assert from 'node:assert/strict';

import { McpError } from '@modelcontextprotocol/sdk/types.js';

import { rawPost, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

const WELL_FORMED_UNKNOWN = 'sbx_' + 'abcdefghijklmnopqrst'; // sbx_ + 20 base32 chars
const MALFORMED = 'sbx_NOT-an-id!';

ctx.test('unknown tool → JSON-RPC error -32602', async () => {
  const tools = await ctx.tools();
  await assert.rejects(
    tools.client.callTool({ name: 'no_such_tool', arguments: {} }),
    (e) => {
      assert.ok(e instanceof McpError, `an McpError, got ${e?.constructor?.name}: ${e?.message}`);
      assert.equal(e.code, -32602, `code of ${e.message}`);
      assert.match(e.message, /no_such_tool/, 'the error names the tool');
      return true;
    },
  );
});

ctx.test('missing sandbox_id → isError naming sandbox_id', async () => {
  const tools = await ctx.tools();
  for (const name of ['bash', 'read', 'write', 'sandbox_get', 'sandbox_destroy']) {
    const r = await tools.call(name, name === 'bash' ? { command: 'true' } : name === 'read' ? { path: 'x' } : name === 'write' ? { path: 'x', content: 'y' } : {});
    assert.equal(r.isError, true, `${name} without sandbox_id: ${JSON.stringify(r)}`);
    assert.match(resultText(r), /sandbox_id/, `${name}: message names sandbox_id: ${resultText(r)}`);
  }
});

ctx.test('unknown sandbox_id (well-formed and malformed) → isError naming it', async () => {
  const tools = await ctx.tools();
  for (const id of [WELL_FORMED_UNKNOWN, MALFORMED]) {
    for (const [name, args] of [
      ['bash', { sandbox_id: id, command: 'true' }],
      ['sandbox_get', { sandbox_id: id }],
      ['read', { sandbox_id: id, path: 'x' }],
    ]) {
      const r = await tools.call(name, args);
      assert.equal(r.isError, true, `${name} on ${id}: ${JSON.stringify(r)}`);
      assert.ok(resultText(r).includes(id), `${name}: message names ${id}: ${resultText(r)}`);
    }
  }
});

// An error result carries its message as text and no structuredContent: the
// SDK validates structuredContent against the outputSchema even on isError
// results (docs/tools.md).
ctx.test('isError results: message in content[0].text, no structuredContent', async () => {
  const tools = await ctx.tools();
  for (const [name, args] of [
    ['sandbox_get', { sandbox_id: WELL_FORMED_UNKNOWN }],
    ['bash', { command: 'true' }],
  ]) {
    const r = await tools.call(name, args);
    assert.equal(r.isError, true);
    assert.equal(r.content?.[0]?.type, 'text', `${name}: content[0] is text: ${JSON.stringify(r)}`);
    assert.ok(resultText(r).length > 10, `${name}: a message: ${JSON.stringify(r)}`);
    assert.equal(r.structuredContent, undefined, `${name}: ${JSON.stringify(r.structuredContent)}`);
  }
});

ctx.test('wrong argument types → isError naming the field', async () => {
  const tools = await ctx.tools();
  const cases = [
    ['bash', { sandbox_id: WELL_FORMED_UNKNOWN, command: 42 }, 'command'],
    ['bash', { sandbox_id: WELL_FORMED_UNKNOWN, command: 'true', yield_time_ms: 'soon' }, 'yield_time_ms'],
    ['sandbox_get', { sandbox_id: 7 }, 'sandbox_id'],
    ['write', { sandbox_id: WELL_FORMED_UNKNOWN, path: 'x', content: { not: 'text' } }, 'content'],
  ];
  for (const [name, args, field] of cases) {
    const r = await tools.call(name, args);
    assert.equal(r.isError, true, `${name} ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
    assert.match(resultText(r), new RegExp(field), `${name}: message names ${field}: ${resultText(r)}`);
  }
});

ctx.test('malformed JSON (raw POST) → JSON-RPC error -32700', async () => {
  const r = await rawPost(ctx.srv.url, '{"jsonrpc":"2.0","id":1,"method":"tools/list"');
  assert.ok(r.json, `a JSON-RPC answer (HTTP ${r.status}): ${r.text.slice(0, 300)}`);
  assert.equal(r.json.error?.code, -32700, `HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  assert.ok(r.status === 200 || r.status === 400, `HTTP status ${r.status}`);
});

ctx.test('a JSON value that is not a JSON-RPC request → -32600', async () => {
  for (const body of [{ foo: 1 }, { jsonrpc: '1.0', id: 6, method: 'ping' }, { jsonrpc: '2.0', id: 7, method: 42 }]) {
    const r = await rawPost(ctx.srv.url, body);
    assert.ok(r.json, `a JSON-RPC answer to ${JSON.stringify(body)} (HTTP ${r.status}): ${r.text.slice(0, 300)}`);
    assert.equal(r.json.error?.code, -32600, `${JSON.stringify(body)} → HTTP ${r.status}: ${r.text.slice(0, 300)}`);
    if ('id' in body) assert.equal(r.json.id, body.id, `the error carries the request's id: ${r.text.slice(0, 300)}`);
  }
});

ctx.test('stateless: tools/call with no initialize and no Mcp-Session-Id works', async () => {
  const r = await rawPost(ctx.srv.url, {
    jsonrpc: '2.0',
    id: 'stateless-1',
    method: 'tools/call',
    params: { name: 'sandbox_list', arguments: {} },
  });
  assert.equal(r.status, 200, `HTTP ${r.status}: ${r.text.slice(0, 300)}`);
  assert.equal(r.json?.id, 'stateless-1', r.text.slice(0, 300));
  assert.ok(r.json?.result, `a result: ${r.text.slice(0, 300)}`);
  assert.notEqual(r.json.result.isError, true, r.text.slice(0, 300));
  assert.ok(Array.isArray(r.json.result.structuredContent?.sandboxes), r.text.slice(0, 300));
  // and a stateless tool error carries the request id too
  const e = await rawPost(ctx.srv.url, {
    jsonrpc: '2.0',
    id: 77,
    method: 'tools/call',
    params: { name: 'no_such_tool', arguments: {} },
  });
  assert.equal(e.json?.id, 77, `error reply carries the request id: ${e.text.slice(0, 300)}`);
  assert.equal(e.json?.error?.code, -32602, e.text.slice(0, 300));
});

ctx.test('unknown Mcp-Session-Id → HTTP 404', async () => {
  const r = await rawPost(
    ctx.srv.url,
    { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    { 'Mcp-Session-Id': 'no-such-session-0123456789abcdef', 'MCP-Protocol-Version': '2025-06-18' },
  );
  assert.equal(r.status, 404, `HTTP ${r.status}: ${r.text.slice(0, 300)}`);
});

ctx.test('tools/list advertises the contract tools with exact annotations', async () => {
  const tools = await ctx.tools();
  const { tools: list } = await tools.client.listTools();
  const byName = new Map(list.map((x) => [x.name, x]));
  const readOnly = ['sandbox_list', 'sandbox_get', 'workspace_list', 'read', 'bash_poll', 'bash_list', 'search', 'list'];
  const destructive = ['sandbox_destroy', 'bash_stop', 'write', 'edit', 'apply_patch'];
  const others = ['sandbox_create', 'bash', 'bash_input'];
  for (const n of [...readOnly, ...destructive, ...others]) {
    const tool = byName.get(n);
    assert.ok(tool, `tools/list has ${n} (has: ${[...byName.keys()].join(', ')})`);
    assert.equal(tool.inputSchema?.type, 'object', `${n} has an object inputSchema`);
    assert.ok(tool.description && tool.description.length > 20, `${n} has a description`);
    assert.equal(tool.outputSchema?.type, 'object', `${n} has an object outputSchema`);
  }
  for (const n of readOnly) assert.equal(byName.get(n).annotations?.readOnlyHint, true, `${n} readOnlyHint`);
  for (const n of [...destructive, ...others]) assert.notEqual(byName.get(n).annotations?.readOnlyHint, true, `${n} is not read-only`);
  for (const n of destructive) assert.equal(byName.get(n).annotations?.destructiveHint, true, `${n} destructiveHint`);
});

ctx.test('after all that, the server still serves (ping, tools/list, a fresh session)', async () => {
  const tools = await ctx.tools();
  await tools.client.ping();
  const { tools: list } = await tools.client.listTools();
  assert.ok(list.length > 0);
  const fresh = await ctx.srv.client({ name: 'chat2sbx-e2e-after' });
  await fresh.ping();
  assert.ok(ctx.srv.alive(), 'chat2sbx serve is still running');
});

ctx.finish();
