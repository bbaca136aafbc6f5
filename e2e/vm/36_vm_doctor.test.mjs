// 36 (make test-vm): `chat2sbx doctor` with the vm runtime (issue 15, item
// 4): its attacks run in a guest, and what a guest's own kernel answers
// (its root's capabilities, its memory, its own /run/docker.sock) is asked
// of QEMU and its container instead: QEMU runs unprivileged under a
// seccomp filter in a container with a memory ceiling, the guest's socket
// is the guest's own engine, and the container's services refuse the guest
// at QEMU's gateway. Every attack fails; the probes leave nothing behind.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { dockerRequest, LABEL_REGISTRY, useServer } from '../lib/server.mjs';
import { VM_TEST, cli } from '../lib/vm.mjs';

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'vm' } });

async function containersOf(srv) {
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL_REGISTRY}=${path.join(srv.dataRoot, 'state', 'chat2sbx.sqlite')}`] }));
  const r = await dockerRequest('GET', `/containers/json?all=1&filters=${filters}`);
  return r.body || [];
}

ctx.test('doctor attacks from inside a guest and every attack fails', VM_TEST, async () => {
  fs.mkdirSync(path.join(ctx.srv.root, 'home', 'repositories'), { recursive: true }); // the git attack's root
  const before = (await containersOf(ctx.srv)).length;
  const r = cli(ctx.srv, ['doctor', '--json']);
  const d = JSON.parse(r.stdout || '{}');
  const byName = Object.fromEntries((d.checks || []).map((c) => [c.name, c]));
  for (const name of ['docker_socket', 'host_files', 'host_environment', 'credentials', 'privileges', 'pids_limit',
    'memory_limit', 'setuid_files', 'host_services', 'vm_container_services', 'network_off', 'direct_git'])
    assert.equal(byName[name]?.result, 'passed', `${name}: ${JSON.stringify(byName[name])}; ${r.desc}`);
  assert.equal(r.status, 0, r.desc);
  assert.equal(d.passed, true);
  // The vm judgments are QEMU's and the guest engine's, not the guest root's.
  assert.match(byName.privileges.detail, /QEMU runs as uid \d+ with no capabilities/);
  assert.match(byName.docker_socket.detail, /the guest's socket is its own engine/);
  assert.match(byName.memory_limit.detail, /container ceiling \d+ MiB/);
  assert.match(byName.vm_container_services.detail, /10\.0\.2\.2/);
  assert.equal((await containersOf(ctx.srv)).length, before, 'the probes are removed');
});

ctx.finish();
