// A test node for e2e/nodes scenarios (issue 28): one extra Docker Engine
// made by e2e/nodes/engine.sh in a network namespace, with the template
// image loaded, started before the scenario and removed after it.
import { execFileSync, spawnSync } from 'node:child_process';
import path from 'node:path';
import { after, before } from 'node:test';

import { REPO_ROOT } from './server.mjs';

export const ENGINE = path.join(REPO_ROOT, 'e2e', 'nodes', 'engine.sh');
export const IMAGE = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${spawnSync('cat', [path.join(REPO_ROOT, 'VERSION')], { encoding: 'utf8' }).stdout.trim()}`;

// Registers the hooks for engine number n (10.231.n.0/24); the object
// returned is filled with its facts (ENDPOINT, SOCK, CA, CERT, KEY, DIR)
// once it runs. About 15 s with the image.
export function useNodeEngine(n) {
  const facts = {};
  before(() => {
    spawnSync(ENGINE, ['stop', n], { stdio: 'ignore' }); // a killed run's leftovers
    const out = execFileSync(ENGINE, ['start', n, '--image', IMAGE], { encoding: 'utf8', timeout: 240_000 });
    for (const line of out.split('\n')) {
      const m = /^([A-Z]+)=(.*)$/.exec(line);
      if (m) facts[m[1]] = m[2];
    }
  });
  after(() => {
    spawnSync(ENGINE, ['stop', n], { stdio: 'inherit' });
  });
  return facts;
}
