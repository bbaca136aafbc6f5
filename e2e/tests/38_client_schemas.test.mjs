// e2e 38: optional arguments keep their type and bounds in the client
// libraries people build agents with (issue 25). chat2sbx advertises an
// optional argument as one schema, {"type": [T, "null"], bounds...}: the
// OpenAI Agents SDK (strict and not), LangChain's MCP adapters (and what they
// hand an OpenAI model, strict and not) and the AI SDK each connect to a
// running serve over Streamable HTTP, list the tools and convert them (no
// model is called; e2e/node22/client_schemas.mjs, on Node 22), and every
// optional argument must come out typed with the bounds tools/list states;
// LangChain 1.1.4 used to drop anyOf [T, {"type": "null"}] to an untyped
// property. Short: one serve, no sandbox.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

import { REPO_ROOT, authHeaders, useServer } from '../lib/server.mjs';

const run = promisify(execFile);
const ctx = useServer();
const NODE22 = path.join(REPO_ROOT, 'e2e', 'node22', 'node_modules', 'node', 'bin', 'node');
const DRIVER = path.join(REPO_ROOT, 'e2e', 'node22', 'client_schemas.mjs');
const BOUNDS = ['minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'enum'];

ctx.test('the Agents SDK, LangChain and the AI SDK keep every optional argument typed, with its bounds', async () => {
  const token = (authHeaders(ctx.srv.url).Authorization || '').replace(/^Bearer /, '');
  let stdout;
  try {
    ({ stdout } = await run(NODE22, [DRIVER], {
      env: { ...process.env, E2E_URL: ctx.srv.url, E2E_TOKEN: token },
      timeout: 60_000,
      maxBuffer: 16 * 1024 * 1024,
    }));
  } catch (e) {
    throw new Error(`client_schemas.mjs failed: ${e.stderr || e.message}`);
  }
  const r = JSON.parse(stdout.trim().split('\n').pop());

  // As served: each optional argument is one schema typed [T, "null"].
  const optional = [];
  for (const [tool, s] of Object.entries(r.raw)) {
    const required = new Set(s.required || []);
    for (const [arg, p] of Object.entries(s.properties)) {
      if (required.has(arg)) continue;
      assert.ok(Array.isArray(p.type) && p.type.length === 2 && p.type[1] === 'null' && !p.anyOf, `${tool}.${arg}: ${JSON.stringify(p)}`);
      optional.push({ tool, arg, p });
    }
  }
  assert.ok(optional.length >= 39, `${optional.length} optional arguments`);

  // Each library keeps each of them typed, every bound included.
  const libs = Object.keys(r.converted);
  assert.deepEqual(libs.sort(), ['agents', 'agents-strict', 'ai-sdk', 'langchain', 'langchain-openai', 'langchain-openai-strict']);
  for (const lib of libs) {
    const tools = r.converted[lib];
    assert.deepEqual(Object.keys(tools).sort(), Object.keys(r.raw).sort(), `${lib}: every tool`);
    for (const { tool, arg, p } of optional) {
      const q = tools[tool].properties?.[arg];
      assert.ok(q, `${lib}: ${tool}.${arg} is missing`);
      assert.ok([q.type].flat().includes(p.type[0]), `${lib}: ${tool}.${arg} lost its type: ${JSON.stringify(q)}`);
      for (const k of BOUNDS) if (p[k] !== undefined) assert.deepEqual(q[k], p[k], `${lib}: ${tool}.${arg} lost ${k}: ${JSON.stringify(q)}`);
    }
    const y = tools.bash.properties.yield_time_ms;
    assert.deepEqual({ type: [y.type].flat()[0], minimum: y.minimum, maximum: y.maximum }, { type: 'integer', minimum: 0, maximum: 60000 }, lib);
  }
  // The Agents SDK made every tool strict (it falls back to a non-strict
  // tool when a schema cannot be), every property listed and nullable.
  assert.deepEqual(Object.entries(r.strict).filter(([, s]) => !s), []);
  for (const [tool, s] of Object.entries(r.converted['agents-strict']))
    assert.deepEqual([...s.required].sort(), Object.keys(s.properties).sort(), `${tool}: strict lists every property`);
});

ctx.finish();
