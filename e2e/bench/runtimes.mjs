// The runtime comparison of `make bench` (issue 15, item 6; README
// "Performance"): the same measurements for a container sandbox (runc) and
// a vm sandbox (QEMU microVM), side by side:
//   - sandbox_create → first bash answer, cold and from a warm pool;
//   - bash `true` and read (1 KiB) round trips through the MCP endpoint;
//   - a 1 KiB file read inside the sandbox, from the workspace (a bind
//     mount; 9p for vm) and from the sandbox's own disk;
//   - `git status` of a 1 000-file repository, in the workspace and on the
//     sandbox's own disk (timed inside the sandbox);
//   - for vm, both again in a direct workspace (9p cache=none, coherent
//     with the host; a managed one is cached: guest_init.c);
//   - resident memory of the container's PID 1 side: the helper (runc) or
//     QEMU (vm), idle and with the guest's dockerd running;
//   - the image's size.
// The vm column is left out, and the output says why, when the vm image is
// not built (make template-vm) or `--vm off` is given. Every sandbox it
// makes is destroyed; the caller's cleanup removes what a failure left.
import fs from 'node:fs';
import path from 'node:path';

import { runCli } from '../lib/clones.mjs';
import { dockerRequest, REPO_ROOT } from '../lib/server.mjs';
import { createToBash, loadclient, log, mib, poolWaiter, QUICK, round, rssKiB, Serve, sleep, stats, toolBody } from './common.mjs';

// --vm auto (default: the vm column when its image exists), only (just this
// comparison, not the issue-8 measurements), off (no vm column).
export const VM_MODES = ['auto', 'only', 'off'];

const VERSION = fs.readFileSync(path.join(REPO_ROOT, 'VERSION'), 'utf8').trim();
const VM_IMAGE = process.env.CHAT2SBX_VM_IMAGE || `chat2sbx-vm:${VERSION}`;
const TEMPLATE_IMAGE = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${VERSION}`;

// Counts per runtime: a vm boots under emulation on machines without usable
// KVM, so it gets fewer repetitions (the run stays within minutes).
const COUNTS = {
  runc: { creates: QUICK ? 3 : 10, warm: 3, calls: QUICK ? 100 : 300, reads: 500, git: 5, fillMs: 60_000 },
  vm: { creates: QUICK ? 2 : 3, warm: 2, calls: QUICK ? 30 : 60, reads: 500, git: 5, fillMs: 300_000 },
};

async function imageSize(ref) {
  const r = await dockerRequest('GET', `/images/${encodeURIComponent(ref)}/json`);
  return r.status === 200 ? r.body.Size : null;
}

// The pid of the container's QEMU (a child of the launcher, its PID 1), or
// of the helper itself for a container sandbox.
function sandboxProcess(runtime, pid1) {
  if (runtime !== 'vm') return pid1;
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const st = fs.readFileSync(`/proc/${d}/status`, 'utf8');
      if (/^Name:\s+qemu-system/m.test(st) && new RegExp(`^PPid:\\s+${pid1}$`, 'm').test(st)) return Number(d);
    } catch {
      /* gone */
    }
  }
  return null;
}

// A bash command run to its end (polled); its output. Throws on a non-zero exit.
async function sh(srv, sbx, command) {
  let r = await srv.call('bash', { sandbox_id: sbx, command, yield_time_ms: 30_000 });
  let out = r.output ?? '';
  while (r.status === 'running') {
    r = await srv.call('bash_poll', { sandbox_id: sbx, session_id: r.session_id, yield_time_ms: 30_000 });
    out += r.output ?? '';
  }
  if (r.exit_code !== 0) throw new Error(`bench: '${command.slice(0, 80)}' exited ${r.exit_code}: ${out.slice(-500)}`);
  return out;
}

// Timed inside the sandbox (python3's monotonic clock): reads of a 1 KiB
// file, µs per read; the tool call's own overhead is not in it.
const READ_LOOP = (file, n) =>
  `python3 -c 'import time\nt=time.monotonic()\nfor i in range(${n}):\n  f=open("${file}","rb"); f.read(); f.close()\nprint((time.monotonic()-t)/${n}*1e6)'`;
// n runs of `git status` in dir, each timed (ms), one per line.
const GIT_LOOP = (dir, n) =>
  `cd ${dir} && git status --porcelain >/dev/null && for i in $(seq ${n}); do s=$(date +%s%N); git status --porcelain >/dev/null; e=$(date +%s%N); echo $(( (e - s) / 1000 )); done`;
const MAKE_REPO = [
  'set -e',
  'rm -rf /workspace/bench-repo && mkdir -p /workspace/bench-repo && cd /workspace/bench-repo',
  'for d in $(seq 0 9); do mkdir -p dir$d; for f in $(seq 0 99); do printf "line %s of file %s\\n" $f $d > dir$d/file$f.txt; done; done',
  'git init -q . && git add -A && git -c user.email=bench@localhost -c user.name=bench commit -qm files',
  'echo changed >> dir0/file0.txt',
  'rm -rf /root/bench-repo && cp -a /workspace/bench-repo /root/bench-repo',
  'find . -type f -not -path "./.git/*" | wc -l',
].join('\n');

// sandbox_destroy, again while the engine says its removal is in progress
// (seen right after a guest's dockerd started; serve also retries itself).
async function destroy(srv, sbx) {
  for (let i = 0; ; i++) {
    try {
      return await srv.call('sandbox_destroy', { sandbox_id: sbx });
    } catch (e) {
      if (i >= 10 || !/in progress/.test(e.message)) throw e;
      await sleep(2000);
    }
  }
}

const median = (xs) => stats(xs).p50_ms;
// The 9p cache mode of a /proc/mounts line (none shows no word), or null.
const p9cache = (line) => (!/ 9p /.test(line) ? null : /[ ,]loose[ ,]/.test(line) ? 'loose' : /[ ,]mmap[ ,]/.test(line) ? 'mmap' : 'none');

// A 1 KiB read (µs) and git status of the 1 000-file repository (ms, median
// of n.git) in the sandbox's /workspace; the repository's file count.
async function workspaceFiles(srv, sbx, n) {
  const read = round(Number(await sh(srv, sbx, READ_LOOP('/workspace/bench-1k.txt', n.reads))), 1);
  const files = Number((await sh(srv, sbx, MAKE_REPO)).trim().split('\n').pop());
  const git = round(median((await sh(srv, sbx, GIT_LOOP('/workspace/bench-repo', n.git))).trim().split('\n').map((us) => Number(us) / 1000)));
  return { read, files, git };
}

// The same in a vm sandbox of a direct workspace (a host directory the
// person approved; its owner is a user, as QEMU never runs as root): 9p
// cache=none, what every vm workspace had before issue 27.
const VM_UID = 64099;
async function directWorkspace(srv, n) {
  const repo = path.join(srv.root, 'home', 'repositories', 'bench-direct');
  fs.mkdirSync(repo, { recursive: true });
  fs.writeFileSync(path.join(repo, 'bench-1k.txt'), 'x'.repeat(1023) + '\n');
  for (const p of [repo, path.join(repo, 'bench-1k.txt')]) fs.chownSync(p, VM_UID, VM_UID);
  const args = { workspace_path: repo, workspace_mode: 'direct' };
  const ask = await srv.call('sandbox_create', args);
  if (ask.status === 'approval_required') {
    const r = runCli(srv, ['approval', 'approve', ask.approval_id], { timeout: 60_000 });
    if (r.status !== 0) throw new Error(`bench: ${r.desc}`);
  }
  const c = ask.status === 'approval_required' ? await srv.call('sandbox_create', args) : ask;
  try {
    const files = await workspaceFiles(srv, c.sandbox_id, n);
    return { ...files, fs: (await sh(srv, c.sandbox_id, 'stat -f -c %T /workspace')).trim(), cache: p9cache(await sh(srv, c.sandbox_id, 'grep " /workspace " /proc/mounts || true')) };
  } finally {
    await destroy(srv, c.sandbox_id);
  }
}

async function column(root, runtime) {
  const n = COUNTS[runtime];
  const env = { CHAT2SBX_RUNTIME: runtime, CHAT2SBX_MAX_ACTIVE_SANDBOXES: '8' };
  const out = { runtime, counts: n };
  log(`runtimes: ${runtime}: sandbox_create → first bash, cold (n=${n.creates})`);
  const srv = await new Serve(`cmp-${runtime}`, { ...env, CHAT2SBX_WARM_POOL: '0' }).start(root);
  let sbx = null;
  try {
    out.create_cold = await createToBash(srv, n.creates);
    const c = await srv.call('sandbox_create', {});
    sbx = c.sandbox_id;
    out.accel = c.accel ?? null;
    const container = c.container_id || sbx;
    log(`runtimes: ${runtime}: round trips (n=${n.calls})`);
    await srv.call('write', { sandbox_id: sbx, path: 'bench-1k.txt', content: 'x'.repeat(1023) + '\n' });
    const bash = loadclient({ url: srv.url, body: toolBody('bash', { sandbox_id: sbx, command: 'true', yield_time_ms: 10000 }), calls: n.calls, expect: '"exited"' });
    const read = loadclient({ url: srv.url, body: toolBody('read', { sandbox_id: sbx, path: 'bench-1k.txt' }), calls: n.calls, expect: '"total_lines"' });
    out.bash_true = { p50_ms: round(bash.p50_ms), p99_ms: round(bash.p99_ms), errors: bash.errors };
    out.read_1k = { p50_ms: round(read.p50_ms), p99_ms: round(read.p99_ms), errors: read.errors };
    // The load client blocked the event loop for longer than serve keeps an
    // idle connection: let fetch see that close before it reuses the socket
    // (100 ms was not always enough at a load average of 8).
    await sleep(1000);

    log(`runtimes: ${runtime}: file reads and git status inside`);
    await sh(srv, sbx, 'cp /workspace/bench-1k.txt /root/bench-1k.txt');
    const ws = await workspaceFiles(srv, sbx, n);
    out.file_read_us = {
      workspace: ws.read,
      own_disk: round(Number(await sh(srv, sbx, READ_LOOP('/root/bench-1k.txt', n.reads))), 1),
      workspace_fs: (await sh(srv, sbx, 'stat -f -c %T /workspace')).trim(),
      workspace_cache: p9cache(await sh(srv, sbx, 'grep " /workspace " /proc/mounts || true')),
    };
    const gitTimes = async (dir) => median((await sh(srv, sbx, GIT_LOOP(dir, n.git))).trim().split('\n').map((us) => Number(us) / 1000));
    out.git_status_ms = { files: ws.files, workspace: ws.git, own_disk: round(await gitTimes('/root/bench-repo')) };

    log(`runtimes: ${runtime}: memory`);
    const insp = await dockerRequest('GET', `/containers/${container}/json`);
    const pid = sandboxProcess(runtime, insp.body.State.Pid);
    await sleep(5000);
    out.memory = { process: runtime === 'vm' ? 'QEMU' : 'helper', idle_rss_mib: mib(rssKiB(pid)), limit_mib: mib(insp.body.HostConfig.Memory / 1024) };
    if (runtime === 'vm') {
      // The first use of the guest's Docker socket starts dockerd in it.
      await sh(srv, sbx, 'docker info --format "{{.ServerVersion}}" >/dev/null');
      await sleep(5000);
      out.memory.with_dockerd_rss_mib = mib(rssKiB(pid));
    }
    await destroy(srv, sbx);
    sbx = null;
  } finally {
    if (sbx) await srv.call('sandbox_destroy', { sandbox_id: sbx }, { allowError: true }).catch(() => {});
    await srv.stop();
  }
  if (runtime === 'vm') {
    // In a serve of its own (with the first one's, a create after the
    // approval once waited past the call's 120 s under load).
    log(`runtimes: ${runtime}: file reads and git status in a direct workspace`);
    const directSrv = await new Serve(`cmp-${runtime}-direct`, { ...env, CHAT2SBX_WARM_POOL: '0' }).start(root);
    try {
      const d = await directWorkspace(directSrv, n);
      out.file_read_us.direct = d.read;
      out.file_read_us.direct_fs = d.fs;
      out.file_read_us.direct_cache = d.cache;
      out.git_status_ms.direct = d.git;
    } finally {
      await directSrv.stop();
    }
  }

  log(`runtimes: ${runtime}: sandbox_create → first bash, warm pool (n=${n.warm}, pool 1)`);
  const warmSrv = await new Serve(`cmp-${runtime}-warm`, { ...env, CHAT2SBX_WARM_POOL: '1' }).start(root);
  try {
    out.create_warm = await createToBash(warmSrv, n.warm, { poolMembers: poolWaiter(warmSrv, 1, n.fillMs) });
  } finally {
    await warmSrv.stop();
  }
  out.image = runtime === 'vm' ? VM_IMAGE : TEMPLATE_IMAGE;
  out.image_size_mb = round((await imageSize(out.image)) / 1e6, 0);
  return out;
}

// Measures the runc column and, unless mode is 'off' or the vm image is
// missing, the vm column; returns { runc, vm, vm_skipped } (vm null and
// vm_skipped the reason when it was left out). The serve instances live
// under root; the servers' data roots are named cmp-<runtime>[-warm].
export async function runtimeComparison(root, mode) {
  const R = { runc: await column(root, 'runc'), vm: null, vm_skipped: null };
  if (mode === 'off') R.vm_skipped = '--vm off';
  else if ((await imageSize(VM_IMAGE)) == null) R.vm_skipped = `no vm image ${VM_IMAGE} in the engine (make template-vm builds it)`;
  else R.vm = await column(root, 'vm');
  if (R.vm_skipped) log(`runtimes: vm column skipped: ${R.vm_skipped}`);
  return R;
}

// The data roots runtimeComparison's servers use under root (for cleanup).
export const RUNTIME_SERVES = ['cmp-runc', 'cmp-runc-warm', 'cmp-vm', 'cmp-vm-direct', 'cmp-vm-warm'];

// The comparison as a markdown table (runc | vm), with a line saying why
// the vm column is missing when it is.
export function runtimeTable(C) {
  const cols = [C.runc, C.vm].filter(Boolean);
  const cell = (f) => cols.map((c) => f(c)).join(' | ');
  const head = cols.map((c) => (c.runtime === 'vm' ? `vm (${c.accel ?? '?'})` : c.runtime)).join(' | ');
  const rows = [
    [`sandbox_create → first bash, cold p50 / p95`, (c) => `${c.create_cold.p50_ms} / ${c.create_cold.p95_ms} ms (n=${c.create_cold.n})`],
    [`sandbox_create → first bash, warm pool p50`, (c) => `${c.create_warm.p50_ms} ms (n=${c.create_warm.n}, ${c.create_warm.warm_hits} warm)`],
    ['bash `true` round trip p50 / p99', (c) => `${c.bash_true.p50_ms} / ${c.bash_true.p99_ms} ms`],
    ['read 1 KiB round trip p50 / p99', (c) => `${c.read_1k.p50_ms} / ${c.read_1k.p99_ms} ms`],
    ['1 KiB file read inside: workspace / own disk', (c) => `${c.file_read_us.workspace} / ${c.file_read_us.own_disk} µs (workspace: ${c.file_read_us.workspace_cache ? `9p, cache=${c.file_read_us.workspace_cache}` : c.file_read_us.workspace_fs})`],
    [`git status, ${C.runc.git_status_ms.files} files: workspace / own disk`, (c) => `${c.git_status_ms.workspace} / ${c.git_status_ms.own_disk} ms`],
    ['1 KiB file read inside: direct workspace', (c) => (c.file_read_us.direct == null ? '– (a bind mount, as above)' : `${c.file_read_us.direct} µs (${c.file_read_us.direct_cache ? `9p, cache=${c.file_read_us.direct_cache}` : c.file_read_us.direct_fs})`)],
    [`git status, ${C.runc.git_status_ms.files} files: direct workspace`, (c) => (c.git_status_ms.direct == null ? '–' : `${c.git_status_ms.direct} ms`)],
    ['resident memory, idle', (c) => `${c.memory.idle_rss_mib} MiB (${c.memory.process}; limit ${c.memory.limit_mib} MiB)`],
    ['resident memory, guest dockerd running', (c) => (c.memory.with_dockerd_rss_mib == null ? '–' : `${c.memory.with_dockerd_rss_mib} MiB`)],
    ['image size', (c) => `${c.image_size_mb} MB`],
  ];
  const lines = [`| measurement | ${head} |`, `|---|${cols.map(() => '---|').join('')}`, ...rows.map(([what, f]) => `| ${what} | ${cell(f)} |`)];
  if (C.vm_skipped) lines.push('', `vm column not measured: ${C.vm_skipped}.`);
  return lines.join('\n');
}
