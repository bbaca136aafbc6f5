// Shared by the benchmark driver (run.mjs) and its runtime comparison
// (runtimes.mjs): the command line, statistics, /proc memory readings, one
// `chat2sbx serve` instance with a temporary data root, the C load client,
// the engine's container list and sandbox_create → first bash timing.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';

import { childEnv, freePort, dockerRequest, REPO_ROOT } from '../lib/server.mjs';

const argv = process.argv.slice(2);
// The value of --name on the command line, or def.
export const opt = (name, def) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1] : def;
};
export const BIN = path.resolve(opt('bin', path.join(REPO_ROOT, 'build', 'chat2sbx')));
export const LOADCLIENT = path.resolve(opt('loadclient', path.join(REPO_ROOT, 'build', 'bench', 'loadclient')));
export const OUT = path.resolve(opt('out', path.join(REPO_ROOT, 'build', 'bench', 'results.json')));
export const QUICK = process.env.BENCH_QUICK === '1';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const log = (...a) => console.error('bench:', ...a);
export const round = (x, d = 2) => (typeof x === 'number' && Number.isFinite(x) ? Number(x.toFixed(d)) : x);

export function stats(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const pick = (p) => (s.length ? s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))] : 0);
  return { n: s.length, p50_ms: round(pick(50)), p95_ms: round(pick(95)), p99_ms: round(pick(99)), max_ms: round(s[s.length - 1] ?? 0) };
}

export function rssKiB(pid, field = 'VmRSS') {
  try {
    const m = fs.readFileSync(`/proc/${pid}/status`, 'utf8').match(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
export const mib = (kib) => (kib == null ? null : round(kib / 1024, 1));

// ---- one serve instance ----

// bin: the chat2sbx to run (default --bin); the A/B mode runs a baseline
// build beside it, with CHAT2SBX_HELPER_PATH pointing at that build's helper.
export class Serve {
  constructor(name, env, { bin = BIN } = {}) {
    this.name = name;
    this.env = env;
    this.bin = bin;
  }
  async start(root) {
    this.root = path.join(root, this.name);
    this.dataRoot = path.join(this.root, 'data');
    this.home = path.join(this.root, 'home');
    await fsp.mkdir(this.home, { recursive: true });
    this.port = await freePort();
    this.url = `http://127.0.0.1:${this.port}/mcp`;
    this.db = path.join(this.dataRoot, 'state', 'chat2sbx.sqlite');
    this.stderr = path.join(this.root, 'serve.stderr.log');
    const errFd = fs.openSync(this.stderr, 'a');
    this.proc = spawn(this.bin, ['serve'], {
      cwd: this.root,
      env: childEnv(this.env, this.home, this.dataRoot, this.port),
      stdio: ['ignore', 'ignore', errFd],
    });
    fs.closeSync(errFd);
    this.exited = new Promise((r) => this.proc.once('exit', (code, signal) => r({ code, signal })));
    const deadline = Date.now() + 20_000;
    for (;;) {
      try {
        const r = await fetch(this.url, { method: 'POST', headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'ping' }) });
        if (r.status < 500) {
          // serve made its bearer token before it listened (issue 12).
          this.tokenFile = path.join(this.dataRoot, 'state', 'token');
          TOKEN_FILES.set(this.url, this.tokenFile);
          this.auth = { Authorization: `Bearer ${fs.readFileSync(this.tokenFile, 'utf8').trim()}` };
          break;
        }
      } catch {
        /* not listening yet */
      }
      if (Date.now() > deadline) throw new Error(`serve ${this.name} did not start; see ${this.stderr}`);
      await sleep(100);
    }
    return this;
  }
  rss() {
    return rssKiB(this.proc.pid);
  }
  async call(name, args, { allowError = false } = {}) {
    const res = await fetch(this.url, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', 'MCP-Protocol-Version': '2025-06-18', ...this.auth },
      body: JSON.stringify({ jsonrpc: '2.0', id: Math.floor(Math.random() * 1e9), method: 'tools/call', params: { name, arguments: args } }),
      signal: AbortSignal.timeout(120_000),
    });
    const msg = await res.json();
    if (msg.error) throw new Error(`${name}: JSON-RPC error ${msg.error.code}: ${msg.error.message}`);
    if (msg.result?.isError && !allowError) throw new Error(`${name}: ${msg.result.content?.[0]?.text}`);
    return msg.result.structuredContent ?? JSON.parse(msg.result.content[0].text);
  }
  async stop() {
    if (!this.proc || this.proc.exitCode !== null) return;
    this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 20_000);
    await this.exited;
    clearTimeout(t);
  }
}

// ---- helpers ----

// The token file of each serve's endpoint, by URL: the load client reads
// the bearer token from it.
export const TOKEN_FILES = new Map();

// The C load client's JSON (see loadclient.c). With url2 and body2 it
// alternates its calls between url and url2 and the answer's "b" holds
// url2's figures (the A/B mode).
export function loadclient({ url, body, url2, body2, threads = 1, calls, expect, warmup = 5 }) {
  const args = ['--url', url, '--body', JSON.stringify(body), '--threads', String(threads), '--calls', String(calls), '--warmup', String(warmup)];
  if (expect) args.push('--expect', expect);
  if (TOKEN_FILES.has(url)) args.push('--token-file', TOKEN_FILES.get(url));
  if (url2) {
    args.push('--url2', url2, '--body2', JSON.stringify(body2));
    if (TOKEN_FILES.has(url2)) args.push('--token-file2', TOKEN_FILES.get(url2));
  }
  const r = spawnSync(LOADCLIENT, args, { encoding: 'utf8', maxBuffer: 1 << 20 });
  if (r.status !== 0) throw new Error(`loadclient failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

export const toolBody = (name, args) => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });

export async function listContainers(label) {
  const filters = encodeURIComponent(JSON.stringify({ label: [label] }));
  const r = await dockerRequest('GET', `/containers/json?all=1&filters=${filters}`);
  return Array.isArray(r.body) ? r.body : [];
}

export const POOL_LABEL = 'org.chat2sbx.pool';
export const REGISTRY_LABEL = 'org.chat2sbx.registry';

// A function that waits (at most fillMs, and only the first time it times
// out) until srv's warm pool holds size running members no one has
// claimed, and returns their sandbox ids.
export function poolWaiter(srv, size, fillMs = 60_000) {
  let stuck = false; // a pool that never fills must not stretch the run past its bound
  return async () => {
    const deadline = Date.now() + (stuck ? 0 : fillMs);
    for (;;) {
      const list = await listContainers(`${REGISTRY_LABEL}=${srv.db}`);
      const members = new Set(list.filter((c) => c.Labels?.[POOL_LABEL] === '1' && c.State === 'running').map((c) => c.Labels['org.chat2sbx.sandbox']));
      const rows = await srv.call('sandbox_list', {});
      for (const s of rows.sandboxes || []) members.delete(s.sandbox_id); // claimed ones are user sandboxes
      // Ready: serve logs a member once its helper answered (a vm's boot).
      const logText = fs.readFileSync(srv.stderr, 'utf8');
      for (const id of [...members]) if (!logText.includes(`warm pool: sandbox ${id} ready`)) members.delete(id);
      if (members.size >= size) return members;
      if (Date.now() > deadline) {
        if (!stuck) log(`the warm pool did not fill within ${fillMs / 1000} s (${members.size} of ${size}); see ${srv.stderr}`);
        stuck = true;
        return members;
      }
      await sleep(150);
    }
  };
}

// sandbox_create → first bash `true` answer, n times (each destroyed after);
// with poolMembers, how many of them were warm pool members.
export async function createToBash(srv, n, { poolMembers } = {}) {
  const xs = [];
  let warmHits = 0;
  for (let i = 0; i < n; i++) {
    let members = null;
    if (poolMembers) members = await poolMembers(); // waits until the pool is full
    const t = performance.now();
    const c = await srv.call('sandbox_create', {});
    await srv.call('bash', { sandbox_id: c.sandbox_id, command: 'true', yield_time_ms: 10000 });
    xs.push(performance.now() - t);
    if (members?.has(c.sandbox_id)) warmHits++;
    await srv.call('sandbox_destroy', { sandbox_id: c.sandbox_id });
  }
  return { ...stats(xs), warm_hits: poolMembers ? warmHits : undefined };
}
