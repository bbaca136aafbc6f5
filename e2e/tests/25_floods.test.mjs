// e2e 25: floods and lenient parsing cannot hurt serve (issue 13). A 4 000
// message batch is refused before it is run and serve stays small; batches
// are refused for the revisions that removed them; a connection that
// trickles its headers is closed at the deadline; 200 idle connections do
// not keep a real client out; names with a NUL, duplicate keys, NaN and
// integers past int64 are refused; a large id comes back exactly.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';

import { rawPost, useServer } from '../lib/server.mjs';

const ctx = useServer();

function rssMiB(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(m[1]) / 1024;
}

const pings = (n) => Array.from({ length: n }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }));

ctx.test('a 4000-message batch is refused before anything runs, and serve stays under 100 MiB', async () => {
  const before = rssMiB(ctx.srv.proc.pid);
  const lists = Array.from({ length: 4000 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/list' }));
  const t0 = Date.now();
  const r = await rawPost(ctx.srv.url, lists, { 'MCP-Protocol-Version': '2025-03-26' });
  assert.equal(r.status, 400, r.text.slice(0, 300));
  assert.equal(r.json.error.code, -32600);
  assert.match(r.json.error.message, /at most 32 messages and this one holds 4000/);
  assert.ok(Date.now() - t0 < 5000, 'refused at once');
  const after = rssMiB(ctx.srv.proc.pid);
  assert.ok(after < 100, `serve's RSS is ${after} MiB after the batch (was ${before})`);

  // 32 are answered, in order.
  const ok = await rawPost(ctx.srv.url, pings(32), { 'MCP-Protocol-Version': '2025-03-26' });
  assert.equal(ok.status, 200);
  const arr = JSON.parse(ok.text);
  assert.equal(arr.length, 32);
  assert.deepEqual(arr.map((m) => m.id), [...Array(32).keys()]);
});

ctx.test('batches are refused for 2025-06-18 and 2025-11-25, which removed them', async () => {
  for (const v of ['2025-06-18', '2025-11-25']) {
    const r = await rawPost(ctx.srv.url, pings(2), { 'MCP-Protocol-Version': v });
    assert.equal(r.status, 400, v);
    assert.match(r.json.error.message, new RegExp(`not part of MCP ${v}`));
  }
});

ctx.test('names with a NUL, duplicate keys, NaN and integers past int64 are refused; a large id is exact', async () => {
  const bash = await rawPost(
    ctx.srv.url,
    '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"sandbox_list\\u0000x","arguments":{}}}',
  );
  assert.equal(bash.json.error?.code, -32602, bash.text);
  assert.match(bash.json.error.message, /without NUL/);

  const method = await rawPost(ctx.srv.url, '{"jsonrpc":"2.0","id":2,"method":"ping\\u0000x"}');
  assert.equal(method.json.error?.code, -32600, method.text);

  const key = await rawPost(
    ctx.srv.url,
    '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"sandbox_get","arguments":{"sandbox\\u0000_id":"x"}}}',
  );
  assert.equal(key.status, 400);
  assert.equal(key.json.error.code, -32700);
  assert.match(key.json.error.message, /contains a NUL/);

  const dup = await rawPost(
    ctx.srv.url,
    '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"sandbox_list","arguments":{},"name":"bash"}}',
  );
  assert.equal(dup.status, 400);
  assert.match(dup.json.error.message, /the key 'name' appears twice/);

  const nan = await rawPost(ctx.srv.url, '{"jsonrpc":"2.0","id":NaN,"method":"ping"}');
  assert.equal(nan.status, 400);
  assert.match(nan.json.error.message, /NaN is not JSON/);
  assert.ok(!/NaN[,}]/.test(nan.text.replace(/"[^"]*"/g, '')), 'the answer is valid JSON');

  const big = await rawPost(ctx.srv.url, '{"jsonrpc":"2.0","id":99999999999999999999,"method":"ping"}');
  assert.equal(big.status, 400);
  assert.match(big.json.error.message, /outside the 64-bit range/);

  const exact = await rawPost(ctx.srv.url, '{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}');
  assert.equal(exact.status, 200);
  assert.match(exact.text, /"id":9223372036854775807[,}]/);
});

// Opens a TCP connection to the server; resolves the socket once connected.
function open(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => resolve(s));
    s.on('error', reject);
  });
}

ctx.test('a connection that trickles its headers is closed at the 10 s deadline', async () => {
  const s = await open(ctx.srv.port);
  const closed = new Promise((resolve) => s.once('close', () => resolve(Date.now())));
  s.on('error', () => {});
  const start = Date.now();
  s.write('POST /mcp HTTP/1.1\r\nHost: localhost\r\n');
  const timer = setInterval(() => s.writable && s.write('X'), 2000); // never idle, never complete
  const at = await Promise.race([closed, new Promise((r) => setTimeout(() => r(null), 20_000))]);
  clearInterval(timer);
  s.destroy();
  assert.ok(at, 'still open after 20 s');
  const took = at - start;
  assert.ok(took >= 9000 && took < 13_000, `closed after ${took} ms (deadline 10 s)`);
});

ctx.test('200 idle connections do not keep a client that sends its request out', async () => {
  const socks = [];
  for (let i = 0; i < 200; i++) {
    const s = await open(ctx.srv.port);
    s.on('error', () => {});
    socks.push(s);
  }
  try {
    const t0 = Date.now();
    const r = await rawPost(ctx.srv.url, { jsonrpc: '2.0', id: 1, method: 'ping' });
    assert.equal(r.status, 200);
    assert.ok(Date.now() - t0 < 5000);
    const tools = await ctx.tools();
    const list = await tools.ok('sandbox_list', {});
    assert.ok(Array.isArray(list.sandboxes));
  } finally {
    for (const s of socks) s.destroy();
  }
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  assert.match(log, /connections were open without sending a request; closed the oldest/);
});

ctx.finish();
