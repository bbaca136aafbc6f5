// 04 (make test-nodes): `chat2sbx doctor --node NAME` (issue 28, item 6)
// attacks a probe sandbox on another machine's engine and says which node
// each result is from. engine.sh starts a second dockerd in a network
// namespace and loads the template image into it; the CLI adds it as node
// n1 and runs the doctor there. A sandbox on another node reaches serve's
// machine as the node's own address, which no rule for this machine's
// bridges stops: `node add` (as root) puts that address into the
// host-edge firewall, host_services passes there, and `node remove` takes
// the address out again. Needs root (namespaces) and the template image.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { BIN, REPO_ROOT, childEnv } from '../lib/server.mjs';

const ENGINE = path.join(REPO_ROOT, 'e2e', 'nodes', 'engine.sh');
const N = process.env.E2E_DOCTOR_NODE_NUMBER || '64';
const IMAGE = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${fs.readFileSync(path.join(REPO_ROOT, 'VERSION'), 'utf8').trim()}`;

let root = '';
let env = {};
let node = {}; // ENDPOINT, SOCK, CA, CERT, KEY as engine.sh prints them

function cli(args) {
  return spawnSync(BIN, args, { env, encoding: 'utf8', timeout: 300_000 });
}

// What the node's own engine holds (through its Unix socket, as root).
function onNode(args) {
  return execFileSync('docker', ['-H', `unix://${node.SOCK}`, ...args], { encoding: 'utf8' }).trim();
}

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-doctor-node-'));
  fs.mkdirSync(path.join(root, 'home'));
  env = childEnv({}, path.join(root, 'home'), path.join(root, 'data'), 1);
  spawnSync(ENGINE, ['stop', N], { stdio: 'ignore' }); // a killed run's leftovers
  const out = execFileSync(ENGINE, ['start', N, '--image', IMAGE], { encoding: 'utf8', timeout: 300_000 });
  for (const line of out.split('\n')) {
    const m = /^([A-Z]+)=(.*)$/.exec(line);
    if (m) node[m[1]] = m[2];
  }
  const r = cli(['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /chat2sbx: firewall (installed|in place)/, r.stderr);
});

// The firewall's state in `status --json` (its exit status is 6 without a serve).
function firewallState() {
  return JSON.parse(cli(['status', '--json']).stdout).firewall.state;
}

const nodeAddress = () => node.ENDPOINT.replace(/^tcp:\/\/|:\d+$/g, '');

test('the host-edge firewall names the node\'s address', () => {
  const print = cli(['setup', '--print-firewall']);
  assert.equal(print.status, 0, print.stderr);
  assert.match(print.stdout, new RegExp(`ip saddr \\{ ${nodeAddress().replace(/\./g, '\\.')} \\} ct state new fib daddr type local drop`));
  // The kernel's table is this build's, node rule included (status compares them).
  assert.equal(firewallState(), 'installed');
});

after(() => {
  spawnSync(ENGINE, ['stop', N], { stdio: 'inherit' });
  if (root && !process.env.E2E_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

test('doctor --node n1 attacks a probe on that node, and every result names it', () => {
  const r = cli(['doctor', '--node', 'n1', '--json']);
  const report = JSON.parse(r.stdout);
  const by = Object.fromEntries(report.checks.map((c) => [c.name, c]));
  assert.ok(report.checks.length >= 9, r.stdout);
  for (const c of report.checks) assert.equal(c.node, 'n1', JSON.stringify(c));
  // The sandbox on n1 holds what a sandbox here holds.
  for (const name of ['docker_socket', 'host_files', 'host_environment', 'credentials', 'privileges', 'pids_limit', 'memory_limit', 'network_off']) {
    assert.equal(by[name]?.result, 'passed', `${name}: ${JSON.stringify(by[name])}`);
  }
  assert.match(by.memory_limit.detail, /ceiling \d+ MiB, oom_score_adj 500/);
  assert.equal(by.this_machine_only.result, 'skipped');
  assert.match(by.this_machine_only.detail, /node 'local'/);
  // `node add` (as root) put the node's address into the host-edge
  // firewall: the probe on n1 cannot reach a listener on serve's machine.
  assert.equal(by.host_services.result, 'passed', JSON.stringify(by.host_services));
  assert.equal(report.passed, true, r.stdout);
  assert.equal(r.status, 0, r.stderr);
  // The probes are gone from the node: no container, no volume.
  assert.equal(onNode(['ps', '-aq']), '');
  assert.equal(onNode(['volume', 'ls', '-q']), '');
});

test('doctor --node with a name that is no node says so', () => {
  const r = cli(['doctor', '--node', 'nope']);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /node 'nope' does not exist; see 'chat2sbx node list'/);
});

test('node remove takes the node\'s address out of the firewall', () => {
  const r = cli(['node', 'remove', 'n1']);
  assert.equal(r.status, 0, r.stderr);
  const print = cli(['setup', '--print-firewall']);
  assert.ok(!print.stdout.includes(nodeAddress()), print.stdout);
  assert.equal(firewallState(), 'installed', 'the table was written again without the node');
});
