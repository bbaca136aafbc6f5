// Shared by the vm runtime's scenarios (e2e 30 and e2e/vm, issue 15): generous timeouts
// (the guest is emulated on machines without usable KVM; nothing here
// asserts speed) and the CLI of a scenario's server.
import { runCli } from './clones.mjs';

export const VM_CREATE = { timeout: 300_000 };
export const VM_CALL = { timeout: 120_000 };
export const VM_TEST = { timeout: 900_000 };
// The uid QEMU runs as for root's directories (policy.h POLICY_VM_UID).
export const VM_UID = 64099;

// Runs `chat2sbx ARGS` against srv's data root and settings (runCli with a
// vm's patience); returns spawnSync's result with .desc for assertion
// messages.
export function cli(srv, args, { env = {} } = {}) {
  return runCli(srv, args, { env, timeout: 600_000 });
}

// Approves the pending approval of a host path for the server's registry.
export function approve(srv, approvalId) {
  const r = cli(srv, ['approval', 'approve', approvalId]);
  if (r.status !== 0) throw new Error(r.desc);
}

// Runs command with bash in sandbox id and polls it (bash_poll) until it
// has exited or ms passed (serve caps one wait at CHAT2SBX_MAX_YIELD_MS);
// returns {exit_code, status, output} with the whole output.
export async function runToEnd(tools, id, command, ms = 600_000) {
  const deadline = Date.now() + ms;
  let r = await tools.ok('bash', { sandbox_id: id, command, yield_time_ms: 30_000 }, VM_CALL);
  let output = r.output ?? '';
  while (r.status === 'running') {
    if (Date.now() > deadline) throw new Error(`'${command}' still runs after ${ms} ms; output so far: ${output}`);
    r = await tools.ok('bash_poll', { sandbox_id: id, session_id: r.session_id, yield_time_ms: 30_000 }, VM_CALL);
    output += r.output ?? '';
  }
  return { ...r, output };
}
