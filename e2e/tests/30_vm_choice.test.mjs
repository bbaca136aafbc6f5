// 30: the vm runtime's fast checks in `make test` (issue 15); its slow
// scenarios (boots under TCG, Docker inside) are e2e/vm, `make test-vm`.
// Here: the runtime auto chooses is the one this machine can use (vm only
// with hardware virtualization and the vm image; containers otherwise, so
// nothing else in the suite changes), status and setup say so and why, and
// a vm runtime that cannot work refuses to serve with what to do, instead
// of failing every create later.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { test } from 'node:test';

import { Server, useServer } from '../lib/server.mjs';
import { cli } from '../lib/vm.mjs';

// What this machine offers, read as serve reads it (guard/vm.c).
const cpuVirt = /^flags\s*:.*\b(vmx|svm)\b/m.test(fs.readFileSync('/proc/cpuinfo', 'utf8'));
let kvmOpens = false;
try {
  fs.closeSync(fs.openSync('/dev/kvm', 'r+'));
  kvmOpens = true;
} catch {}
const kvmUsable = cpuVirt && kvmOpens;

const ctx = useServer({});

ctx.test('auto: without usable hardware virtualization sandboxes stay containers, and status says why', async (t) => {
  if (kvmUsable) {
    t.skip('this machine has usable KVM: auto may choose vm here (e2e/vm covers it)');
    return;
  }
  const tools = await ctx.tools();
  const sbx = await tools.create();
  t.after(async () => tools.destroyQuietly(sbx.sandbox_id));
  assert.notEqual(sbx.runtime, 'vm', JSON.stringify(sbx));
  assert.equal(sbx.accel, undefined, 'no accelerator for a container');

  const st = cli(ctx.srv, ['status', '--json']);
  const o = JSON.parse(st.stdout);
  assert.equal(o.runtime.chosen_by, 'auto', st.desc);
  assert.notEqual(o.runtime.name, 'vm', st.desc);
  assert.equal(o.runtime.hardware_virtualization, cpuVirt);
  assert.match(o.runtime.why, /no usable hardware virtualization/, st.desc);
  const text = cli(ctx.srv, ['status']);
  assert.match(text.stdout, /^RUNTIME\s+\S+\s+containers \(chosen automatically\); no usable hardware/m, text.desc);
});

ctx.test('status shows the vm runtime, its acceleration and the TCG warning', async () => {
  const env = { CHAT2SBX_RUNTIME: 'vm', CHAT2SBX_VM_ACCEL: 'tcg', CHAT2SBX_VM_IMAGE: 'chat2sbx-vm:e2e-absent' };
  const st = cli(ctx.srv, ['status', '--json'], { env });
  const o = JSON.parse(st.stdout);
  assert.equal(o.runtime.name, 'vm', st.desc);
  assert.equal(o.runtime.chosen_by, 'CHAT2SBX_RUNTIME');
  assert.equal(o.runtime.accel, 'tcg');
  assert.match(o.runtime.warning, /many times slower/);
  assert.equal(o.runtime.vm_image_present, false);
  const text = cli(ctx.srv, ['status'], { env });
  assert.match(text.stdout, /^RUNTIME\s+vm\s+microVMs, acceleration tcg, image chat2sbx-vm:e2e-absent MISSING \(make template-vm\); WARNING: TCG/m, text.desc);
  // The ENGINE line names the runtime that runs the vm's container, not "vm".
  assert.doesNotMatch(text.stdout, /NOT registered/, text.desc);
});

ctx.test('kvm asked for where it is not usable: status says what is missing', async (t) => {
  if (kvmUsable) {
    t.skip('this machine has usable KVM');
    return;
  }
  const st = cli(ctx.srv, ['status', '--json'], { env: { CHAT2SBX_RUNTIME: 'vm', CHAT2SBX_VM_ACCEL: 'kvm' } });
  const o = JSON.parse(st.stdout);
  assert.match(o.runtime.error, /CHAT2SBX_VM_ACCEL is kvm, but .*(vmx|\/dev\/kvm).*CHAT2SBX_VM_ACCEL=auto/, st.desc);
});

// A serve of its own (another data root) for each refusal.
async function refused(env, pattern) {
  const srv = new Server();
  try {
    await assert.rejects(srv.start({ env }), (e) => {
      assert.match(e.message, /exited before listening/);
      assert.match(e.message, pattern);
      return true;
    });
  } finally {
    await srv.stop().catch(() => {});
    await srv.removeRoot().catch(() => {});
  }
}

test('serve refuses the vm runtime without its image, naming make template-vm', async () => {
  await refused(
    { CHAT2SBX_RUNTIME: 'vm', CHAT2SBX_VM_ACCEL: 'tcg', CHAT2SBX_VM_IMAGE: 'chat2sbx-vm:e2e-absent' },
    /vm image 'chat2sbx-vm:e2e-absent' is not in the engine; build it with 'make template-vm'/,
  );
});

test('serve refuses CHAT2SBX_VM_ACCEL=kvm where KVM is not usable, and a word that is no accelerator', async (t) => {
  await refused({ CHAT2SBX_RUNTIME: 'vm', CHAT2SBX_VM_ACCEL: 'qemu' }, /CHAT2SBX_VM_ACCEL 'qemu' is not one of auto, kvm, tcg/);
  if (kvmUsable) {
    t.diagnostic('usable KVM here: the kvm refusal is not reachable');
    return;
  }
  await refused({ CHAT2SBX_RUNTIME: 'vm', CHAT2SBX_VM_ACCEL: 'kvm' }, /CHAT2SBX_VM_ACCEL is kvm, but/);
});

ctx.finish();
