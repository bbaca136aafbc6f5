// The benchmark driver behind `make bench` (issue 8; README "Performance").
// Starts `chat2sbx serve` (tunnel off, temporary data root, free loopback
// port) and measures, in one run and side by side with the engine's own
// baselines on the same machine:
//   1. tool-call round trip (read of a 1 KiB file, bash `true`) against
//      `docker exec` (the docker CLI) on the same container;
//   2. sandbox_create → first bash answer, cold and from the warm pool,
//      against raw engine create+start (REST API via curl --unix-socket);
//   3. read throughput at 1, 4, 16 and 64 concurrent clients;
//   4. memory: helper RSS, control plane RSS idle / 50 sandboxes / 10 000 calls;
//   5. streaming: a bash printing 100 MB, polled until exited, with the
//      control plane's peak RSS;
//   6. the runtimes side by side, runc and vm (runtimes.mjs): create → first
//      bash cold and warm, round trips, file reads and git status inside,
//      QEMU's memory, image size; the vm column only where its image is built.
//   7. with --baseline <commit>, the A/B comparison (ab.mjs): that commit
//      built from git and served beside this build, calls alternated.
// Load comes from e2e/bench/loadclient (C, libcurl), so the client is not the
// bottleneck. Writes a JSON file (--out), prints markdown tables with each
// row's target (issue 27's where it set one) and the machine's load, and
// exits 1 when a target was missed (after writing and printing). Sized for
// 2 cores; removes every container it made.
//
// usage: node e2e/bench/run.mjs --bin build/chat2sbx --loadclient build/bench/loadclient
//                               [--out build/bench/results.json] [--vm auto|only|off]
//                               [--baseline COMMIT]
// --vm: auto (default) adds the vm column when chat2sbx-vm is built; only
// runs just the runtime comparison (6); off leaves the vm column out.
// --baseline (or BENCH_BASELINE): the A/B comparison plus the measurements
// issue 27 sets targets for (1, warm create, 3, 4); not the cold create,
// streaming or the runtimes.
// Environment: BENCH_QUICK=1 (smaller counts, for a smoke run),
// BENCH_NO_FAIL=1 (a missed target is a warning, exit 0), BENCH_AB_ONLY=1
// (with a baseline: the A/B comparison only).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

import { dockerRequest, DOCKER_SOCKET, REPO_ROOT } from '../lib/server.mjs';
import {
  BIN,
  createToBash,
  LOADCLIENT,
  listContainers,
  loadclient,
  log,
  mib,
  opt,
  OUT,
  poolWaiter,
  QUICK,
  REGISTRY_LABEL,
  round,
  rssKiB,
  Serve,
  sleep,
  stats,
  toolBody,
} from './common.mjs';
import { AB_SERVES, abComparison, abRows, abTable, buildBaseline } from './ab.mjs';
import { RUNTIME_SERVES, runtimeComparison, runtimeTable, VM_MODES } from './runtimes.mjs';

const N = {
  roundTrip: QUICK ? 100 : 500,
  dockerExec: QUICK ? 10 : 60,
  creates: QUICK ? 4 : 20,
  pool: 2,
  throughput: { 1: QUICK ? 300 : 1500, 4: QUICK ? 600 : 3000, 16: QUICK ? 2000 : 8000, 64: QUICK ? 4000 : 16000 },
  idleSandboxes: QUICK ? 10 : 50,
  manyIdleSandboxes: QUICK ? 20 : 200,
  leakCalls: QUICK ? 2000 : 10000,
  streamBytes: QUICK ? 10_000_000 : 100_000_000,
};
const IMAGE = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${fs.readFileSync(path.join(REPO_ROOT, 'VERSION'), 'utf8').trim()}`;
const HELPER = process.env.CHAT2SBX_HELPER_PATH || path.join(path.dirname(BIN), 'chat2sbx-helper');
const BENCH_LABEL = 'org.chat2sbx.bench';

const VM_MODE = opt('vm', 'auto');
const BASELINE = opt('baseline', process.env.BENCH_BASELINE || '');
const AB_ONLY = process.env.BENCH_AB_ONLY === '1';
const NO_FAIL = process.env.BENCH_NO_FAIL === '1';
const t0All = Date.now();

// The 1, 5 and 15 minute load averages (README's figures say the load).
const loadavg = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).map(Number);


function timeCommand(cmd, args, n) {
  const xs = [];
  let errors = 0;
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const r = spawnSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    xs.push(performance.now() - t);
    if (r.status !== 0) errors++;
  }
  return { ...stats(xs), errors };
}

function curlEngine(method, urlPath, body) {
  const args = ['-sS', '--unix-socket', DOCKER_SOCKET, '-X', method, '-w', '\n%{http_code}'];
  if (body) args.push('-H', 'Content-Type: application/json', '-d', JSON.stringify(body));
  args.push(`http://localhost${urlPath}`);
  const r = spawnSync('curl', args, { encoding: 'utf8' });
  const lines = (r.stdout || '').trimEnd().split('\n');
  const code = Number(lines.pop());
  if (r.status !== 0 || !(code >= 200 && code < 300)) throw new Error(`engine ${method} ${urlPath}: ${code} ${lines.join(' ')} ${r.stderr}`);
  return lines.join('\n') ? JSON.parse(lines.join('\n')) : null;
}


async function inParallel(items, width, fn) {
  const out = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(width, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i], i);
      }
    }),
  );
  return out;
}

// ---- the measurements ----

async function roundTrip(srv, sbx, container) {
  log('1. round trip');
  const payload = 'x'.repeat(1023) + '\n';
  await srv.call('write', { sandbox_id: sbx, path: 'bench-1k.txt', content: payload });
  const read = loadclient({ url: srv.url, body: toolBody('read', { sandbox_id: sbx, path: 'bench-1k.txt' }), calls: N.roundTrip, expect: '"total_lines"' });
  const bash = loadclient({ url: srv.url, body: toolBody('bash', { sandbox_id: sbx, command: 'true', yield_time_ms: 10000 }), calls: N.roundTrip, expect: '"exited"' });
  // Baseline: the docker CLI (it negotiates the engine's API version).
  const execTrue = timeCommand('docker', ['exec', container, 'true'], N.dockerExec);
  const execCat = timeCommand('docker', ['exec', container, 'cat', '/workspace/bench-1k.txt'], N.dockerExec);
  const trim = (r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v, 3)]));
  return {
    read_1k: trim(read),
    bash_true: trim(bash),
    docker_exec_true: execTrue,
    docker_exec_cat: execCat,
    baseline_tool: 'docker CLI (docker exec), same container, same run',
    ratio_read_vs_exec_cat: round(execCat.p50_ms / read.p50_ms, 1),
    ratio_bash_vs_exec_true: round(execTrue.p50_ms / bash.p50_ms, 1),
  };
}


function rawCreateStart(n, workdir) {
  // The same image and HostConfig basics as a sandbox: helper bind-mounted
  // read-only as PID 1, a workspace bind, stdin open, no TTY, log driver
  // none, the same dropped capabilities, no-new-privileges, pids limit.
  const xs = [];
  const ids = [];
  try {
    for (let i = 0; i < n; i++) {
      const name = `chat2sbx-bench-raw-${process.pid}-${i}`;
      const body = {
        Image: IMAGE,
        Entrypoint: ['/.chat2sbx/helper'],
        Cmd: [],
        Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/root'],
        Labels: { [BENCH_LABEL]: '1' },
        WorkingDir: '/workspace',
        OpenStdin: true,
        StdinOnce: false,
        AttachStdin: true,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        HostConfig: {
          Mounts: [
            { Type: 'bind', Source: HELPER, Target: '/.chat2sbx/helper', ReadOnly: true },
            { Type: 'bind', Source: workdir, Target: '/workspace', ReadOnly: false },
          ],
          PidsLimit: 4096,
          NetworkMode: 'chat2sbx',
          Privileged: false,
          LogConfig: { Type: 'none' },
          CapDrop: ['NET_RAW', 'MKNOD', 'AUDIT_WRITE', 'SYS_CHROOT', 'SETFCAP'],
          SecurityOpt: ['no-new-privileges'],
          Init: false,
        },
      };
      const t = performance.now();
      const c = curlEngine('POST', `/containers/create?name=${name}`, body);
      ids.push(c.Id);
      curlEngine('POST', `/containers/${c.Id}/start`);
      xs.push(performance.now() - t);
      curlEngine('DELETE', `/containers/${c.Id}?force=1&v=1`);
      ids.pop();
    }
  } finally {
    for (const id of ids) spawnSync('curl', ['-sS', '--unix-socket', DOCKER_SOCKET, '-X', 'DELETE', `http://localhost/containers/${id}?force=1&v=1`]);
  }
  return { ...stats(xs), baseline_tool: 'Engine REST API via curl --unix-socket (create + start, no attach)' };
}

// cold: also cold creates against the raw engine (not in the A/B mode).
async function creates(root, srvCold, { cold: withCold = true } = {}) {
  log(`2. sandbox_create → first bash (${withCold ? 'cold, raw engine, ' : ''}warm pool)`);
  let cold = null;
  let raw = null;
  if (withCold) {
    cold = await createToBash(srvCold, N.creates);
    const workdir = path.join(root, 'raw-workspace');
    await fsp.mkdir(workdir, { recursive: true });
    raw = rawCreateStart(N.creates, workdir);
  }

  // The bench holds up to 50 sandboxes and 20 warm ones at once, more than the
  // count derived for this machine by default.
  const warmSrv = await new Serve('warm', { CHAT2SBX_WARM_POOL: String(N.pool), CHAT2SBX_MAX_ACTIVE_SANDBOXES: '64' }).start(root);
  let warm;
  let removedAtStop = null;
  try {
    const poolMembers = poolWaiter(warmSrv, N.pool);
    warm = await createToBash(warmSrv, N.creates, { poolMembers });
  } finally {
    await warmSrv.stop();
    const left = (await listContainers(`${REGISTRY_LABEL}=${warmSrv.db}`)).length;
    removedAtStop = left === 0;
  }
  return {
    cold,
    warm_pool: { ...warm, pool_size: N.pool, members_removed_at_shutdown: removedAtStop },
    raw_engine_create_start: raw,
    ratio_cold_vs_raw: cold ? round(cold.p50_ms / raw.p50_ms, 2) : null,
  };
}

function throughput(srv, sbx) {
  log('3. read throughput');
  const out = {};
  for (const threads of [1, 4, 16, 64]) {
    const r = loadclient({ url: srv.url, body: toolBody('read', { sandbox_id: sbx, path: 'bench-1k.txt' }), threads, calls: N.throughput[threads], expect: '"total_lines"', warmup: 3 });
    out[`clients_${threads}`] = { calls_per_s: round(r.calls_per_s, 0), calls: r.calls, errors: r.errors, p50_ms: round(r.p50_ms, 3), p99_ms: round(r.p99_ms, 3), first_error: r.first_error };
  }
  // 64 clients on 2 cores queue: each call waits for the ones ahead of it,
  // so p50 grows about 4× from 16 clients, but the rate must not drop.
  out.ratio_64_vs_16_calls_per_s = round(out.clients_64.calls_per_s / out.clients_16.calls_per_s, 2);
  return out;
}

async function memory(srv, sbx, container, idleKiB) {
  log('4. memory');
  const insp = await dockerRequest('GET', `/containers/${container}/json`);
  const helperKiB = rssKiB(insp.body.State.Pid);
  const extra = await inParallel(Array.from({ length: N.idleSandboxes - 1 }, (_, i) => i), 3, async () => (await srv.call('sandbox_create', {})).sandbox_id);
  await sleep(2000);
  const with50 = srv.rss();
  const readBody = toolBody('read', { sandbox_id: sbx, path: 'bench-1k.txt' });
  loadclient({ url: srv.url, body: readBody, threads: 4, calls: 1000, expect: '"total_lines"' }); // settle allocator pools
  const before = srv.rss();
  const r = loadclient({ url: srv.url, body: readBody, threads: 4, calls: N.leakCalls, expect: '"total_lines"' });
  await sleep(1000);
  const after = srv.rss();
  // Then up to manyIdleSandboxes idle ones (issue 27: "200 idle sandboxes
  // still flat"): what serve holds per sandbox, after the calls above.
  const t = performance.now();
  const more = await inParallel(Array.from({ length: N.manyIdleSandboxes - N.idleSandboxes }, (_, i) => i), 3, async () => (await srv.call('sandbox_create', {})).sandbox_id);
  const createSecs = (performance.now() - t) / 1000;
  await sleep(2000);
  const withMany = srv.rss();
  const rMany = loadclient({ url: srv.url, body: readBody, threads: 4, calls: 1000, expect: '"total_lines"' });
  await inParallel([...extra, ...more], 4, (id) => srv.call('sandbox_destroy', { sandbox_id: id }));
  return {
    helper_idle_rss_mib: mib(helperKiB),
    helper_rss_source: '/proc/<State.Pid>/status VmRSS of the container PID 1',
    control_plane_idle_rss_mib: mib(idleKiB),
    sandboxes: N.idleSandboxes,
    control_plane_rss_with_sandboxes_mib: mib(with50),
    control_plane_rss_before_calls_mib: mib(before),
    calls: r.calls,
    call_errors: r.errors,
    control_plane_rss_after_calls_mib: mib(after),
    growth_mib: mib(after - before),
    many_sandboxes: N.manyIdleSandboxes,
    many_sandboxes_create_s: round(createSecs, 1),
    control_plane_rss_with_many_sandboxes_mib: mib(withMany),
    per_sandbox_kib: round((withMany - after) / (N.manyIdleSandboxes - N.idleSandboxes), 1),
    read_with_many_sandboxes: { p50_ms: round(rMany.p50_ms, 3), errors: rMany.errors },
  };
}

async function streaming(srv, sbx) {
  log('5. streaming');
  let peak = srv.rss();
  const sampler = setInterval(() => {
    const v = srv.rss();
    if (v > peak) peak = v;
  }, 50);
  const t = performance.now();
  let res = await srv.call('bash', { sandbox_id: sbx, command: `yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz | head -c ${N.streamBytes}`, yield_time_ms: 1000 });
  let polls = 0;
  let returned = (res.output || '').length;
  while (res.status === 'running') {
    res = await srv.call('bash_poll', { sandbox_id: sbx, session_id: res.session_id, yield_time_ms: 1000 });
    returned += (res.output || '').length;
    polls++;
  }
  const secs = (performance.now() - t) / 1000;
  clearInterval(sampler);
  return {
    bytes: N.streamBytes,
    status: res.status,
    exit_code: res.exit_code,
    seconds: round(secs, 2),
    mb_per_s: round(N.streamBytes / secs / 1e6, 1),
    polls,
    bytes_returned_to_client: returned,
    control_plane_peak_rss_mib: mib(peak),
    control_plane_hwm_mib: mib(rssKiB(srv.proc.pid, 'VmHWM')),
  };
}

// ---- report ----

// Issue 27's targets (medians; docs/performance.md "Targets") and the older
// ones it left standing: the cold create against the raw engine, the
// helper's and the control plane's memory, streaming.
const TARGET = {
  read_p50_ms: 0.3,
  read_vs_exec_cat: 250,
  bash_p50_ms: 2.5,
  warm_p50_ms: 5,
  reads_per_s_16: 8000,
  ratio_64_vs_16: 0.9,
  cold_vs_raw: 1.3,
};

// One row per measurement: {what, ours, base, ratio, target, met}; met is
// null for a row without a target.
function rows(R) {
  const rt = R.round_trip, cr = R.create, tp = R.throughput, m = R.memory, st = R.streaming;
  const out = [];
  const row = (what, ours, base, ratio, target, met) => out.push({ what, ours, base, ratio, target, met });
  if (rt) {
    row('read 1 KiB round trip p50 / p99', `${rt.read_1k.p50_ms} / ${rt.read_1k.p99_ms} ms`, `docker exec cat ${rt.docker_exec_cat.p50_ms} / ${rt.docker_exec_cat.p99_ms} ms`, `${rt.ratio_read_vs_exec_cat}×`, `≤ ${TARGET.read_p50_ms} ms, ≥ ${TARGET.read_vs_exec_cat}×`, rt.read_1k.p50_ms <= TARGET.read_p50_ms && rt.ratio_read_vs_exec_cat >= TARGET.read_vs_exec_cat);
    row('bash `true` round trip p50 / p99', `${rt.bash_true.p50_ms} / ${rt.bash_true.p99_ms} ms`, `docker exec true ${rt.docker_exec_true.p50_ms} / ${rt.docker_exec_true.p99_ms} ms`, `${rt.ratio_bash_vs_exec_true}×`, `≤ ${TARGET.bash_p50_ms} ms`, rt.bash_true.p50_ms <= TARGET.bash_p50_ms);
  }
  if (cr?.cold) row(`sandbox_create → first bash, cold p50 / p95 (n=${cr.cold.n})`, `${cr.cold.p50_ms} / ${cr.cold.p95_ms} ms`, `raw create+start ${cr.raw_engine_create_start.p50_ms} / ${cr.raw_engine_create_start.p95_ms} ms`, `${cr.ratio_cold_vs_raw}×`, `≤ ${TARGET.cold_vs_raw}×`, cr.ratio_cold_vs_raw <= TARGET.cold_vs_raw);
  if (cr) row(`sandbox_create → first bash, warm pool p50 / p95 (n=${cr.warm_pool.n}, ${cr.warm_pool.warm_hits} warm)`, `${cr.warm_pool.p50_ms} / ${cr.warm_pool.p95_ms} ms`, '', cr.raw_engine_create_start ? `${round(cr.raw_engine_create_start.p50_ms / cr.warm_pool.p50_ms, 1)}× faster` : '', `≤ ${TARGET.warm_p50_ms} ms`, cr.warm_pool.p50_ms <= TARGET.warm_p50_ms);
  if (tp) {
    const c = [tp.clients_1, tp.clients_4, tp.clients_16, tp.clients_64];
    const errors = c.reduce((a, x) => a + x.errors, 0);
    row('read throughput, 1 / 4 / 16 / 64 clients', `${c.map((x) => x.calls_per_s).join(' / ')} calls/s (errors ${errors})`, '', '', `≥ ${TARGET.reads_per_s_16}/s at 16, no errors`, tp.clients_16.calls_per_s >= TARGET.reads_per_s_16 && errors === 0);
    row('per-call at 64 vs 16 clients beyond queueing', `${tp.clients_64.calls_per_s} vs ${tp.clients_16.calls_per_s} calls/s; p50 ${tp.clients_64.p50_ms} vs ${tp.clients_16.p50_ms} ms`, '', `${tp.ratio_64_vs_16_calls_per_s}×`, `≥ ${TARGET.ratio_64_vs_16}× the 16-client rate`, tp.ratio_64_vs_16_calls_per_s >= TARGET.ratio_64_vs_16);
  }
  if (m) {
    row('helper RSS, idle sandbox', `${m.helper_idle_rss_mib} MiB`, '', '', '< 4 MiB', m.helper_idle_rss_mib < 4);
    row(`control plane RSS: idle / ${m.sandboxes} sandboxes`, `${m.control_plane_idle_rss_mib} / ${m.control_plane_rss_with_sandboxes_mib} MiB`, '', '', '< 50 MiB', m.control_plane_rss_with_sandboxes_mib < 50);
    row(`control plane RSS: ${m.sandboxes} / ${m.many_sandboxes} idle sandboxes (${m.per_sandbox_kib} KiB each; read p50 with ${m.many_sandboxes}: ${m.read_with_many_sandboxes.p50_ms} ms)`, `${m.control_plane_rss_with_sandboxes_mib} / ${m.control_plane_rss_with_many_sandboxes_mib} MiB`, '', '', '< 50 MiB, ≤ 64 KiB a sandbox', m.control_plane_rss_with_many_sandboxes_mib < 50 && m.per_sandbox_kib <= 64 && m.read_with_many_sandboxes.errors === 0);
    row(`control plane RSS before / after ${m.calls} calls`, `${m.control_plane_rss_before_calls_mib} / ${m.control_plane_rss_after_calls_mib} MiB (growth ${m.growth_mib}, errors ${m.call_errors})`, '', '', 'no growth', m.growth_mib <= 1 && m.call_errors === 0);
  }
  if (st) {
    row(`bash printing ${st.bytes / 1e6} MB, polled until exited`, `${st.mb_per_s} MB/s (${st.seconds} s)`, '', '', 'bounded RSS', st.control_plane_peak_rss_mib < 50);
    row('control plane peak RSS while streaming', `${st.control_plane_peak_rss_mib} MiB`, '', '', '', null);
  }
  return out;
}

function table(rs) {
  const lines = ['| measurement | chat2sbx | baseline | ratio | target | |', '|---|---|---|---|---|---|'];
  for (const r of rs) lines.push(`| ${r.what} | ${r.ours} | ${r.base} | ${r.ratio} | ${r.target} | ${r.met == null ? '' : r.met ? 'met' : 'missed'} |`);
  return lines.join('\n');
}

async function cleanupEngine(root, servers) {
  const removed = [];
  const lists = [await listContainers(BENCH_LABEL)];
  for (const s of servers) if (s.db) lists.push(await listContainers(`${REGISTRY_LABEL}=${s.db}`));
  for (const c of lists.flat()) {
    await dockerRequest('DELETE', `/containers/${c.Id}?force=1&v=1`).catch(() => {});
    removed.push(c.Names?.[0] || c.Id);
  }
  return removed;
}

async function main() {
  if (!VM_MODES.includes(VM_MODE)) throw new Error(`--vm '${VM_MODE}': use one of ${VM_MODES.join(', ')}`);
  if (AB_ONLY && !BASELINE) throw new Error('BENCH_AB_ONLY=1 needs BENCH_BASELINE=<commit>');
  for (const f of [BIN, LOADCLIENT, HELPER]) if (!fs.existsSync(f)) throw new Error(`${f} is missing; run 'make bench'`);
  const baselineDir = BASELINE ? buildBaseline(BASELINE) : null; // before the clock and the load reading
  const root = await fsp.mkdtemp(path.join(os.tmpdir(), 'chat2sbx-bench-'));
  const srv = new Serve('cold', { CHAT2SBX_WARM_POOL: '0', CHAT2SBX_MAX_ACTIVE_SANDBOXES: String(N.manyIdleSandboxes + 8) });
  const R = {
    machine: { cpus: os.cpus().length, cpu_model: os.cpus()[0]?.model, mem_gib: round(os.totalmem() / 2 ** 30, 1), kernel: os.release() },
    load: { at_start: loadavg(), source: '/proc/loadavg: 1, 5 and 15 minute averages' },
    started_at: new Date().toISOString(),
    mode: BASELINE ? (AB_ONLY ? 'A/B only' : 'A/B and the issue-27 measurements') : VM_MODE === 'only' ? 'runtimes only' : 'full',
    counts: N,
  };
  let failure = null;
  try {
    if (BASELINE) R.ab = await abComparison(root, { commit: BASELINE, dir: baselineDir, image: IMAGE, helper: HELPER });
    if (BASELINE ? !AB_ONLY : VM_MODE !== 'only') await measurements(R, root, srv, { full: !BASELINE });
    if (!BASELINE) R.runtimes = await runtimeComparison(root, VM_MODE);
  } catch (e) {
    failure = e;
  } finally {
    await srv.stop();
    const dbs = ['warm', ...RUNTIME_SERVES, ...AB_SERVES].map((n) => ({ db: path.join(root, n, 'data', 'state', 'chat2sbx.sqlite') }));
    const removed = await cleanupEngine(root, [srv, ...dbs]);
    if (removed.length) log(`removed leftover containers: ${removed.join(', ')}`);
    const poolMissed = R.create && R.create.warm_pool.warm_hits < R.create.warm_pool.n;
    if (!failure && !poolMissed) await fsp.rm(root, { recursive: true, force: true });
    else log(`kept ${root} for inspection`);
  }
  R.load.at_end = loadavg();
  R.seconds = round((Date.now() - t0All) / 1000, 1);
  const mainRows = rows(R);
  const ab = R.ab ? abRows(R.ab) : [];
  // A row's name without its figures ("… p50 / p95 (n=20, 20 warm)").
  const name = (what) => what.replace(/ p50\b.*$/, '').replace(/ \([^)]*\)$/, '');
  R.targets = [...ab, ...mainRows].filter((r) => r.met != null).map((r) => ({ row: name(r.what), value: r.ours, target: r.target, met: r.met }));
  const missed = R.targets.filter((t) => !t.met).map((t) => t.row);
  R.missed = missed;
  await fsp.mkdir(path.dirname(OUT), { recursive: true });
  await fsp.writeFile(OUT, JSON.stringify(R, null, 2) + '\n');
  if (failure) throw failure;
  const load = (l) => l.join(' / ');
  console.log(`\nchat2sbx benchmark (${R.machine.cpus} CPUs, ${R.machine.cpu_model}; load average (1 / 5 / 15 min) ${load(R.load.at_start)} at the start, ${load(R.load.at_end)} at the end; ${R.seconds} s; ${R.mode}; results in ${path.relative(process.cwd(), OUT)})\n`);
  if (R.ab) {
    console.log(`A/B: ${R.ab.baseline} (the baseline, built from git) beside this build, calls alternated one by one (n=${R.ab.tools[0].today.calls} per side; speed-up = baseline p50 / today p50):\n`);
    console.log(abTable(R.ab) + '\n');
  }
  if (mainRows.length) console.log(table(mainRows) + '\n');
  if (R.runtimes) {
    console.log('Runtimes side by side (the vm guest under ' + (R.runtimes.vm?.accel ?? 'no accelerator: not measured') + '):\n');
    console.log(runtimeTable(R.runtimes) + '\n');
  }
  if (missed.length) {
    const what = `${missed.length} target(s) missed: ${missed.join('; ')}`;
    if (NO_FAIL) log(`warning: ${what} (BENCH_NO_FAIL=1: exit status 0)`);
    else {
      log(`FAILED: ${what} (BENCH_NO_FAIL=1 makes this a warning)`);
      process.exitCode = 1;
    }
  } else if (R.targets.length) log(`every target met (${R.targets.length})`);
}

// Measurements 1–5 (issue 8; issue 27's targets), on the cold serve srv,
// started here. full: also the cold creates and streaming (not in the A/B
// mode, which keeps the rows issue 27 sets targets for).
async function measurements(R, root, srv, { full }) {
  await srv.start(root);
  await sleep(1000);
  const idleKiB = srv.rss();
  const main = await srv.call('sandbox_create', {});
  const sbx = main.sandbox_id;
  const container = main.container_id || sbx;
  R.round_trip = await roundTrip(srv, sbx, container);
  // roundTrip blocks the event loop for longer than serve keeps an idle
  // connection (the 10 s header deadline): let fetch see that close before
  // it reuses the pooled socket.
  await sleep(100);
  R.create = await creates(root, srv, { cold: full });
  await sleep(100);
  R.throughput = throughput(srv, sbx);
  await sleep(100);
  R.memory = await memory(srv, sbx, container, idleKiB);
  if (full) R.streaming = await streaming(srv, sbx);
  await srv.call('sandbox_destroy', { sandbox_id: sbx });
  await srv.stop();
}

main().catch((e) => {
  console.error(`bench: FAILED: ${e.stack || e.message}`);
  process.exit(1);
});
