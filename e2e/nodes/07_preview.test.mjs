// 07 (make test-nodes): a preview of a sandbox on another node (issue 28,
// "Previews across nodes"; lifecycle/expose_relay.c). serve listens on
// CHAT2SBX_EXPOSE_HOST and relays each connection through the node's engine
// (an exec of the helper's connect mode over mutual TLS): a dev server
// listening only on the sandbox's own 127.0.0.1 answers on the URL from
// this machine, bytes arrive whole (a 3 MiB random file, by its sha256),
// ten fetches at once all answer, nothing is published on the node's engine
// and no forwarder exists on either engine; the URL answers again after a
// restart of serve; a hostile sandbox that writes endlessly to the relay
// does not grow serve; a connection stuck on a sandbox that reads nothing
// does not hold serve's stop; destroy closes the port. Needs root.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';

import { runCli } from '../lib/clones.mjs';
import { useNodeEngine } from '../lib/nodes.mjs';
import { refused, startDevServer } from '../lib/preview.mjs';
import { dockerInspect, dockerRequest, useServer } from '../lib/server.mjs';

const N = process.env.E2E_PREVIEW_NODE_NUMBER || '67';
const PORT = 8000;
const node = useNodeEngine(N);

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'runc' } });
let id = null;
let url = null;

ctx.onCleanup(async () => {
  if (id) await (await ctx.tools()).destroyQuietly(id);
});

// GET url; resolves {status, body (Buffer)}.
function fetchUrl(u, timeoutMs = 20_000) {
  return new Promise((resolve, reject) => {
    const req = http.get(u, { timeout: timeoutMs, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks) }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${u}: timed out`)));
    req.on('error', reject);
  });
}

ctx.test('a dev server in a sandbox on a node answers on the URL from this machine, bytes whole', async () => {
  const add = runCli(ctx.srv, ['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  assert.equal(add.status, 0, add.desc);
  const tools = await ctx.tools();
  const sbx = await tools.create({ node: 'n1', memory: '256m' });
  id = sbx.sandbox_id;
  assert.equal(sbx.node, 'n1');
  const made = await tools.ok('bash', {
    sandbox_id: id,
    command: 'head -c 3145728 /dev/urandom > /workspace/blob.bin && sha256sum /workspace/blob.bin | cut -d" " -f1',
  });
  assert.equal(made.exit_code, 0, JSON.stringify(made));
  const sum = made.output.trim();
  await startDevServer(tools, id, PORT, '127.0.0.1');

  const x = await tools.ok('sandbox_expose', { sandbox_id: id, port: PORT });
  assert.equal(x.created, true);
  assert.equal(x.host, '127.0.0.1');
  assert.equal(x.url, `http://127.0.0.1:${x.host_port}/`);
  url = x.url;

  const page = await fetchUrl(url);
  assert.equal(page.status, 200, page.body.toString().slice(0, 300));
  assert.match(page.body.toString(), /blob\.bin/);
  const blob = await fetchUrl(`${url}blob.bin`);
  assert.equal(blob.status, 200);
  assert.equal(blob.body.length, 3145728);
  assert.equal(crypto.createHash('sha256').update(blob.body).digest('hex'), sum, 'the bytes arrive whole');

  const many = await Promise.all(Array.from({ length: 10 }, () => fetchUrl(url)));
  for (const r of many) assert.equal(r.status, 200);

  const again = await tools.ok('sandbox_expose', { sandbox_id: id, port: PORT });
  assert.deepEqual([again.url, again.created], [url, false]);
  const got = await tools.ok('sandbox_get', { sandbox_id: id });
  assert.deepEqual(got.exposures?.map((e) => [e.port, e.url]), [[PORT, url]]);

  // Nothing is published on the node, and no forwarder exists anywhere.
  const info = await dockerInspect(id, node.SOCK);
  assert.deepEqual(info.HostConfig?.PortBindings || {}, {}, JSON.stringify(info.HostConfig?.PortBindings));
  for (const sock of [undefined, node.SOCK]) {
    const f = encodeURIComponent(JSON.stringify({ label: [`org.chat2sbx.expose.sandbox=${id}`] }));
    const cs = await dockerRequest('GET', `/containers/json?all=1&filters=${f}`, undefined, sock);
    assert.deepEqual(cs.body, [], `no forwarder on ${sock || 'this machine'}`);
  }
});

ctx.test('the URL answers again after serve restarts', async () => {
  await ctx.restart('SIGTERM');
  const page = await fetchUrl(url);
  assert.equal(page.status, 200);
});

ctx.test('a sandbox that writes endlessly to a preview connection does not grow serve', async () => {
  const tools = await ctx.tools();
  // A server on another port that answers every connection with endless bytes.
  const script = [
    'import socket',
    's = socket.socket()',
    's.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
    "s.bind(('127.0.0.1', 8001))",
    's.listen()',
    'while True:',
    '    c, _ = s.accept()',
    '    try:',
    "        while True: c.sendall(b'x' * 65536)",
    '    except Exception:',
    '        c.close()',
    '',
  ].join('\n');
  await tools.ok('write', { sandbox_id: id, path: '/tmp/flood.py', content: script });
  const flood = await tools.ok('bash', { sandbox_id: id, command: 'exec python3 /tmp/flood.py', yield_time_ms: 500 });
  assert.equal(flood.status, 'running', JSON.stringify(flood));
  const x = await tools.ok('sandbox_expose', { sandbox_id: id, port: 8001 });
  const rss = () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${ctx.srv.proc.pid}/status`, 'utf8'))[1]);
  const before = rss();
  // A client that connects and never reads: the relay must wait, not buffer.
  const s = net.connect({ host: '127.0.0.1', port: x.host_port });
  await new Promise((r) => s.once('connect', r));
  s.pause();
  await new Promise((r) => setTimeout(r, 4000));
  const during = rss();
  s.destroy();
  assert.ok(during - before < 16 * 1024, `serve grew ${during - before} KiB while a sandbox flooded a paused client`);
  // serve still answers, and the other preview still works.
  const page = await fetchUrl(url);
  assert.equal(page.status, 200);
});

ctx.test('a connection to a sandbox that reads nothing does not hold serve\'s stop', async () => {
  const tools = await ctx.tools();
  // A server that accepts and never reads: the relay's upward buffer fills
  // and its exec stream stops taking bytes; the person's side goes quiet.
  const script = [
    'import socket, time',
    's = socket.socket()',
    's.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)',
    "s.bind(('127.0.0.1', 8002))",
    's.listen()',
    'held = []',
    'while True:',
    '    c, _ = s.accept()',
    '    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)',
    '    held.append(c)',
    '',
  ].join('\n');
  await tools.ok('write', { sandbox_id: id, path: '/tmp/deaf.py', content: script });
  const deaf = await tools.ok('bash', { sandbox_id: id, command: 'exec python3 /tmp/deaf.py', yield_time_ms: 500 });
  assert.equal(deaf.status, 'running', JSON.stringify(deaf));
  const x = await tools.ok('sandbox_expose', { sandbox_id: id, port: 8002 });
  const s = net.connect({ host: '127.0.0.1', port: x.host_port });
  await new Promise((r) => s.once('connect', r));
  const closed = new Promise((r) => s.once('close', r));
  s.on('error', () => {});
  s.write(Buffer.alloc(64 * 1024 * 1024, 0x61)); // far more than every buffer on the way
  await new Promise((r) => setTimeout(r, 3000));
  // serve's stop cuts the stuck connection at once (it used to wait 25 s
  // for it, then free what its thread still used).
  const t0 = Date.now();
  await ctx.restart('SIGTERM');
  const took = Date.now() - t0;
  await closed;
  assert.ok(took < 15_000, `serve's restart took ${took} ms with a stuck preview connection`);
  const page = await fetchUrl(url);
  assert.equal(page.status, 200);
});

ctx.test('destroy closes the preview port', async () => {
  const tools = await ctx.tools();
  const port = Number(new URL(url).port);
  await tools.ok('sandbox_destroy', { sandbox_id: id });
  id = null;
  assert.equal(await refused('127.0.0.1', port), true, 'the port still accepts after destroy');
});
