// Real MCP clients of the 2026-07-28 generation against chat2sbx, for e2e 29
// (which runs on Node 20 and starts this on the Node 22 installed beside it:
// @ai-sdk/mcp needs Node 22). One run = one client over one transport doing
// the agent's round: sandbox_create, bash, write, read, apply_patch, read,
// sandbox_destroy. Prints one JSON line on stdout:
//   { era, protocolVersion, serverName, toolCount, steps: {...}, wire: [...] }
// wire lists every HTTP POST the client sent (JSON-RPC method, the
// MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Session-Id headers, the
// status) so the test can check what each generation put on the wire.
// Usage: node clients.mjs CLIENT TRANSPORT
//   CLIENT     v2-auto | v2-legacy (@modelcontextprotocol/client 2.x with
//              versionNegotiation mode 'auto' or 'legacy') | ai-sdk
//              (@ai-sdk/mcp's createMCPClient, tools called through the
//              AI SDK tool objects its tools() returns)
//   TRANSPORT  http (E2E_URL, E2E_TOKEN) | stdio (E2E_BIN, E2E_STDIO_ENV as
//              JSON, E2E_STDIO_CWD; serve --stdio is spawned by the client)
// Exits 1 with the error on stderr when any step fails.
import { createMCPClient } from '@ai-sdk/mcp';
import { Experimental_StdioMCPTransport } from '@ai-sdk/mcp/mcp-stdio';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [clientKind, transportKind] = process.argv.slice(2);
const wire = [];
const CALL_TIMEOUT_MS = 90_000;

// A fetch that records each POST before passing it on.
async function recordingFetch(input, init = {}) {
  const headers = new Headers(init.headers || {});
  let method = null;
  if (init.method === 'POST' && typeof init.body === 'string') {
    try {
      method = JSON.parse(init.body).method ?? null;
    } catch {
      method = '(unparsable)';
    }
  }
  const res = await fetch(input, init);
  if (init.method === 'POST')
    wire.push({
      method,
      protocolVersion: headers.get('mcp-protocol-version'),
      mcpMethod: headers.get('mcp-method'),
      mcpName: headers.get('mcp-name'),
      sessionId: headers.get('mcp-session-id'),
      status: res.status,
    });
  return res;
}

function stdioParams() {
  return {
    command: process.env.E2E_BIN,
    args: ['serve', '--stdio'],
    env: JSON.parse(process.env.E2E_STDIO_ENV || '{}'),
    cwd: process.env.E2E_STDIO_CWD,
  };
}

function httpHeaders() {
  return process.env.E2E_TOKEN ? { Authorization: `Bearer ${process.env.E2E_TOKEN}` } : {};
}

// A connection with a uniform face: call(name, args) -> CallToolResult.
async function connectV2(mode) {
  const client = new Client({ name: `chat2sbx-e2e-${clientKind}`, version: '1.0.0' }, { versionNegotiation: { mode } });
  const transport =
    transportKind === 'http'
      ? new StreamableHTTPClientTransport(new URL(process.env.E2E_URL), {
          requestInit: { headers: httpHeaders() },
          fetch: recordingFetch,
        })
      : new StdioClientTransport({ ...stdioParams(), stderr: 'ignore' });
  await client.connect(transport);
  const { tools } = await client.listTools();
  return {
    era: client.getProtocolEra(),
    protocolVersion: client.getNegotiatedProtocolVersion(),
    serverName: client.getServerVersion()?.name,
    toolCount: tools.length,
    call: (name, args, onprogress) =>
      client.callTool({ name, arguments: args }, { timeout: CALL_TIMEOUT_MS, ...(onprogress ? { onprogress } : {}) }),
    progress: true,
    close: () => client.close(),
  };
}

async function connectAiSdk() {
  const transport =
    transportKind === 'http'
      ? { type: 'http', url: process.env.E2E_URL, headers: httpHeaders(), fetch: recordingFetch }
      : new Experimental_StdioMCPTransport({ ...stdioParams(), stderr: 'ignore' });
  const client = await createMCPClient({ transport, name: 'chat2sbx-e2e-ai-sdk' });
  const tools = await client.tools(); // AI SDK tool objects: { description, inputSchema, execute }
  let n = 0;
  return {
    era: client.protocolEra,
    protocolVersion: client.protocolVersion,
    serverName: client.serverInfo?.name ?? client._serverInfo?.name,
    toolCount: Object.keys(tools).length,
    call: async (name, args) => {
      if (!tools[name]) throw new Error(`the AI SDK offers no tool '${name}'`);
      return tools[name].execute(args, { toolCallId: `call-${++n}`, messages: [], abortSignal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    },
    close: () => client.close(),
  };
}

// structuredContent of a successful result, else an error naming the call.
function ok(name, res) {
  if (!res || res.isError) throw new Error(`${name} failed: ${JSON.stringify(res?.content ?? res).slice(0, 500)}`);
  if (res.structuredContent) return res.structuredContent;
  const text = (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
  return JSON.parse(text);
}

async function round(conn) {
  const steps = {};
  // The v2 client asks for progress (a progressToken): sandbox_create
  // reports its steps on the request's own stream at either generation.
  const progress = [];
  const created = ok('sandbox_create', await conn.call('sandbox_create', {}, conn.progress ? (p) => progress.push(p) : undefined));
  if (conn.progress) steps.progress = progress.map((p) => p.message ?? null);
  const id = created.sandbox_id;
  steps.sandbox_id = id;
  try {
    const bash = ok('bash', await conn.call('bash', { sandbox_id: id, command: 'echo "hello from $(uname -s)"' }));
    steps.bash = { output: bash.output, exit_code: bash.exit_code, session_id: bash.session_id };
    ok('write', await conn.call('write', { sandbox_id: id, path: 'notes/a.txt', content: 'one\ntwo\n', create_dirs: true }));
    steps.read = ok('read', await conn.call('read', { sandbox_id: id, path: 'notes/a.txt', line_numbers: false })).content;
    const patch = ['*** Begin Patch', '*** Update File: notes/a.txt', ' one', '-two', '+three', '*** End Patch'].join('\n');
    steps.apply_patch = ok('apply_patch', await conn.call('apply_patch', { sandbox_id: id, patch })).files?.length;
    steps.read_after_patch = ok('read', await conn.call('read', { sandbox_id: id, path: 'notes/a.txt', line_numbers: false })).content;
  } finally {
    const gone = await conn.call('sandbox_destroy', { sandbox_id: id });
    steps.destroyed = !gone.isError;
  }
  return steps;
}

try {
  let conn;
  if (clientKind === 'v2-auto') conn = await connectV2('auto');
  else if (clientKind === 'v2-legacy') conn = await connectV2('legacy');
  else if (clientKind === 'ai-sdk') conn = await connectAiSdk();
  else throw new Error(`unknown client '${clientKind}' (v2-auto, v2-legacy, ai-sdk)`);
  if (!['http', 'stdio'].includes(transportKind)) throw new Error(`unknown transport '${transportKind}' (http, stdio)`);
  let steps;
  try {
    steps = await round(conn);
  } finally {
    await conn.close();
  }
  const { call, close, progress, ...facts } = conn;
  process.stdout.write(`${JSON.stringify({ ...facts, steps, wire })}\n`);
} catch (e) {
  process.stderr.write(`${clientKind} over ${transportKind}: ${e?.stack || e}\nwire: ${JSON.stringify(wire)}\n`);
  process.exit(1);
}
