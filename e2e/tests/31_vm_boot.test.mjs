// 31 (make test, the vm runtime's fast subset; issue 15): one vm sandbox
// boots its own kernel in QEMU inside its container, the helper answers as
// the guest's PID 1, bash and the file tools work, the managed workspace is
// shared over 9p both ways, files the guest makes there belong to the vm
// uid on the host and carry no setuid bit, and destroy leaves nothing. The
// rest of the runtime (direct and clone workspaces, Docker inside,
// restarts, terminals, the pool, doctor) is e2e/vm, `make test-vm`. Never
// asserts speed: machines without usable KVM emulate the guest (TCG).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { dockerInspect, measure, useServer } from '../lib/server.mjs';
import { VM_CALL, VM_CREATE, VM_TEST, VM_UID } from '../lib/vm.mjs';

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'vm' } });

ctx.test('a vm sandbox boots its own kernel, runs bash and the file tools, and goes away', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  let id = null;
  t.after(async () => id && tools.destroyQuietly(id));
  const t0 = Date.now();
  const sbx = await tools.ok('sandbox_create', {}, VM_CREATE);
  id = sbx.sandbox_id;
  const createMs = Date.now() - t0;
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.runtime, 'vm');
  assert.match(sbx.accel, /^(kvm|tcg)$/);
  if (sbx.accel === 'tcg') assert.match(sbx.accel_note || '', /slower/, 'TCG is flagged as slow');

  // The engine ran it with runc, from the vm image, the launcher as PID 1,
  // with every capability dropped but the launcher's few.
  const info = await dockerInspect(sbx.container_id || id);
  assert.equal(info.State.Running, true);
  assert.match(info.Config.Image, /^chat2sbx-vm:/);
  assert.deepEqual(info.Config.Entrypoint, ['/.chat2sbx/vm', 'launch']);
  assert.ok(!info.HostConfig.Runtime || info.HostConfig.Runtime === 'runc', `runtime ${info.HostConfig.Runtime}`);
  assert.deepEqual(info.HostConfig.CapDrop, ['ALL']);
  assert.deepEqual([...info.HostConfig.CapAdd].sort(), ['CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'KILL', 'SETGID', 'SETUID']);
  assert.ok(info.HostConfig.SecurityOpt.some((o) => o.startsWith('seccomp=')), 'the sandbox seccomp profile applies');
  assert.ok(info.HostConfig.SecurityOpt.includes('no-new-privileges'));
  assert.ok(info.HostConfig.Memory > 0 && info.HostConfig.MemorySwap === info.HostConfig.Memory);

  // Its own kernel: not the host's, the helper is PID 1 there, and neither
  // the host's processes nor its engine are visible.
  const t1 = Date.now();
  const u = await tools.ok('bash', { sandbox_id: id, command: 'uname -r; cat /proc/1/comm; ps -e | wc -l; ls /var/run/docker.sock 2>&1 || true' }, VM_CALL);
  const trueMs = Date.now() - t1;
  assert.equal(u.exit_code, 0, JSON.stringify(u));
  const [kernel, comm, nproc] = u.output.split('\n');
  assert.notEqual(kernel, os.release(), 'the guest runs its own kernel');
  assert.equal(comm, 'helper', 'the helper is the guest\'s PID 1');
  assert.ok(Number(nproc) < 200, `only the guest's processes: ${nproc}`);
  const hostPs = await tools.ok('bash', { sandbox_id: id, command: `ps -e -o pid=,comm= | grep -c -E 'dockerd|containerd|chat2sbx$' || true` }, VM_CALL);
  assert.equal(hostPs.output.trim(), '0', `no host daemon visible: ${hostPs.output}`);

  // Files: through the helper and through bash, seen on the host as soon
  // as the call returns (a managed workspace is cached in the guest, 9p
  // cache=loose, but mounted synchronous: guest_init.c).
  const ws = sbx.workspace_path;
  await tools.ok('write', { sandbox_id: id, path: 'hello.txt', content: 'hi from the guest\n' }, VM_CALL);
  const r = await tools.ok('read', { sandbox_id: id, path: 'hello.txt', line_numbers: false }, VM_CALL);
  assert.equal(r.content, 'hi from the guest\n');
  assert.equal(fs.readFileSync(path.join(ws, 'hello.txt'), 'utf8'), 'hi from the guest\n');
  fs.writeFileSync(path.join(ws, 'from-host.txt'), 'host wrote this\n');
  const seen = await tools.ok('bash', { sandbox_id: id, command: 'cat from-host.txt' }, VM_CALL);
  assert.equal(seen.output, 'host wrote this\n', 'a file the host adds is seen at once');
  const t2 = Date.now();
  for (let i = 0; i < 5; i++) await tools.ok('read', { sandbox_id: id, path: 'from-host.txt' }, VM_CALL);
  const readMs = (Date.now() - t2) / 5;
  // A managed workspace of a root serve belongs to the vm uid: so does
  // what the guest's root makes there, and no setuid bit reaches the host.
  const own = await tools.ok('bash', { sandbox_id: id, command: 'mkdir -p d && cp /bin/true d/t && chmod 4755 d/t; echo rc=$?; stat -c %a d/t' }, VM_CALL);
  const st = fs.statSync(path.join(ws, 'd', 't'));
  assert.equal(st.mode & 0o6000, 0, `no setuid/setgid bit on the host: ${st.mode.toString(8)} (${own.output})`);
  if (process.getuid() === 0) {
    assert.equal(st.uid, VM_UID, 'files the guest makes belong to the vm uid, not root');
    assert.equal(fs.statSync(path.join(ws, 'hello.txt')).uid, VM_UID);
  }
  measure({ scenario: '31', vm_create_ms: createMs, vm_bash_ms: trueMs, vm_read_ms: readMs.toFixed(1) });

  // Destroy: the container goes (killed), the workspace stays, with what
  // the guest wrote just before (nothing waited in the guest's cache).
  await tools.ok('bash', { sandbox_id: id, command: 'echo written last > last.txt' }, VM_CALL);
  await tools.ok('sandbox_destroy', { sandbox_id: id }, VM_CREATE);
  assert.equal(await dockerInspect(sbx.container_id || id), null, 'the container is gone');
  assert.ok(fs.existsSync(path.join(ws, 'hello.txt')), 'the managed workspace is kept');
  assert.equal(fs.readFileSync(path.join(ws, 'last.txt'), 'utf8'), 'written last\n', 'the last write reached the host');
  id = null;
});
