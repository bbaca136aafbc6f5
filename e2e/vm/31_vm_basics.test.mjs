// 31 (make test-vm): vm sandboxes' workspaces (issue 15): a direct one
// owned by a user is written as that user, with the modes the guest gives,
// and clone mode's read-only source is copied onto the guest's own disk.
// The first boot (kernel, PID 1, bash, files, a managed workspace, destroy)
// is e2e/tests 31, part of `make test`. Never asserts speed: this machine
// has no usable KVM, so the guest is emulated (TCG).
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { useServer } from '../lib/server.mjs';
import { VM_CALL, VM_CREATE, VM_TEST, approve, runToEnd } from '../lib/vm.mjs';

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'vm' } });

// A direct workspace must belong to a user (QEMU never runs as root).
const OWNER = 4321;

ctx.test('a direct workspace is written as its owner, with the modes the guest gives', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const repo = path.join(ctx.srv.root, 'home', 'repositories', 'direct-vm');
  fs.mkdirSync(repo, { recursive: true });
  fs.writeFileSync(path.join(repo, 'README'), 'mine\n');
  let id = null;
  t.after(async () => id && tools.destroyQuietly(id));
  if (process.getuid() === 0) {
    // Root's directory: refused, saying how to give it to its user.
    const ask = await tools.ok('sandbox_create', { workspace_path: repo, workspace_mode: 'direct' }, VM_CREATE);
    assert.equal(ask.status, 'approval_required');
    approve(ctx.srv, ask.approval_id);
    const refused = await tools.call('sandbox_create', { workspace_path: repo, workspace_mode: 'direct' }, VM_CREATE);
    assert.ok(refused.isError, 'a root-owned direct workspace is refused');
    assert.match(refused.content[0].text, /belongs to root.*chown/);
    fs.chownSync(repo, OWNER, OWNER);
    fs.chownSync(path.join(repo, 'README'), OWNER, OWNER);
  } else {
    const ask = await tools.ok('sandbox_create', { workspace_path: repo, workspace_mode: 'direct' }, VM_CREATE);
    approve(ctx.srv, ask.approval_id);
  }
  const sbx = await tools.ok('sandbox_create', { workspace_path: repo, workspace_mode: 'direct' }, VM_CREATE);
  id = sbx.sandbox_id;
  assert.equal(sbx.runtime, 'vm');
  assert.equal(sbx.workspace_mode, 'direct');
  const w = await tools.ok(
    'bash',
    { sandbox_id: id, command: 'cat README; echo x > made; mkdir sub; printf "#!/bin/sh\\n" > sub/run; chmod 750 sub/run; chmod g+s sub; echo done' },
    VM_CALL,
  );
  assert.match(w.output, /^mine\n/, JSON.stringify(w));
  const made = fs.statSync(path.join(repo, 'made'));
  const owner = process.getuid() === 0 ? OWNER : process.getuid();
  assert.equal(made.uid, owner, 'a file the guest made belongs to the directory\'s owner');
  assert.equal(fs.statSync(path.join(repo, 'sub', 'run')).mode & 0o7777, 0o750, 'modes pass through');
  assert.equal(fs.statSync(path.join(repo, 'sub')).mode & 0o6000, 0, 'no setgid directory on the host');
  // The person edits a direct workspace while the sandbox runs: a file the
  // guest has read, rewritten in place on the host, is seen by the next call
  // (9p cache=none; a cached mount served it stale: guest_init.c).
  fs.writeFileSync(path.join(repo, 'README'), 'mine, edited on the host\n');
  const again = await tools.ok('bash', { sandbox_id: id, command: 'cat README' }, VM_CALL);
  assert.equal(again.output, 'mine, edited on the host\n', 'a host edit is seen at once in a direct workspace');
  await tools.ok('sandbox_destroy', { sandbox_id: id }, VM_CREATE);
  id = null;
  assert.equal(fs.readFileSync(path.join(repo, 'made'), 'utf8'), 'x\n', 'direct: the edits are on the host');
});

ctx.test('clone mode: the source is read over 9p, read-only, copied onto the guest\'s own disk', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const repo = path.join(ctx.srv.root, 'home', 'repositories', 'clone-vm');
  fs.mkdirSync(path.join(repo, 'src'), { recursive: true });
  fs.writeFileSync(path.join(repo, 'src', 'main.txt'), 'from the host\n');
  const ask = await tools.ok('sandbox_create', { workspace_path: repo, workspace_mode: 'clone' }, VM_CREATE);
  assert.equal(ask.status, 'approval_required', JSON.stringify(ask));
  approve(ctx.srv, ask.approval_id);
  const sbx = await tools.ok('sandbox_create', { workspace_path: repo, workspace_mode: 'clone' }, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => tools.destroyQuietly(id));
  assert.equal(sbx.runtime, 'vm');
  let r = await runToEnd(tools, id, 'cat /workspace/src/main.txt; touch /.chat2sbx/source/x 2>/dev/null && echo WROTE || echo ro');
  assert.equal(r.output, 'from the host\nro\n', JSON.stringify(r));
  await tools.ok('write', { sandbox_id: id, path: 'src/main.txt', content: 'changed in the guest\n' }, VM_CALL);
  r = await runToEnd(tools, id, 'cat /workspace/src/main.txt; stat -f -c %T /workspace');
  assert.match(r.output, /^changed in the guest\n/);
  assert.doesNotMatch(r.output, /v9fs|9p/, 'the copy is on the guest\'s own disk, not the share');
  assert.equal(fs.readFileSync(path.join(repo, 'src', 'main.txt'), 'utf8'), 'from the host\n', 'the host repo is unchanged');
  assert.ok(!fs.existsSync(path.join(repo, 'x')));
});

ctx.finish();
