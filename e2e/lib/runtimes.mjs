// gVisor for the e2e suite: chat2sbx refuses a runsc registered without
// --oci-seccomp (gVisor would ignore the sandbox seccomp profile), so the
// scenarios that run gVisor first make sure the engine's runsc has it. A
// runsc entry that scripts/engine-runtimes.sh wrote before that flag existed
// is upgraded in /etc/docker/daemon.json and the engine is told to reload its
// configuration (SIGHUP: runtimes are re-read, no container is touched; the
// engine is never restarted). Runs under the e2e lock like every scenario.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { REPO_ROOT, dockerRequest } from './server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export const hasOciSeccomp = (rt) => (rt?.runtimeArgs || []).some((a) => /^--?oci-seccomp(=true|=1)?$/.test(a));

// Returns {runsc, why}: the engine's runsc entry once it applies seccomp, or
// null with the reason it is not usable (absent, not upgradable here).
export async function ensureRunscSeccomp() {
  let info = (await dockerRequest('GET', '/info')).body;
  const rt = info?.Runtimes?.runsc;
  if (!rt) {
    return {
      runsc: null,
      why:
        `the engine has no runsc runtime (it has: ${Object.keys(info?.Runtimes || {}).join(', ')}); ` +
        'register it with scripts/ensure-engine.sh when dockerd starts',
    };
  }
  if (hasOciSeccomp(rt)) return { runsc: rt, why: '' };
  const daemonJson = process.env.CHAT2SBX_DAEMON_JSON || '/etc/docker/daemon.json';
  const pidFile = '/var/run/docker.pid';
  if (process.getuid() !== 0 || !fs.existsSync(pidFile)) {
    return { runsc: null, why: `runsc lacks --oci-seccomp and this test cannot re-register it (not root, or no ${pidFile})` };
  }
  const r = spawnSync(path.join(REPO_ROOT, 'scripts', 'engine-runtimes.sh'), [daemonJson], { encoding: 'utf8' });
  console.log(`e2e: ${r.stderr.trim()}`);
  process.kill(Number(fs.readFileSync(pidFile, 'utf8').trim()), 'SIGHUP');
  for (let i = 0; i < 50; i++) {
    info = (await dockerRequest('GET', '/info')).body;
    if (hasOciSeccomp(info?.Runtimes?.runsc)) return { runsc: info.Runtimes.runsc, why: '' };
    await sleep(200);
  }
  return {
    runsc: null,
    why: `runsc still lacks --oci-seccomp after scripts/engine-runtimes.sh and a reload (an operator's own entry in ${daemonJson}?)`,
  };
}
