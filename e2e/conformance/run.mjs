// MCP conformance suites (@modelcontextprotocol/conformance, pinned in
// e2e/node22/package.json and run on the Node 22 installed there) against
// one real `chat2sbx serve`, in three configurations:
//   0.1.16                     the newest stable suite (2025-06-18 and 2025-11-25)
//   0.2.0-alpha.12@2025-11-25  the newest suite, requirement set 2025-11-25
//   0.2.0-alpha.12@2026-07-28  the newest suite, requirement set 2026-07-28
// Each configuration has its own expected-failures-<configuration>.txt. A
// line names a whole scenario or one check of it ("scenario:check-id", the
// suite's own baseline syntax) and must give its reason after '#'. The run
// fails when a scored check fails that is not listed, when a listed one
// passes (so the lists shrink as the server grows), or when a line has no
// reason. A scenario the requirement set runs but does not score
// (extension, pending, added-after-release) is reported, never judged; a
// scenario that ran no check (the suite skipped it) counts as neither.
// The suites only speak HTTP (`conformance server --url`); stdio is covered
// by e2e 29's real clients.
// Usage: node e2e/conformance/run.mjs [configuration...]
// Environment: CONFORMANCE_KEEP=1 keeps the output directories.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { Server } from '../lib/server.mjs';

const run = promisify(execFile);
const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(here, '..', 'node22', 'node_modules');
const NODE22 = path.join(modules, 'node', 'bin', 'node');
const RUN_TIMEOUT_MS = 240_000;

const CONFIGURATIONS = [
  { name: '0.1.16', pkg: 'conformance-0.1', args: [] },
  { name: '0.2.0-alpha.12@2025-11-25', pkg: 'conformance-0.2', requirements: '2025-11-25' },
  { name: '0.2.0-alpha.12@2026-07-28', pkg: 'conformance-0.2', requirements: '2026-07-28' },
];

// The expected failures of one configuration: Map "scenario" or
// "scenario:check" -> reason. Throws on a line without a reason.
function readExpected(config) {
  const file = path.join(here, `expected-failures-${config.name}.txt`);
  const map = new Map();
  const text = fs.readFileSync(file, 'utf8');
  text.split('\n').forEach((raw, i) => {
    if (/^\s*(#|$)/.test(raw)) return;
    const hash = raw.indexOf('#');
    const entry = (hash < 0 ? raw : raw.slice(0, hash)).trim();
    const reason = hash < 0 ? '' : raw.slice(hash + 1).trim();
    if (!reason) throw new Error(`${path.basename(file)} line ${i + 1}: '${entry}' has no '# reason'`);
    map.set(entry, reason);
  });
  return map;
}

// The server scenarios a requirement set scores (its YAML's server: list),
// or null when the configuration scores everything it runs.
function scoredScenarios(config) {
  if (!config.requirements) return null;
  const yaml = fs.readFileSync(path.join(modules, config.pkg, 'requirements', `${config.requirements}.yaml`), 'utf8');
  const out = new Set();
  let inServer = false;
  for (const line of yaml.split('\n')) {
    if (/^\S/.test(line)) inServer = /^server:/.test(line);
    else if (inServer) {
      const m = line.match(/^\s+-\s+(\S+)/);
      if (m) out.add(m[1]);
    }
  }
  if (out.size === 0) throw new Error(`requirement set ${config.requirements} lists no server scenario`);
  return out;
}

// Runs the whole configuration in one process and reads back every
// scenario's checks.json: [{ scenario, checks }].
async function runConfiguration(config, url, outDir) {
  const cli = path.join(modules, config.pkg, 'dist', 'index.js');
  const args = [cli, 'server', '--url', url, '-o', outDir];
  if (config.requirements) args.push('--requirements', config.requirements);
  let output = '';
  try {
    const { stdout, stderr } = await run(NODE22, args, { timeout: RUN_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 });
    output = stdout + stderr;
  } catch (e) {
    // The suite exits 1 whenever a check fails; the checks say which.
    if (e.killed || !fs.existsSync(outDir)) throw new Error(`${config.name}: ${e.message.split('\n')[0]}`);
    output = (e.stdout || '') + (e.stderr || '');
  }
  const results = [];
  for (const dir of await fsp.readdir(outDir)) {
    const m = dir.match(/^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/);
    const file = path.join(outDir, dir, 'checks.json');
    if (!m || !fs.existsSync(file)) continue;
    results.push({ scenario: m[1], checks: JSON.parse(await fsp.readFile(file, 'utf8')) });
  }
  if (results.length === 0) throw new Error(`${config.name}: the suite wrote no results\n${output.slice(-2000)}`);
  return results;
}

// Judges one configuration's results; returns { lines, problems }.
function judge(config, results) {
  const expected = readExpected(config);
  const scored = scoredScenarios(config);
  const ran = new Set(results.map((r) => r.scenario));
  const lines = [];
  const problems = [];
  let passed = 0;
  let xfail = 0;
  for (const key of expected.keys()) {
    const scenario = key.split(':')[0];
    if (!ran.has(scenario)) lines.push(`  note: expected failure '${key}' did not run in this configuration`);
  }
  results.sort((a, b) => a.scenario.localeCompare(b.scenario));
  for (const { scenario, checks } of results) {
    const failing = checks.filter((c) => c.status === 'FAILURE');
    const succeeded = checks.filter((c) => c.status === 'SUCCESS');
    const summary = `${succeeded.length} passed, ${failing.length} failed`;
    if (scored && !scored.has(scenario)) {
      lines.push(`  ${scenario}: not scored at ${config.requirements} (${summary})`);
      continue;
    }
    if (succeeded.length + failing.length === 0) {
      lines.push(`  ${scenario}: skipped by the suite (no check ran)`);
      continue;
    }
    if (expected.has(scenario)) {
      if (failing.length) {
        xfail++;
        lines.push(`  ${scenario}: expected failure (${summary})`);
      } else {
        problems.push(`${scenario}: UNEXPECTED PASS (remove it from expected-failures-${config.name}.txt)`);
      }
      continue;
    }
    const unexpected = failing.filter((c) => !expected.has(`${scenario}:${c.id}`));
    for (const c of unexpected) problems.push(`${scenario}:${c.id}: FAIL: ${(c.errorMessage || c.description || '').slice(0, 400)}`);
    for (const key of expected.keys()) {
      const [s, id] = key.split(':');
      if (s === scenario && id && !failing.some((c) => c.id === id) && checks.some((c) => c.id === id))
        problems.push(`${key}: UNEXPECTED PASS (remove it from expected-failures-${config.name}.txt)`);
    }
    if (unexpected.length) lines.push(`  ${scenario}: FAIL (${summary})`);
    else if (failing.length) {
      xfail++;
      lines.push(`  ${scenario}: pass but for its expected failures (${summary})`);
    } else {
      passed++;
      lines.push(`  ${scenario}: pass (${summary})`);
    }
  }
  lines.push(`conformance ${config.name}: ${passed} passed, ${xfail} expected failures${problems.length ? `, ${problems.length} unexpected` : ''}`);
  return { lines, problems };
}

if (!fs.existsSync(NODE22)) {
  console.error(`conformance: ${NODE22} is missing; run e2e/run.sh (it installs e2e/node22)`);
  process.exit(2);
}
const want = process.argv.slice(2);
const configs = want.length ? CONFIGURATIONS.filter((c) => want.includes(c.name)) : CONFIGURATIONS;
if (configs.length === 0) {
  console.error(`conformance: no configuration named ${want.join(', ')}; known: ${CONFIGURATIONS.map((c) => c.name).join(', ')}`);
  process.exit(2);
}

// The suites send no Authorization header, so they run against a serve with
// the TCP token check off (e2e 22 proves the check itself).
const srv = new Server();
await srv.start({ env: { CHAT2SBX_MCP_TOKEN: 'off' } });
const outRoot = await fsp.mkdtemp(path.join(os.tmpdir(), 'chat2sbx-conformance-'));
const problems = [];
try {
  for (const config of configs) {
    const started = Date.now();
    const results = await runConfiguration(config, srv.url, path.join(outRoot, config.name));
    const verdict = judge(config, results);
    console.log(`conformance ${config.name} (${((Date.now() - started) / 1000).toFixed(1)} s):`);
    for (const line of verdict.lines) console.log(line);
    for (const p of verdict.problems) problems.push(`${config.name}: ${p}`);
  }
} catch (e) {
  problems.push(String(e.message || e));
} finally {
  const st = await srv.stop();
  if (st.killed) console.log('conformance: chat2sbx serve did not stop on SIGTERM');
}
for (const p of problems) console.log(`conformance: ${p}`);
if (problems.length) {
  console.log(`conformance: output kept in ${outRoot}; server stderr ${srv.stderrPath}`);
  process.exit(1);
}
console.log('conformance: every configuration passed but for its expected failures');
if (!process.env.CONFORMANCE_KEEP) {
  await fsp.rm(outRoot, { recursive: true, force: true });
  await srv.removeRoot();
}
