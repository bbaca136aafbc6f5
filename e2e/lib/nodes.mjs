// nodes.mjs: a test node for the e2e/nodes suite: a second dockerd in a
// network namespace of its own, with mutual TLS and, when asked, the
// template image (e2e/nodes/engine.sh), started before the file's tests and
// stopped (link healed first) after them.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before } from 'node:test';

import { REPO_ROOT } from './server.mjs';

export const ENGINE = path.join(REPO_ROOT, 'e2e', 'nodes', 'engine.sh');
export const IMAGE =
  process.env.CHAT2SBX_TEMPLATE_IMAGE ||
  `chat2sbx-template:${spawnSync('cat', [path.join(REPO_ROOT, 'VERSION')], { encoding: 'utf8' }).stdout.trim()}`;

// KEY=value lines engine.sh prints (ENDPOINT, SOCK, CA, CERT, KEY, DIR) as an object.
export function parseFacts(out) {
  const facts = {};
  for (const line of out.split('\n')) {
    const m = /^([A-Z]+)=(.*)$/.exec(line);
    if (m) facts[m[1]] = m[2];
  }
  return facts;
}

// Registers before/after hooks for node number n (10.231.n.0/24); returns
// the object the facts are put into once the engine runs.
export function useNodeEngine(n, { image = true } = {}) {
  const node = {};
  before(() => {
    spawnSync(ENGINE, ['stop', n], { stdio: 'ignore' }); // a killed run's leftovers
    const args = image ? ['start', n, '--image', IMAGE] : ['start', n];
    Object.assign(node, parseFacts(execFileSync(ENGINE, args, { encoding: 'utf8', timeout: 240_000 })));
  });
  after(() => {
    spawnSync(ENGINE, ['heal', n], { stdio: 'ignore' });
    spawnSync(ENGINE, ['stop', n], { stdio: 'inherit' });
  });
  return node;
}
