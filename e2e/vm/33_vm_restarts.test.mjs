// 33 (make test-vm): a vm sandbox keeps its meaning across restarts.
//   - serve killed and started again re-attaches to the running guest: a
//     bash session started before goes on, files are there;
//   - the engine restarting the container (docker stop, then start) powers
//     the guest off in order and boots it again with its disks: what the
//     model wrote on the guest's own disk and the inner engine's images are
//     kept, the session the reboot interrupted is reported "lost";
//   - the attack of e2e 16 (a direct workspace swapped for a symlink to
//     another directory before the container starts again): the launcher
//     refuses to boot, and the sandbox is failed with the reason.
// Never asserts speed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { dockerInspect, dockerRequest, resultText, useServer } from '../lib/server.mjs';
import { VM_CALL, VM_CREATE, VM_TEST, approve, runToEnd } from '../lib/vm.mjs';

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'vm' } });
const OWNER = 4321;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function restartServe() {
  const srv = ctx.srv;
  for (const c of srv.clients) await c.close().catch(() => {});
  srv.clients.clear();
  srv.proc.kill('SIGKILL');
  await srv.exited;
  await srv.start({ env: srv.env }); // the same settings: CHAT2SBX_RUNTIME=vm
  ctx.generation++;
}

// Retries a bash call while the guest boots again (bounded).
async function bashWhenBack(tools, id, command, ms = 300_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const res = await tools.call('bash', { sandbox_id: id, command, yield_time_ms: 30_000 }, VM_CALL);
    if (!res.isError) {
      let r = JSON.parse(resultText(res));
      let output = r.output ?? '';
      while (r.status === 'running') {
        assert.ok(Date.now() < deadline, `'${command}' still runs: ${output}`);
        r = await tools.ok('bash_poll', { sandbox_id: id, session_id: r.session_id, yield_time_ms: 30_000 }, VM_CALL);
        output += r.output ?? '';
      }
      return { ...r, output };
    }
    const text = resultText(res);
    assert.ok(!/has failed/.test(text), `the sandbox failed: ${text}`);
    assert.ok(Date.now() < deadline, `not back within ${ms} ms: ${text}`);
    await sleep(2000);
  }
}

ctx.test('serve restart re-attaches; a container restart reboots the guest with its disks', VM_TEST, async (t) => {
  let tools = await ctx.tools();
  const sbx = await tools.ok('sandbox_create', {}, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => (await ctx.tools()).destroyQuietly(id));
  assert.equal(sbx.runtime, 'vm');
  const prep = await runToEnd(
    tools,
    id,
    [
        'set -e',
        'echo on-the-root-disk > /root/keep',
        'rm -rf /tmp/r && mkdir -p /tmp/r',
        'cp --parents /bin/dash $(ldd /bin/dash | grep -o "/[^ ]*") /tmp/r/',
        'tar -C /tmp/r -c . | docker import - c2s-kept:1 >/dev/null',
        'echo prepared',
      ].join('\n'),
  );
  assert.equal(prep.exit_code, 0, JSON.stringify(prep));
  const long = await tools.ok('bash', { sandbox_id: id, command: 'for i in $(seq 600); do sleep 1; done', yield_time_ms: 100 }, VM_CALL);
  assert.equal(long.status, 'running');

  await restartServe();
  tools = await ctx.tools();
  const polled = await tools.ok('bash_poll', { sandbox_id: id, session_id: long.session_id, yield_time_ms: 100 }, VM_CALL);
  assert.equal(polled.status, 'running', `the session goes on after serve's restart: ${JSON.stringify(polled)}`);
  const kept = await tools.ok('bash', { sandbox_id: id, command: 'cat /root/keep' }, VM_CALL);
  assert.equal(kept.output, 'on-the-root-disk\n');

  // The engine stops (the launcher powers the guest off) and starts it.
  const r = await dockerRequest('POST', `/containers/${id}/restart?t=20`);
  assert.equal(r.status, 204, JSON.stringify(r.body));
  const back = await bashWhenBack(tools, id, 'cat /root/keep; docker images -q c2s-kept:1 | wc -l');
  assert.equal(back.exit_code, 0, JSON.stringify(back));
  assert.equal(back.output, 'on-the-root-disk\n1\n', 'the guest\'s disk and the inner engine\'s image are kept');
  const lost = await tools.ok('bash_poll', { sandbox_id: id, session_id: long.session_id, yield_time_ms: 100 }, VM_CALL);
  assert.equal(lost.status, 'lost', `the session the reboot interrupted: ${JSON.stringify(lost)}`);
  const info = await dockerInspect(id);
  assert.equal(info.State.Running, true);
  const got = await tools.ok('sandbox_get', { sandbox_id: id }, VM_CALL);
  assert.equal(got.runtime, 'vm', 'a serve restarted with the same settings');
});

ctx.test('a direct workspace swapped before the container starts again: the guest is not booted', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const base = path.join(ctx.srv.root, 'home', 'repositories', 'vm-race');
  const ws = path.join(base, 'ws');
  const outside = path.join(ctx.srv.root, 'outside');
  fs.mkdirSync(ws, { recursive: true });
  fs.mkdirSync(outside, { recursive: true });
  fs.writeFileSync(path.join(ws, 'INSIDE'), 'inside\n');
  fs.writeFileSync(path.join(outside, 'CANARY'), 'vm-canary\n');
  for (const p of [ws, path.join(ws, 'INSIDE'), outside, path.join(outside, 'CANARY')]) fs.chownSync(p, OWNER, OWNER);
  const ask = await tools.ok('sandbox_create', { workspace_path: ws, workspace_mode: 'direct' }, VM_CREATE);
  assert.equal(ask.status, 'approval_required', JSON.stringify(ask));
  approve(ctx.srv, ask.approval_id);
  const sbx = await tools.ok('sandbox_create', { workspace_path: ws, workspace_mode: 'direct' }, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => tools.destroyQuietly(id));
  assert.equal(sbx.runtime, 'vm');
  const env = (await dockerInspect(id)).Config.Env;
  const st = fs.statSync(ws);
  assert.ok(env.includes(`CHAT2SBX_VM_MOUNT=${st.dev}:${st.ino}`), `the launcher is told what to check: ${env}`);
  const first = await tools.ok('bash', { sandbox_id: id, command: 'cat INSIDE' }, VM_CALL);
  assert.equal(first.output, 'inside\n');

  fs.renameSync(ws, path.join(base, 'ws.moved'));
  fs.symlinkSync(outside, ws);
  t.after(() => fs.rmSync(ws, { force: true }));
  const r = await dockerRequest('POST', `/containers/${id}/restart?t=20`);
  assert.equal(r.status, 204, JSON.stringify(r.body));
  let text = '';
  const deadline = Date.now() + 300_000;
  for (;;) {
    const res = await tools.call('bash', { sandbox_id: id, command: 'cat CANARY', yield_time_ms: 5000 }, VM_CALL);
    text = resultText(res);
    assert.ok(!text.includes('vm-canary'), `the restarted sandbox read the other directory: ${text}`);
    assert.equal(res.isError, true, `a command ran in the restarted sandbox: ${text}`);
    if (/has failed/.test(text)) break;
    assert.ok(Date.now() < deadline, `no refusal within 300 s: ${text}`);
    await sleep(1000);
  }
  assert.match(text, /another directory/, text);
  const info = await dockerInspect(id);
  assert.equal(info?.State?.Running, false, `the container is stopped: ${JSON.stringify(info?.State)}`);
});

ctx.finish();
