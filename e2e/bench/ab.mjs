// The A/B mode of `make bench` (issue 27; docs/performance.md, "A/B against
// a commit"): `BENCH_BASELINE=<commit>` builds that commit's chat2sbx and
// helper from git (baseline.sh, cached by hash under build/bench/baseline/),
// serves it beside today's build (the same template image, each serve with
// its own data root and its own helper), makes one sandbox in each and
// times the same tool calls on both, alternated one by one by the C load
// client (--url2), so the machine's noise falls on both alike. The speed-up
// is the baseline's p50 over today's; each tool has a target.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { BIN, loadclient, log, QUICK, round, Serve, sleep, toolBody } from './common.mjs';

export const AB_SERVES = ['ab-baseline', 'ab-today'];

const CALLS = QUICK ? 200 : 1000;
const PAYLOAD = 'y'.repeat(1023) + '\n';
const LIST_FILES = 20;

// The tools compared: the body for a sandbox, the text every answer holds,
// the speed-up wanted (baseline p50 / today p50) and the calls per side.
const TOOLS = [
  { tool: 'read', label: 'read 1 KiB', args: { path: 'bench-1k.txt' }, expect: '"total_lines"', target: 2, calls: CALLS },
  { tool: 'write', label: 'write 1 KiB', args: { path: 'bench-write.txt', content: PAYLOAD }, expect: '"bytes_written"', target: 2, calls: CALLS },
  { tool: 'list', label: `list (${LIST_FILES} files)`, args: { path: '/workspace/bench-list' }, expect: '"entries"', target: 2, calls: CALLS },
  { tool: 'sandbox_list', label: 'sandbox_list', args: null, expect: '"sandboxes"', target: 2, calls: CALLS },
  { tool: 'bash', label: 'bash `true`', args: { command: 'true', yield_time_ms: 10000 }, expect: '"exited"', target: 1.5, calls: QUICK ? 100 : 500 },
];

// Builds (or finds in the cache) the baseline; the directory holding its
// chat2sbx and chat2sbx-helper.
export function buildBaseline(commit) {
  const cache = path.join(path.dirname(BIN), 'bench', 'baseline');
  const r = spawnSync(fileURLToPath(new URL('baseline.sh', import.meta.url)), [commit, cache], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`the baseline '${commit}' did not build (e2e/bench/baseline.sh exited ${r.status})`);
  return r.stdout.trim().split('\n').pop();
}

// One sandbox with the files the calls read and list.
async function prepare(srv) {
  const sbx = (await srv.call('sandbox_create', {})).sandbox_id;
  await srv.call('write', { sandbox_id: sbx, path: 'bench-1k.txt', content: 'x'.repeat(1023) + '\n' });
  const r = await srv.call('bash', {
    sandbox_id: sbx,
    command: `mkdir -p /workspace/bench-list && for i in $(seq ${LIST_FILES}); do echo "file $i" > /workspace/bench-list/f$i.txt; done`,
    yield_time_ms: 30000,
  });
  if (r.exit_code !== 0) throw new Error(`A/B: the list directory was not made in ${srv.name}: ${r.output}`);
  return sbx;
}

// commit: what the user asked for; dir: the baseline's build (buildBaseline);
// image: the template image both serve; helper: today's helper.
export async function abComparison(root, { commit, dir, image, helper }) {
  log(`A/B: ${commit} (baseline) against today's build, calls alternated`);
  const env = (helperPath) => ({
    CHAT2SBX_WARM_POOL: '0',
    CHAT2SBX_RUNTIME: 'runc',
    CHAT2SBX_TEMPLATE_IMAGE: image,
    CHAT2SBX_HELPER_PATH: helperPath,
    CHAT2SBX_MAX_ACTIVE_SANDBOXES: '8',
  });
  const base = new Serve(AB_SERVES[0], env(path.join(dir, 'chat2sbx-helper')), { bin: path.join(dir, 'chat2sbx') });
  const today = new Serve(AB_SERVES[1], env(helper));
  const out = { baseline: commit, baseline_build: dir, template_image: image, order: 'baseline then today on even calls, today then baseline on odd ones', tools: [] };
  try {
    await base.start(root);
    await today.start(root);
    const sbxBase = await prepare(base);
    const sbxToday = await prepare(today);
    for (const t of TOOLS) {
      const body = (sbx) => toolBody(t.tool, t.args ? { sandbox_id: sbx, ...t.args } : {});
      const r = loadclient({ url: base.url, body: body(sbxBase), url2: today.url, body2: body(sbxToday), calls: t.calls, expect: t.expect, warmup: 20 });
      const side = (x) => ({ calls: x.calls, errors: x.errors, p50_ms: round(x.p50_ms, 3), p99_ms: round(x.p99_ms, 3), first_error: x.first_error });
      const speedup = r.b.p50_ms > 0 ? r.p50_ms / r.b.p50_ms : 0;
      out.tools.push({
        tool: t.tool,
        label: t.label,
        baseline: side(r),
        today: side(r.b),
        speedup: round(speedup, 2),
        target: t.target,
        met: speedup >= t.target && r.errors === 0 && r.b.errors === 0,
      });
    }
    // The load client blocked the event loop for longer than serve keeps an
    // idle connection: let fetch see those closes before it reuses a socket.
    await sleep(100);
    await base.call('sandbox_destroy', { sandbox_id: sbxBase });
    await today.call('sandbox_destroy', { sandbox_id: sbxToday });
  } finally {
    await base.stop();
    await today.stop();
  }
  return out;
}

// The A/B rows for run.mjs's list of targets ({what, ours, target, met}).
export function abRows(ab) {
  return ab.tools.map((t) => ({ what: `A/B ${t.label} p50`, ours: `${t.speedup}× (${t.baseline.p50_ms} → ${t.today.p50_ms} ms)`, target: `≥ ${t.target}×`, met: t.met }));
}

// The A/B table: per tool the two p50s (and p99s), the speed-up, its target.
export function abTable(ab) {
  const lines = [
    `| tool | baseline ${ab.baseline} p50 / p99 | today p50 / p99 | speed-up | target | |`,
    '|---|---|---|---|---|---|',
  ];
  for (const t of ab.tools) {
    const errors = t.baseline.errors + t.today.errors ? ` (errors ${t.baseline.errors} / ${t.today.errors})` : '';
    lines.push(`| ${t.label} | ${t.baseline.p50_ms} / ${t.baseline.p99_ms} ms | ${t.today.p50_ms} / ${t.today.p99_ms} ms | ${t.speedup}×${errors} | ≥ ${t.target}× | ${t.met ? 'met' : 'missed'} |`);
  }
  return lines.join('\n');
}
