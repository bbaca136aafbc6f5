// Shared harness of the end-to-end suite: starts `build/chat2sbx serve` on a
// free loopback port with a fresh data root, opens official-SDK MCP clients
// against it, talks to the Docker Engine directly (so the tests check the
// engine, not what the server says about it), and removes anything a failed
// test left behind.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BIN = process.env.CHAT2SBX_BIN || path.join(REPO_ROOT, 'build', 'chat2sbx');
export const DOCKER_SOCKET =
  process.env.CHAT2SBX_DOCKER_SOCKET ||
  (process.env.DOCKER_HOST?.startsWith('unix://') ? process.env.DOCKER_HOST.slice(7) : '/var/run/docker.sock');
// Label keys the server puts on its containers (controlplane/lifecycle).
export const LABEL_SANDBOX = 'org.chat2sbx.sandbox';
export const LABEL_WORKSPACE = 'org.chat2sbx.workspace';
export const LABEL_REGISTRY = 'org.chat2sbx.registry'; // the database path, under our data root

export const SANDBOX_ID_RE = /^sbx_[a-z2-7]{20}$/;
export const WORKSPACE_ID_RE = /^ws_[a-z2-7]{20}$/;
export const SESSION_ID_RE = /^bash_[a-z2-7]{20}$/;

// Generous per-request timeout for calls that start containers.
export const CREATE_TIMEOUT = { timeout: 90_000 };
export const CALL_TIMEOUT = { timeout: 75_000 };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The bearer token of each serve's TCP endpoint, by URL (issue 12): every
// request to it must carry "Authorization: Bearer <token>". A serve started
// with CHAT2SBX_MCP_TOKEN=off has none.
const TOKENS = new Map();

// The Authorization header for requests to url ({} when it needs none).
export function authHeaders(url) {
  const token = TOKENS.get(String(url));
  return token ? { Authorization: `Bearer ${token}` } : {};
}

// A free TCP port on the loopback interface: bind 0, read it, release it.
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

function canConnect(port) {
  return new Promise((resolve) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    const done = (ok) => {
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(1000, () => done(false));
    sock.once('connect', () => done(true));
    sock.once('error', () => done(false));
  });
}

function tail(file, lines = 60) {
  try {
    const text = fs.readFileSync(file, 'utf8');
    return text.split('\n').slice(-lines).join('\n');
  } catch (e) {
    return `(cannot read ${file}: ${e.message})`;
  }
}

// Environment for the child: the caller's PATH and locale, but no CHAT2SBX_*
// setting of the operator except the few that choose the engine and image,
// and a private HOME so ~/.chat2sbx/config.yaml of the machine is not read.
export function childEnv(extra, home, dataRoot, port) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (k.startsWith('CHAT2SBX_')) continue;
    env[k] = v;
  }
  for (const k of ['CHAT2SBX_RUNTIME', 'CHAT2SBX_DOCKER_SOCKET', 'CHAT2SBX_TEMPLATE_IMAGE', 'CHAT2SBX_HELPER_PATH']) {
    if (process.env[k]) env[k] = process.env[k];
  }
  Object.assign(env, {
    HOME: home,
    CHAT2SBX_DATA_ROOT: dataRoot,
    CHAT2SBX_ENABLE_TUNNEL: '0',
    // Scenarios count the engine's containers; a test that wants the warm
    // pool (15) asks for it.
    CHAT2SBX_WARM_POOL: '0',
    CHAT2SBX_PORT: String(port),
    CHAT2SBX_HOST: '127.0.0.1',
    CHAT2SBX_ALLOWED_HOST_ROOTS: path.join(home, 'repositories'),
  });
  Object.assign(env, extra || {});
  return env;
}

export class Server {
  constructor() {
    this.proc = null;
    this.port = 0;
    this.url = '';
    this.root = '';
    this.dataRoot = '';
    this.stderrPath = '';
    this.stdoutPath = '';
    this.exit = null; // {code, signal} once exited
    this.sandboxIds = new Set(); // every sandbox id seen by this run
    this.clients = new Set();
  }

  // Starts the server; resolves once its port accepts connections.
  // A second start() (after the server died) reuses the data root, port and
  // log files, as a restart of the service would. dataRoot: the first
  // start's data root somewhere of the test's choosing (a small filesystem
  // it mounted) instead of <root>/data.
  async start({ env = {}, readyTimeoutMs = 20_000, dataRoot } = {}) {
    if (!fs.existsSync(BIN)) throw new Error(`${BIN} does not exist; run 'make all' first`);
    this.env = env;
    if (!this.root) {
      this.root = await fsp.mkdtemp(path.join(os.tmpdir(), 'chat2sbx-e2e-'));
      this.dataRoot = dataRoot || path.join(this.root, 'data');
      await fsp.mkdir(path.join(this.root, 'home'), { recursive: true });
      this.stderrPath = path.join(this.root, 'serve.stderr.log');
      this.stdoutPath = path.join(this.root, 'serve.stdout.log');
      this.port = await freePort();
      this.url = `http://127.0.0.1:${this.port}/mcp`;
    }
    const home = path.join(this.root, 'home');
    this.exit = null;
    const errFd = fs.openSync(this.stderrPath, 'a');
    const outFd = fs.openSync(this.stdoutPath, 'a');
    try {
      // cwd is the private root, so a .env of the repository is not read.
      this.proc = spawn(BIN, ['serve'], {
        cwd: this.root,
        env: childEnv(env, home, this.dataRoot, this.port),
        stdio: ['ignore', outFd, errFd],
      });
    } finally {
      fs.closeSync(errFd);
      fs.closeSync(outFd);
    }
    this.exited = new Promise((resolve) => {
      this.proc.once('exit', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
      this.proc.once('error', (e) => {
        this.exit = { code: null, signal: null, error: e };
        resolve(this.exit);
      });
    });
    const deadline = Date.now() + readyTimeoutMs;
    for (;;) {
      if (this.exit) {
        throw new Error(
          `chat2sbx serve exited before listening (code ${this.exit.code}, signal ${this.exit.signal}` +
            `${this.exit.error ? `, ${this.exit.error.message}` : ''}); stderr (${this.stderrPath}):\n` +
            tail(this.stderrPath),
        );
      }
      if (await canConnect(this.port)) break;
      if (Date.now() > deadline) {
        this.proc.kill('SIGKILL');
        throw new Error(
          `chat2sbx serve did not accept connections on 127.0.0.1:${this.port} within ${readyTimeoutMs} ms; ` +
            `stderr (${this.stderrPath}):\n${tail(this.stderrPath)}`,
        );
      }
      await sleep(100);
    }
    // serve made (or kept) its token before it listened.
    this.socketPath = path.join(this.dataRoot, 'state', 'mcp.sock');
    const tokenOff = /^(off|0|false|no)$/i.test(String(env.CHAT2SBX_MCP_TOKEN ?? ''));
    this.token = tokenOff ? null : fs.readFileSync(path.join(this.dataRoot, 'state', 'token'), 'utf8').trim();
    if (this.token) TOKENS.set(this.url, this.token);
    else TOKENS.delete(this.url);
    return this;
  }

  // Headers that authenticate a raw request to this server's TCP endpoint.
  authHeaders() {
    return authHeaders(this.url);
  }

  alive() {
    return this.proc && !this.exit;
  }

  // Alive and accepting connections; a process that no longer accepts is
  // given a moment to report its exit.
  async healthy() {
    if (!this.alive()) return false;
    if (await canConnect(this.port)) return true;
    let timer;
    await Promise.race([this.exited, new Promise((r) => (timer = setTimeout(r, 3000)))]);
    clearTimeout(timer);
    return this.alive() && (await canConnect(this.port));
  }

  stderrTail(lines = 60) {
    return tail(this.stderrPath, lines);
  }

  // Opens an SDK client (initialize + initialized over Streamable HTTP).
  // listTools: also call tools/list, which makes the SDK validate every
  // later structuredContent against the tool's outputSchema.
  async client({ listTools = false, name = 'chat2sbx-e2e' } = {}) {
    const c = await connectClient(this.url, { listTools, name });
    this.clients.add(c);
    return c;
  }

  tools(client) {
    return new Tools(client, this);
  }

  // SIGTERM, wait (bounded), then SIGKILL. Returns what happened so a test
  // hook can judge it: {wasAlive, code, signal, killed}.
  async stop({ graceMs = 10_000 } = {}) {
    for (const c of this.clients) {
      try {
        await c.close();
      } catch {
        /* the server may be gone already */
      }
    }
    this.clients.clear();
    if (!this.proc) return { wasAlive: false };
    const wasAlive = !this.exit;
    let killed = false;
    if (wasAlive) {
      this.proc.kill('SIGTERM');
      let timer;
      const res = await Promise.race([
        this.exited,
        new Promise((r) => {
          timer = setTimeout(() => r(null), graceMs);
        }),
      ]);
      clearTimeout(timer);
      if (!res) {
        killed = true;
        this.proc.kill('SIGKILL');
        await this.exited;
      }
    }
    return { wasAlive, killed, ...this.exit };
  }

  // Removes containers this run created and did not destroy (a test that
  // failed midway, or a server that died): those named or labelled with a
  // sandbox id seen in this run, or mounting anything under our data root.
  async cleanupContainers() {
    const removed = [];
    let list;
    try {
      list = await dockerRequest('GET', '/containers/json?all=1');
    } catch (e) {
      console.log(`e2e cleanup: cannot list containers: ${e.message}`);
      return removed;
    }
    if (!Array.isArray(list?.body)) return removed;
    for (const c of list.body) {
      const names = (c.Names || []).map((n) => n.replace(/^\//, ''));
      const labels = c.Labels || {};
      const ours =
        names.some((n) => this.sandboxIds.has(n)) ||
        Object.values(labels).some((v) => this.sandboxIds.has(v) || (this.dataRoot && String(v).startsWith(this.dataRoot))) ||
        (c.Mounts || []).some((m) => this.dataRoot && String(m.Source || '').startsWith(this.dataRoot));
      if (!ours) continue;
      try {
        await dockerRequest('DELETE', `/containers/${c.Id}?force=1&v=1`);
        removed.push(names[0] || c.Id);
      } catch (e) {
        console.log(`e2e cleanup: cannot remove ${names[0] || c.Id}: ${e.message}`);
      }
    }
    if (removed.length) console.log(`e2e cleanup: removed leftover containers: ${removed.join(', ')}`);
    return removed;
  }

  async removeRoot() {
    if (this.root) await fsp.rm(this.root, { recursive: true, force: true });
  }
}

export async function connectClient(url, { listTools = false, name = 'chat2sbx-e2e', headers } = {}) {
  const client = new Client({ name, version: '0.1.0' }, { capabilities: {} });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: headers ?? authHeaders(url) },
  });
  await client.connect(transport, { timeout: 20_000 });
  if (listTools) await client.listTools();
  return client;
}

// Text of a tool result's first content item.
export function resultText(res) {
  const c = res?.content?.find?.((x) => x.type === 'text');
  return c ? c.text : '';
}

// Thin wrapper over client.callTool that remembers sandbox ids (for cleanup)
// and turns an unexpected isError into a readable assertion failure.
export class Tools {
  constructor(client, server) {
    this.client = client;
    this.server = server;
  }

  async call(name, args = {}, opts = CALL_TIMEOUT) {
    let res;
    try {
      res = await this.client.callTool({ name, arguments: args }, undefined, opts);
    } catch (e) {
      if (e instanceof McpError) throw e;
      // A transport failure: say which call, and whether the server died.
      let state = '';
      if (this.server) {
        const ok = await this.server.healthy();
        state = ok
          ? ' (the server is still running)'
          : ` (chat2sbx serve is gone: ${JSON.stringify(this.server.exit)}; stderr ${this.server.stderrPath})`;
      }
      const err = new Error(
        `${name}(${JSON.stringify(args).slice(0, 200)}) failed in transport: ${e.message}` +
          `${e.cause ? ` (${e.cause.message})` : ''}${state}`,
      );
      err.cause = e;
      throw err;
    }
    const sid = res?.structuredContent?.sandbox_id;
    if (typeof sid === 'string') this.server?.sandboxIds.add(sid);
    return res;
  }

  // Calls a tool that must succeed; returns its structured result.
  async ok(name, args = {}, opts = CALL_TIMEOUT) {
    const res = await this.call(name, args, opts);
    if (res.isError) {
      throw new Error(`${name}(${JSON.stringify(args)}) returned isError: ${resultText(res)}`);
    }
    if (res.structuredContent && typeof res.structuredContent === 'object') return res.structuredContent;
    const text = resultText(res);
    try {
      return JSON.parse(text);
    } catch {
      throw new Error(`${name} returned no structuredContent and its text is not JSON: ${text.slice(0, 300)}`);
    }
  }

  async create(args = {}) {
    const sc = await this.ok('sandbox_create', args, CREATE_TIMEOUT);
    if (sc.sandbox_id) this.server?.sandboxIds.add(sc.sandbox_id);
    return sc;
  }

  // Destroys, ignoring failures (for cleanup paths).
  async destroyQuietly(sandboxId) {
    if (!sandboxId) return;
    try {
      await this.call('sandbox_destroy', { sandbox_id: sandboxId }, CREATE_TIMEOUT);
    } catch {
      /* cleanupContainers is the last resort */
    }
  }
}

// ---- Docker Engine REST over the Unix socket (node's http, no client) ----

// socketPath: another engine's socket (a test's own dockerd); the shared
// engine's by default.
export function dockerRequest(method, urlPath, body, socketPath = DOCKER_SOCKET) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        socketPath,
        method,
        path: urlPath,
        headers: { Host: 'localhost', ...(data ? { 'Content-Type': 'application/json', 'Content-Length': data.length } : {}) },
        timeout: 30_000,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed = text;
          try {
            parsed = text ? JSON.parse(text) : null;
          } catch {
            /* keep text */
          }
          if (res.statusCode >= 400 && res.statusCode !== 404) {
            reject(new Error(`engine ${method} ${urlPath}: HTTP ${res.statusCode}: ${parsed?.message ?? text}`));
            return;
          }
          resolve({ status: res.statusCode, body: parsed });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`engine ${method} ${urlPath}: timed out`)));
    req.on('error', reject);
    if (data) req.write(data);
    req.end();
  });
}

// GET /containers/{id}/json; null when the engine answers 404.
export async function dockerInspect(nameOrId, socketPath = DOCKER_SOCKET) {
  const r = await dockerRequest('GET', `/containers/${encodeURIComponent(nameOrId)}/json`, undefined, socketPath);
  return r.status === 404 ? null : r.body;
}

// ---- raw HTTP (for what the SDK will not send) ----

// POSTs a body to the MCP endpoint and parses the JSON-RPC answer, whether it
// came as application/json or as an SSE stream. Returns {status, headers,
// text, json} (json null when the body is not JSON-RPC). The server's
// bearer token is sent unless headers sets Authorization (null: none).
export async function rawPost(url, body, headers = {}) {
  const h = {
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    ...authHeaders(url),
    ...headers,
  };
  for (const k of Object.keys(h)) if (h[k] === null || h[k] === undefined) delete h[k];
  const res = await fetch(url, {
    method: 'POST',
    headers: h,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let json = null;
  const ct = res.headers.get('content-type') || '';
  if (ct.includes('text/event-stream')) {
    const msgs = [];
    for (const block of text.split(/\r?\n\r?\n/)) {
      const data = block
        .split(/\r?\n/)
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).replace(/^ /, ''))
        .join('\n');
      if (!data) continue;
      try {
        msgs.push(JSON.parse(data));
      } catch {
        /* ignore */
      }
    }
    json = msgs.find((m) => 'result' in m || 'error' in m) || msgs[msgs.length - 1] || null;
  } else if (text) {
    try {
      json = JSON.parse(text);
    } catch {
      json = null;
    }
  }
  return { status: res.status, headers: res.headers, text, json };
}

// ---- measurements for the lead ----

export function measure(fields) {
  const line = `MEASURE ${Object.entries(fields)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ')}`;
  console.log(line);
  if (process.env.E2E_MEASURE_FILE) fs.appendFileSync(process.env.E2E_MEASURE_FILE, line + '\n');
}

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// ---- per-file fixture ----

// One server per test file. Returns a context whose `test` marks the file as
// failed when a test throws, so the server's stderr is printed and its data
// root kept for inspection; at the end the server is stopped, leftovers are
// removed from the engine, and a server that died or would not stop fails the
// file.
export function useServer({ env } = {}) {
  const ctx = { srv: new Server(), failed: false, cleanups: [], crashes: [], generation: 0 };
  // fn runs at the end of the file, before the server stops (for example to
  // destroy a sandbox a failed test left running).
  ctx.onCleanup = (fn) => ctx.cleanups.push(fn);
  // A Tools over one client shared by the tests of a file; a new client after
  // the server was restarted (its sessions are gone).
  ctx.tools = async () => {
    if (!ctx.shared || ctx.shared.generation !== ctx.generation) {
      ctx.shared = { generation: ctx.generation, tools: ctx.srv.tools(await ctx.srv.client()) };
    }
    return ctx.shared.tools;
  };
  // Stop serve with signal (SIGTERM: a clean stop; SIGKILL: a crash) and
  // start it again on the same data root, as a restart of the service would;
  // the next ctx.tools() connects a new client.
  ctx.restart = async (signal = 'SIGKILL') => {
    const srv = ctx.srv;
    for (const c of srv.clients) await c.close().catch(() => {});
    srv.clients.clear();
    srv.proc.kill(signal);
    await srv.exited;
    await srv.start({ env });
    ctx.generation++; // the shared client belonged to the old process
  };
  // A clean stop (SIGTERM, when it still runs), then a start with another
  // environment (moved clock, smaller caps, ...) on the same data root.
  ctx.restartWith = async (newEnv) => {
    const srv = ctx.srv;
    for (const c of srv.clients) await c.close().catch(() => {});
    srv.clients.clear();
    if (srv.alive()) {
      srv.proc.kill('SIGTERM');
      await srv.exited;
    }
    await srv.start({ env: newEnv });
    ctx.generation++;
  };
  before(async () => {
    try {
      await ctx.srv.start({ env });
      ctx.started = true;
    } catch (e) {
      ctx.failed = true;
      throw e;
    }
  });
  // Stops everything once; returns the problems seen with the server itself.
  const finish = async () => {
    if (ctx.finished) return ctx.finished;
    const srv = ctx.srv;
    for (const fn of ctx.cleanups) {
      try {
        await fn();
      } catch (e) {
        console.log(`e2e cleanup: ${e.message}`);
      }
    }
    const st = await srv.stop();
    await srv.cleanupContainers();
    const problems = ctx.crashes.map(
      (x) => `chat2sbx serve died during a test (exit code ${x.code}, signal ${x.signal}); stderr: ${srv.stderrPath}`,
    );
    if (!ctx.started) {
      // start() already failed with the reason
    } else if (st.wasAlive === false || (st.signal && st.signal !== 'SIGTERM')) {
      problems.push(
        `chat2sbx serve died during the tests (exit code ${st.code}, signal ${st.signal}); ` +
          `the failing test above shows the call it died on; stderr: ${srv.stderrPath}`,
      );
    } else if (st.killed) {
      problems.push('chat2sbx serve did not exit within 10 s of SIGTERM (SIGKILL sent)');
    } else if (!(st.code === 0 || st.signal === 'SIGTERM')) {
      problems.push(`chat2sbx serve exited after SIGTERM with code ${st.code}, signal ${st.signal}`);
    }
    if (ctx.failed || problems.length) {
      console.log(`---- chat2sbx serve stderr (last lines; full log ${srv.stderrPath}) ----\n${srv.stderrTail(80)}\n----`);
      console.log(`e2e: data root kept for inspection: ${srv.root}`);
    } else if (!process.env.E2E_KEEP) {
      await srv.removeRoot();
    }
    ctx.finished = problems;
    return problems;
  };
  // The last test of every file (call ctx.finish() at the end of the file):
  // the server never died and stops cleanly on SIGTERM.
  ctx.finish = () =>
    test('chat2sbx serve stayed up through the file and stops cleanly on SIGTERM', async () => {
      if (!ctx.started) return; // start() already failed every test with the reason
      ctx.finishReported = true;
      const problems = await finish();
      assert.deepEqual(problems, [], problems.join('; '));
    });
  // Safety net when a file does not reach ctx.finish (or forgot it).
  after(async () => {
    const problems = await finish();
    if (problems.length && !ctx.finishReported) console.log(`e2e: ${problems.join('; ')}`);
  });
  ctx.test = (name, ...rest) => {
    const fn = rest.pop();
    const opts = rest[0] || {};
    return test(name, opts, async (t) => {
      try {
        if (ctx.started && !(await ctx.srv.healthy())) {
          // An earlier test crashed the server: note it, start it again so
          // this test still says something.
          if (ctx.srv.alive()) {
            ctx.srv.proc.kill('SIGKILL'); // alive but not accepting connections
            await ctx.srv.exited;
          }
          ctx.crashes.push(ctx.srv.exit);
          for (const c of ctx.srv.clients) c.close().catch(() => {});
          ctx.srv.clients.clear();
          console.log(`e2e: chat2sbx serve had died (${JSON.stringify(ctx.srv.exit)}); restarting it for "${name}"`);
          fs.appendFileSync(ctx.srv.stderrPath, `---- e2e: restarting serve for "${name}" ----\n`);
          await ctx.srv.start({ env });
          ctx.generation++;
        }
        return await fn(t);
      } catch (e) {
        ctx.failed = true;
        throw e;
      }
    });
  };
  return ctx;
}
