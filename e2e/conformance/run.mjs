// MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// e2e/package.json) against a real `chat2sbx serve`. Runs every server
// scenario the suite lists; fails when a scenario fails that is not in
// expected-failures.txt, or when a listed one passes (so the list shrinks as
// the server grows). Usage: node e2e/conformance/run.mjs [scenario...]
// Environment: CONFORMANCE_KEEP=1 keeps the output directory.
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
const cli = path.join(here, '..', 'node_modules', '.bin', 'conformance');
const SCENARIO_TIMEOUT_MS = 60_000;
const PARALLEL = 4;

function readExpected() {
  const map = new Map();
  const text = fs.readFileSync(path.join(here, 'expected-failures.txt'), 'utf8');
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    if (line) map.set(line, raw.includes('#') ? raw.slice(raw.indexOf('#') + 1).trim() : '');
  }
  return map;
}

async function listScenarios() {
  const { stdout } = await run(cli, ['list'], { timeout: 30_000 });
  const out = [];
  let inServer = false;
  for (const line of stdout.split('\n')) {
    if (/^Server scenarios/.test(line)) inServer = true;
    else if (/^\S/.test(line)) inServer = false;
    else if (inServer) {
      const m = line.match(/^\s+-\s+(\S+)/);
      if (m) out.push(m[1]);
    }
  }
  return out;
}

async function runScenario(url, name, outDir) {
  let stdout = '';
  let stderr = '';
  let error = null;
  try {
    ({ stdout, stderr } = await run(cli, ['server', '--url', url, '--scenario', name, '-o', outDir], {
      timeout: SCENARIO_TIMEOUT_MS,
      maxBuffer: 16 * 1024 * 1024,
    }));
  } catch (e) {
    stdout = e.stdout || '';
    stderr = e.stderr || '';
    error = e;
  }
  const m = `${stdout}\n${stderr}`.match(/Passed:\s*(\d+)\/(\d+),\s*(\d+)\s*failed/);
  const passed = m ? Number(m[1]) : 0;
  const total = m ? Number(m[2]) : 0;
  const failed = m ? Number(m[3]) : 1;
  const ok = !!m && failed === 0 && total > 0 && passed === total && !(error && error.killed);
  return { name, ok, summary: m ? m[0] : `no summary (${error ? error.message.split('\n')[0] : 'no output'})`, stdout, stderr };
}

const expected = readExpected();
const all = await listScenarios();
if (all.length === 0) {
  console.error('conformance: the suite listed no server scenarios');
  process.exit(2);
}
const wanted = process.argv.slice(2).length ? process.argv.slice(2) : all;
for (const name of expected.keys()) {
  if (!all.includes(name)) console.log(`conformance: note: expected failure '${name}' is not a scenario of this suite version`);
}

// The suite sends no Authorization header, so it runs against a serve with
// the TCP token check off (e2e 22 proves the check itself).
const srv = new Server();
await srv.start({ env: { CHAT2SBX_MCP_TOKEN: 'off' } });
const outDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'chat2sbx-conformance-'));
const results = [];
try {
  const queue = [...wanted];
  await Promise.all(
    Array.from({ length: PARALLEL }, async () => {
      for (let name; (name = queue.shift()); ) results.push(await runScenario(srv.url, name, path.join(outDir, name)));
    }),
  );
} finally {
  const st = await srv.stop();
  if (st.killed) console.log('conformance: chat2sbx serve did not stop on SIGTERM');
}

results.sort((a, b) => wanted.indexOf(a.name) - wanted.indexOf(b.name));
let passed = 0;
let xfail = 0;
const problems = [];
for (const r of results) {
  const isExpected = expected.has(r.name);
  let mark;
  if (r.ok && !isExpected) {
    passed++;
    mark = 'pass';
  } else if (!r.ok && isExpected) {
    xfail++;
    mark = 'expected failure';
  } else if (r.ok && isExpected) {
    mark = 'UNEXPECTED PASS (remove it from expected-failures.txt)';
    problems.push(r);
  } else {
    mark = 'FAIL';
    problems.push(r);
  }
  console.log(`  ${r.name}: ${mark} (${r.summary})`);
}
for (const r of problems) {
  if (r.ok) continue;
  console.log(`---- ${r.name} ----\n${(r.stdout + r.stderr).split('\n').slice(-40).join('\n')}`);
}
console.log(`conformance: ${passed} passed, ${xfail} expected failures${problems.length ? `, ${problems.length} unexpected` : ''}`);
if (problems.length) {
  console.log(`conformance: output kept in ${outDir}; server stderr ${srv.stderrPath}`);
  process.exit(1);
}
if (!process.env.CONFORMANCE_KEEP) {
  await fsp.rm(outDir, { recursive: true, force: true });
  await srv.removeRoot();
}
