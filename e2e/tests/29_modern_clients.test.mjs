// 29: real clients of both protocol generations (issue 17). The official v2
// SDK client (@modelcontextprotocol/client 2.x) in 'auto' mode (it probes
// with server/discover and must land on 2026-07-28) and in 'legacy' mode (the
// plain 2025 initialize, which must land on 2025-11-25 with a session), and
// the Vercel AI SDK's MCP client (@ai-sdk/mcp, tools called through the AI
// SDK tool objects its tools() returns, no model), each over Streamable HTTP
// and over stdio, doing the agent's round: sandbox_create (the v2 client
// with a progressToken, so its steps come as notifications/progress), bash,
// write, read, apply_patch, read, sandbox_destroy. The clients live in e2e/node22
// and run there on Node 22 (e2e/node22/clients.mjs); this file checks what
// they did and, over HTTP, what they put on the wire.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import {
  BIN,
  LABEL_REGISTRY,
  REPO_ROOT,
  SANDBOX_ID_RE,
  authHeaders,
  childEnv,
  dockerRequest,
  freePort,
  useServer,
} from '../lib/server.mjs';

const run = promisify(execFile);
const ctx = useServer();
const NODE22 = path.join(REPO_ROOT, 'e2e', 'node22', 'node_modules', 'node', 'bin', 'node');
const DRIVER = path.join(REPO_ROOT, 'e2e', 'node22', 'clients.mjs');

// Runs one client over one transport; returns the driver's JSON report.
async function drive(client, transport, env) {
  try {
    const { stdout } = await run(NODE22, [DRIVER, client, transport], {
      env: { ...process.env, ...env },
      timeout: 170_000,
      maxBuffer: 8 * 1024 * 1024,
    });
    return JSON.parse(stdout.trim().split('\n').pop());
  } catch (e) {
    throw new Error(`${client} over ${transport} failed: ${e.stderr || e.message}`);
  }
}

function httpEnv() {
  const auth = authHeaders(ctx.srv.url).Authorization || '';
  return { E2E_URL: ctx.srv.url, E2E_TOKEN: auth.replace(/^Bearer /, '') };
}

// The round's results, the same for every client and generation.
function assertRound(report, client) {
  const s = report.steps;
  assert.match(s.sandbox_id, SANDBOX_ID_RE);
  assert.equal(s.bash.output, 'hello from Linux\n');
  assert.equal(s.bash.exit_code, 0);
  assert.equal(s.read, 'one\ntwo\n');
  assert.equal(s.apply_patch, 1);
  assert.equal(s.read_after_patch, 'one\nthree\n');
  assert.equal(s.destroyed, true);
  assert.equal(report.serverName, 'chat2sbx');
  assert.ok(report.toolCount >= 15, `only ${report.toolCount} tools listed`);
  // The v2 client asked for progress: sandbox_create reported its steps
  // (on the POST's own SSE answer over HTTP, on stdout over stdio).
  if (client.startsWith('v2-')) assert.ok(report.steps.progress?.length >= 3, JSON.stringify(report.steps.progress));
}

// Over HTTP a 2026-07-28 client starts with server/discover and never
// initializes or holds a session; every POST carries the routing headers
// that mirror its body.
function assertModernWire(wire) {
  assert.equal(wire[0].method, 'server/discover', JSON.stringify(wire[0]));
  for (const w of wire) {
    assert.notEqual(w.method, 'initialize');
    assert.equal(w.status, 200, JSON.stringify(w));
    assert.equal(w.protocolVersion, '2026-07-28', JSON.stringify(w));
    assert.equal(w.mcpMethod, w.method, JSON.stringify(w));
    assert.equal(w.sessionId, null, JSON.stringify(w));
  }
  const names = wire.filter((w) => w.method === 'tools/call').map((w) => w.mcpName);
  assert.deepEqual(names, ['sandbox_create', 'bash', 'write', 'read', 'apply_patch', 'read', 'sandbox_destroy']);
}

for (const client of ['v2-auto', 'ai-sdk']) {
  ctx.test(`${client} over HTTP: server/discover, 2026-07-28 without a session, the whole round`, async () => {
    const report = await drive(client, 'http', httpEnv());
    assert.equal(report.era, 'modern');
    assert.equal(report.protocolVersion, '2026-07-28');
    assertRound(report, client);
    assertModernWire(report.wire);
  });
}

ctx.test('v2-legacy over HTTP: initialize at 2025-11-25, a session, no 2026 headers, the whole round', async () => {
  const report = await drive('v2-legacy', 'http', httpEnv());
  assert.equal(report.era, 'legacy');
  assert.equal(report.protocolVersion, '2025-11-25');
  assertRound(report, 'v2-legacy');
  const wire = report.wire;
  assert.equal(wire[0].method, 'initialize');
  assert.ok(!wire.some((w) => w.method === 'server/discover'));
  for (const w of wire.slice(1)) {
    assert.equal(w.protocolVersion, '2025-11-25', JSON.stringify(w));
    assert.ok(w.sessionId, `no Mcp-Session-Id on ${JSON.stringify(w)}`);
    assert.equal(w.mcpMethod, null);
  }
});

// stdio: the client spawns `chat2sbx serve --stdio` itself (v2 auto also
// spawns a short-lived probe process first), on a data root of its own.
for (const [client, era, version] of [
  ['v2-auto', 'modern', '2026-07-28'],
  ['v2-legacy', 'legacy', '2025-11-25'],
  ['ai-sdk', 'modern', '2026-07-28'],
]) {
  ctx.test(`${client} over stdio: ${version}, the whole round, nothing left behind`, async () => {
    const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'chat2sbx-e2e-29-'));
    const home = path.join(root, 'home');
    const dataRoot = path.join(root, 'data');
    const dbPath = path.join(dataRoot, 'state', 'chat2sbx.sqlite');
    await fsp.mkdir(home, { recursive: true });
    const env = childEnv({ CHAT2SBX_ENABLE_TUNNEL: '0' }, home, dataRoot, await freePort());
    try {
      const report = await drive(client, 'stdio', {
        E2E_BIN: BIN,
        E2E_STDIO_ENV: JSON.stringify(env),
        E2E_STDIO_CWD: root,
      });
      assert.equal(report.era, era);
      assert.equal(report.protocolVersion, version);
      assertRound(report, client);
      const left = await dockerRequest('GET', '/containers/json?all=1');
      const ours = (left.body || []).filter((c) => (c.Labels || {})[LABEL_REGISTRY] === dbPath);
      assert.deepEqual(ours.map((c) => c.Names), [], 'containers of the stdio serve outlived it');
    } finally {
      const left = await dockerRequest('GET', '/containers/json?all=1');
      for (const c of Array.isArray(left.body) ? left.body : [])
        if ((c.Labels || {})[LABEL_REGISTRY] === dbPath) await dockerRequest('DELETE', `/containers/${c.Id}?force=1&v=1`);
      await fsp.rm(root, { recursive: true, force: true });
    }
  });
}

ctx.finish();
