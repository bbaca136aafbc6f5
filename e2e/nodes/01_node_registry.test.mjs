// 01 (make test-nodes): another Docker Engine as a node (issue 28, the
// foundation). engine.sh starts a second dockerd in a network namespace with
// a --tlsverify listener on 10.231.N.2:2376 and a CA of its own; then the CLI:
// `node add` proves it over mutual TLS and records its labels from /info;
// a wrong CA, a client certificate the engine does not trust, plain TCP and
// an unreachable port are refused with the reason and leave nothing behind;
// drain, resume and remove change what `node list` says, and remove takes
// the TLS files with it. Needs root (namespaces), no MCP client, no image.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { BIN, REPO_ROOT, childEnv } from '../lib/server.mjs';

const ENGINE = path.join(REPO_ROOT, 'e2e', 'nodes', 'engine.sh');
// The namespace's number: 10.231.N.0/24 (MACHINE-NOTES: free on these machines).
const N = process.env.E2E_NODE_NUMBER || '61';

let root = '';
let env = {};
let node = {}; // ENDPOINT, CA, CERT, KEY, DIR as engine.sh prints them

function cli(args) {
  const r = spawnSync(BIN, args, { env, encoding: 'utf8', timeout: 60_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

function tls(ca = node.CA, cert = node.CERT, key = node.KEY) {
  return ['--tls-ca', ca, '--tls-cert', cert, '--tls-key', key];
}

function nodesDir() {
  return path.join(root, 'data', 'state', 'nodes');
}

before(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-nodes-'));
  fs.mkdirSync(path.join(root, 'home'));
  env = childEnv({}, path.join(root, 'home'), path.join(root, 'data'), 1);
  // A stale namespace of a killed run is removed first.
  spawnSync(ENGINE, ['stop', N], { stdio: 'ignore' });
  const out = execFileSync(ENGINE, ['start', N], { encoding: 'utf8', timeout: 120_000 });
  for (const line of out.split('\n')) {
    const m = /^([A-Z]+)=(.*)$/.exec(line);
    if (m) node[m[1]] = m[2];
  }
  assert.match(node.ENDPOINT, /^tcp:\/\/10\.231\.\d+\.2:2376$/);
  // A second CA and a client certificate it signed: what a wrong set looks like.
  const other = path.join(root, 'other');
  fs.mkdirSync(other);
  const ossl = (args) => execFileSync('openssl', args, { cwd: other, stdio: 'ignore' });
  ossl(['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=other CA', '-keyout', 'ca-key.pem', '-out', 'ca.pem']);
  ossl(['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=intruder', '-keyout', 'key.pem', '-out', 'c.csr']);
  fs.writeFileSync(path.join(other, 'c.ext'), 'extendedKeyUsage=clientAuth\n');
  ossl(['x509', '-req', '-in', 'c.csr', '-CA', 'ca.pem', '-CAkey', 'ca-key.pem', '-CAcreateserial', '-days', '1', '-extfile', 'c.ext', '-out', 'cert.pem']);
  node.OTHER = other;
});

after(() => {
  spawnSync(ENGINE, ['stop', N], { stdio: 'inherit' });
  if (root && !process.env.E2E_KEEP) fs.rmSync(root, { recursive: true, force: true });
});

test('with no node added, node list shows only this machine\'s engine as local', () => {
  const r = cli(['node', 'list', '--json']);
  assert.equal(r.status, 0, r.stderr);
  const list = JSON.parse(r.stdout);
  assert.equal(list.length, 1);
  assert.equal(list[0].name, 'local');
  assert.equal(list[0].implicit, true);
  assert.equal(list[0].state, 'ready');
});

test('a wrong CA, an untrusted client certificate, plain TCP and a closed port are refused with the reason', () => {
  const o = node.OTHER;
  const cases = [
    { args: [node.ENDPOINT, ...tls(path.join(o, 'ca.pem'))], status: 5, words: /does not trust.*--tls-ca/ },
    { args: [node.ENDPOINT, ...tls(node.CA, path.join(o, 'cert.pem'), path.join(o, 'key.pem'))], status: 5, words: /refused chat2sbx's client certificate/ },
    { args: [node.ENDPOINT], status: 2, words: /plain TCP without TLS is refused/ },
    { args: [node.ENDPOINT.replace('tcp://', 'http://'), ...tls()], status: 2, words: /tcp:\/\/HOST:PORT/ },
    { args: [node.ENDPOINT.replace(':2376', ':2375'), ...tls()], status: 6, words: /cannot reach the Docker Engine/ },
    { args: [node.ENDPOINT, ...tls(node.CA, node.KEY, node.CERT)], status: 2, words: /client certificate or key .* cannot be used/ },
  ];
  for (const c of cases) {
    const r = cli(['node', 'add', 'n1', ...c.args]);
    assert.equal(r.status, c.status, `${c.args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, c.words);
    assert.doesNotMatch(r.stderr, /BEGIN|PRIVATE KEY/, 'never a file\'s bytes');
  }
  const bad = cli(['node', 'add', 'Bad_Name', node.ENDPOINT, ...tls()]);
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /node name 'Bad_Name'/);
  assert.ok(!fs.existsSync(path.join(nodesDir(), 'n1')), 'a refused add leaves no files');
  const list = JSON.parse(cli(['node', 'list', '--json']).stdout);
  assert.equal(list.length, 1, 'and no row');
});

test('node add proves the engine over mutual TLS and records its labels from /info', () => {
  const t0 = Date.now();
  const r = cli(['node', 'add', 'n1', node.ENDPOINT, ...tls()]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /added node n1 at tcp:\/\/10\.231\./);
  const ms = Date.now() - t0;
  const dir = path.join(nodesDir(), 'n1');
  assert.equal(fs.statSync(dir).mode & 0o777, 0o700);
  for (const f of ['ca.pem', 'cert.pem', 'key.pem']) {
    assert.equal(fs.statSync(path.join(dir, f)).mode & 0o777, 0o600, f);
  }
  assert.deepEqual(fs.readFileSync(path.join(dir, 'key.pem')), fs.readFileSync(node.KEY));

  const list = JSON.parse(cli(['node', 'list', '--json']).stdout);
  const n1 = list.find((n) => n.name === 'n1');
  assert.ok(n1, JSON.stringify(list));
  assert.equal(n1.endpoint, node.ENDPOINT);
  assert.equal(n1.state, 'ready');
  assert.match(n1.runtimes, /\brunc\b/);
  assert.ok(n1.memory_bytes > 1 << 30, JSON.stringify(n1));
  assert.ok(n1.cpus >= 1, JSON.stringify(n1));
  assert.match(n1.engine_version, /^\d+\.\d+/);
  assert.ok(n1.last_contact, JSON.stringify(n1));
  assert.equal(n1.sandboxes, 0);
  assert.equal(n1.tls_dir, dir);
  assert.doesNotMatch(JSON.stringify(list), /BEGIN/, 'never a file\'s bytes');
  const show = JSON.parse(cli(['node', 'show', 'n1', '--json']).stdout);
  assert.equal(show.name, 'n1');
  // What one sandbox gets there, derived from the node's own memory
  // (one per 2 GiB, 2 to 32; half its memory, at most 8 GiB), and its
  // sandboxes' processes together within 3/4 of the assumed pid_max 32768.
  const GIB = 2 ** 30;
  const limit = Math.min(32, Math.max(2, Math.floor(n1.memory_bytes / (2 * GIB))));
  assert.equal(show.limits.sandbox_limit, limit, JSON.stringify(show.limits));
  assert.equal(show.limits.default_memory_bytes,
    Math.min(8 * GIB, Math.floor(n1.memory_bytes / 2 / 2 ** 20) * 2 ** 20));
  assert.ok(show.limits.pids_cap * limit <= 24576, JSON.stringify(show.limits));
  assert.ok(show.limits.pids_default >= 16 && show.limits.pids_default <= show.limits.pids_cap);

  const again = cli(['node', 'add', 'n1', node.ENDPOINT, ...tls()]);
  assert.equal(again.status, 4, 'a duplicate name: CONFLICT');
  assert.match(again.stderr, /exists already/);
  const same = cli(['node', 'add', 'n2', node.ENDPOINT, ...tls()]);
  assert.equal(same.status, 4, 'the same endpoint twice: CONFLICT');
  assert.match(same.stderr, /node 'n1' already has the endpoint/);
  assert.ok(!fs.existsSync(path.join(nodesDir(), 'n2')));
  console.log(`# node add over mutual TLS: ${ms} ms`);
});

test('drain, resume and remove; remove takes the TLS files', () => {
  let r = cli(['node', 'drain', 'n1']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /draining/);
  assert.equal(JSON.parse(cli(['node', 'show', 'n1', '--json']).stdout).state, 'draining');
  r = cli(['node', 'resume', 'n1']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(cli(['node', 'show', 'n1', '--json']).stdout).state, 'ready');
  // 'local' drains and resumes like any node (its state is kept in the
  // registry); it cannot be removed.
  r = cli(['node', 'drain', 'local']);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /node local is draining/);
  assert.equal(JSON.parse(cli(['node', 'show', 'local', '--json']).stdout).state, 'draining');
  assert.equal(JSON.parse(cli(['node', 'list', '--json']).stdout).find((n) => n.name === 'local').state, 'draining');
  r = cli(['node', 'resume', 'local']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(JSON.parse(cli(['node', 'show', 'local', '--json']).stdout).state, 'ready');
  r = cli(['node', 'remove', 'local']);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /this machine's engine: it cannot be removed/);
  r = cli(['node', 'remove', 'n1']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(!fs.existsSync(path.join(nodesDir(), 'n1')), 'its TLS files are gone');
  r = cli(['node', 'show', 'n1']);
  assert.equal(r.status, 3, 'NOT_FOUND');
  const list = JSON.parse(cli(['node', 'list', '--json']).stdout);
  assert.deepEqual(list.map((n) => n.name), ['local']);
});
