// 03 (make test-nodes): serve's health loop over a real node (issue 28,
// "Health and failure"; controlplane/node/health.c). engine.sh starts a
// second dockerd in a network namespace; the CLI adds it while serve runs.
// Taking the namespace's veth link down makes `node list` say down within
// seconds and serve log which node stopped answering; bringing it up makes
// it ready again. A drained node stays drained through a cut and after it.
// Needs root (namespaces), no MCP client, no image.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { BIN, REPO_ROOT, Server, childEnv } from '../lib/server.mjs';

const ENGINE = path.join(REPO_ROOT, 'e2e', 'nodes', 'engine.sh');
const N = process.env.E2E_HEALTH_NODE_NUMBER || '63';
// Two misses 2 s apart, each ping bounded by 2 s, plus a pass under way.
const DOWN_WITHIN_MS = 15_000;

const srv = new Server();
let env = {};
let node = {}; // ENDPOINT, CA, CERT, KEY as engine.sh prints them

function cli(args) {
  const r = spawnSync(BIN, args, { env, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `chat2sbx ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

const n1 = () => JSON.parse(cli(['node', 'show', 'n1', '--json']));

// Polls node show until pred holds (at most ms); returns the last view.
async function waitFor(pred, ms, what) {
  const deadline = Date.now() + ms;
  let v = n1();
  while (!pred(v) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 250));
    v = n1();
  }
  assert.ok(pred(v), `${what} within ${ms} ms: ${JSON.stringify(v)}`);
  return v;
}

const serveLog = () => fs.readFileSync(srv.stderrPath, 'utf8');
const downLines = () => serveLog().split('\n').filter((l) => /node 'n1' \(tcp:\/\/10\.231\.\d+\.2:2376\) has not answered for \d+ ms/.test(l));

before(async () => {
  spawnSync(ENGINE, ['stop', N], { stdio: 'ignore' }); // a killed run's leftovers
  const out = execFileSync(ENGINE, ['start', N], { encoding: 'utf8', timeout: 120_000 });
  for (const line of out.split('\n')) {
    const m = /^([A-Z]+)=(.*)$/.exec(line);
    if (m) node[m[1]] = m[2];
  }
  await srv.start();
  env = childEnv({}, path.join(srv.root, 'home'), srv.dataRoot, srv.port);
});

after(async () => {
  spawnSync(ENGINE, ['heal', N], { stdio: 'ignore' });
  await srv.stop();
  spawnSync(ENGINE, ['stop', N], { stdio: 'inherit' });
  if (srv.root && !process.env.E2E_KEEP) fs.rmSync(srv.root, { recursive: true, force: true });
});

test('a node added while serve runs is probed: its last contact moves on', async () => {
  cli(['node', 'add', 'n1', node.ENDPOINT, '--tls-ca', node.CA, '--tls-cert', node.CERT, '--tls-key', node.KEY]);
  const added = n1();
  assert.equal(added.state, 'ready');
  // The loop's first contact is written at once (then every 10 s).
  await waitFor((v) => v.last_contact > added.last_contact, 10_000, 'serve records a contact');
  assert.equal(downLines().length, 0);
});

test('a node cut off the network is down within seconds, and ready again when it answers', async () => {
  const t0 = Date.now();
  execFileSync(ENGINE, ['cut', N]);
  const down = await waitFor((v) => v.state === 'down', DOWN_WITHIN_MS, 'node list says down');
  const ms = Date.now() - t0;
  assert.equal(downLines().length, 1, 'serve says which node stopped answering, once');
  execFileSync(ENGINE, ['heal', N]);
  const back = await waitFor((v) => v.state === 'ready', 10_000, 'ready again after the heal');
  assert.ok(back.last_contact > down.last_contact, 'the answer is recorded');
  assert.match(serveLog(), /node 'n1' \(tcp:\/\/[0-9.:]+\) answers again/);
  test.diagnostic?.(`down after ${ms} ms`);
});

test('a drained node stays drained through a cut and after it', async () => {
  cli(['node', 'drain', 'n1']);
  execFileSync(ENGINE, ['cut', N]);
  // The loop saw it stop answering (a second line) but left the drain.
  const deadline = Date.now() + DOWN_WITHIN_MS;
  while (downLines().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 250));
  assert.equal(downLines().length, 2, 'the loop noticed the cut');
  assert.equal(n1().state, 'draining');
  execFileSync(ENGINE, ['heal', N]);
  await new Promise((r) => setTimeout(r, 5000));
  assert.equal(n1().state, 'draining', 'an outage never undoes a drain');
  cli(['node', 'resume', 'n1']);
  assert.equal(n1().state, 'ready');
  cli(['node', 'remove', 'n1']);
});
