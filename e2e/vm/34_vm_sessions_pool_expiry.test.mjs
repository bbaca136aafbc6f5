// 34 (make test-vm): what the product does besides bash works the same in
// vm sandboxes (issue 15, item 4):
//   - network: false boots a guest with no interface but loopback, and
//     nothing outside answers it;
//   - interactive input and a terminal (a pty in the guest, sized);
//   - the warm pool keeps a booted guest ready, and a create takes it;
//   - the work of a clone sandbox is saved before its removal (issue 14):
//     destroy saves a git bundle of what the model committed and left
//     uncommitted, idle expiry saves a tar of a plain copy, and `chat2sbx
//     export apply` brings the branch home; a managed vm sandbox idle past
//     the timeout is removed, its workspace kept.
// Never asserts speed.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';

import { git } from '../lib/clones.mjs';
import { dockerInspect, dockerRequest, LABEL_REGISTRY, useServer } from '../lib/server.mjs';
import { VM_CALL, VM_CREATE, VM_TEST, cli, runToEnd } from '../lib/vm.mjs';

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'vm' } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const GITID = 'git -c user.name=model -c user.email=model@sandbox';

function cliJson(args) {
  const r = cli(ctx.srv, args);
  assert.equal(r.status, 0, r.desc);
  return JSON.parse(r.stdout);
}

// Restarts serve with extra settings (the vm runtime kept).
async function restartServe(extra = {}) {
  const srv = ctx.srv;
  for (const c of srv.clients) await c.close().catch(() => {});
  srv.clients.clear();
  await srv.stop();
  await srv.start({ env: { CHAT2SBX_RUNTIME: 'vm', ...extra } });
  ctx.generation++;
}

// A registered clone workspace under the approved roots: a git repository
// with one commit, or (plain) a directory of files.
function hostDir(name, { plain = false } = {}) {
  const dir = path.join(ctx.srv.root, 'home', 'repositories', name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\n');
  if (!plain) {
    git(dir, 'init', '-q', '-b', 'main');
    git(dir, 'add', '-A');
    git(dir, 'commit', '-qm', 'first');
  }
  const r = cli(ctx.srv, ['workspace', 'add', dir, '--mode', 'clone']);
  assert.equal(r.status, 0, r.desc);
  return dir;
}

async function cloneSandbox(tools, dir) {
  const sbx = await tools.ok('sandbox_create', { workspace_path: dir, workspace_mode: 'clone' }, VM_CREATE);
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.runtime, 'vm');
  if (sbx.copy_session_id) {
    let r;
    do r = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: sbx.copy_session_id, yield_time_ms: 30_000 }, VM_CALL);
    while (r.status === 'running');
  }
  return sbx;
}

ctx.test('network: false: the guest has loopback only and reaches nothing', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.ok('sandbox_create', { network: false }, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => (await ctx.tools()).destroyQuietly(id));
  assert.equal(sbx.runtime, 'vm');
  assert.equal(sbx.network, false, JSON.stringify(sbx));
  const info = await dockerInspect(id);
  assert.equal(info.HostConfig.NetworkMode, 'none', 'the container has no network either');
  const r = await runToEnd(
    tools,
    id,
    "ls /sys/class/net | tr '\\n' ' '; echo; ip -o -4 addr show | awk '{print $2}' | tr '\\n' ' '; echo; " +
      '(exec 3<>/dev/tcp/10.0.2.2/80) 2>/dev/null && echo REACHED-10.0.2.2 || echo no-route; ' +
      'getent hosts localhost >/dev/null && echo lo-ok',
  );
  assert.equal(r.exit_code, 0, JSON.stringify(r));
  const [ifaces, addrs, reach, lo] = r.output.split('\n');
  assert.equal(ifaces.trim(), 'lo', `only loopback in the guest: ${r.output}`);
  assert.equal(addrs.trim(), 'lo');
  assert.equal(reach, 'no-route', 'QEMU\'s user-mode gateway is not there');
  assert.equal(lo, 'lo-ok');
});

ctx.test('interactive input and a terminal in the guest', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.ok('sandbox_create', {}, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => (await ctx.tools()).destroyQuietly(id));
  const py = await tools.ok(
    'bash',
    { sandbox_id: id, command: "python3 -c 'print(\"got\", input())'", interactive: true, yield_time_ms: 2000 },
    VM_CALL,
  );
  assert.equal(py.status, 'running', JSON.stringify(py));
  const w = await tools.ok('bash_input', { sandbox_id: id, session_id: py.session_id, data: 'hello\n' }, VM_CALL);
  assert.equal(w.bytes_written, 6);
  let out = py.output;
  let last = py;
  for (let i = 0; i < 30 && last.status === 'running'; i++) {
    last = await tools.ok('bash_poll', { sandbox_id: id, session_id: py.session_id, yield_time_ms: 5000 }, VM_CALL);
    out += last.output;
  }
  assert.equal(out, 'got hello\n');
  assert.equal(last.exit_code, 0);

  const tty = await tools.ok('bash', { sandbox_id: id, command: 'tty; stty size', tty: true, rows: 30, cols: 100, yield_time_ms: 30_000 }, VM_CALL);
  assert.match(tty.output, /\/dev\/pts\/\d+/, JSON.stringify(tty));
  assert.match(tty.output, /30 100/);
  // A full-screen-style program reads keys from the terminal.
  const rd = await tools.ok('bash', { sandbox_id: id, command: 'read -n 1 k; echo "key=$k"', tty: true, yield_time_ms: 2000 }, VM_CALL);
  assert.equal(rd.status, 'running', JSON.stringify(rd));
  await tools.ok('bash_input', { sandbox_id: id, session_id: rd.session_id, data: 'q' }, VM_CALL);
  let text = rd.output;
  let end = rd;
  for (let i = 0; i < 30 && end.status === 'running'; i++) {
    end = await tools.ok('bash_poll', { sandbox_id: id, session_id: rd.session_id, yield_time_ms: 5000 }, VM_CALL);
    text += end.output;
  }
  assert.match(text, /key=q/, text);
});

ctx.test('the warm pool keeps a booted guest; a create takes it', VM_TEST, async (t) => {
  await restartServe({ CHAT2SBX_WARM_POOL: '1' });
  t.after(async () => restartServe());
  const filters = encodeURIComponent(JSON.stringify({ label: [`${LABEL_REGISTRY}=${path.join(ctx.srv.dataRoot, 'state', 'chat2sbx.sqlite')}`, 'org.chat2sbx.pool=1'] }));
  let members = [];
  const deadline = Date.now() + 300_000;
  for (;;) {
    const r = await dockerRequest('GET', `/containers/json?filters=${filters}`);
    members = (r.body || []).filter((c) => c.State === 'running');
    // Ready: its guest booted and its helper answered (serve says so).
    if (members.length >= 1 && ctx.srv.stderrTail(400).includes(`warm pool: sandbox ${members[0].Labels['org.chat2sbx.sandbox']} ready`)) break;
    assert.ok(Date.now() < deadline, 'the pool holds a running member within 300 s');
    await sleep(1000);
  }
  assert.match(members[0].Image, /^chat2sbx-vm:/, 'the member is a vm sandbox');
  const pooled = members[0].Labels['org.chat2sbx.sandbox'];
  const tools = await ctx.tools();
  // The member's guest has booted: its helper answered, so the create is a claim.
  const sbx = await tools.ok('sandbox_create', {}, VM_CREATE);
  t.after(async () => (await ctx.tools()).destroyQuietly(sbx.sandbox_id));
  assert.equal(sbx.sandbox_id, pooled, 'the create took the warm member');
  assert.equal(sbx.runtime, 'vm');
  const r = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'cat /proc/1/comm; echo pooled > p.txt; cat p.txt' }, VM_CALL);
  assert.equal(r.output, 'helper\npooled\n');
});

ctx.test('clone work is saved before removal: destroy (git bundle), idle expiry (tar); apply brings it home', VM_TEST, async (t) => {
  let tools = await ctx.tools();
  const repo = hostDir('vm-saved');
  const plainDir = hostDir('vm-saved-plain', { plain: true });
  const a = await cloneSandbox(tools, repo);
  t.after(async () => (await ctx.tools()).destroyQuietly(a.sandbox_id));
  const w = await runToEnd(
    tools,
    a.sandbox_id,
    `set -e; cd /workspace; git checkout -qb vm-work; echo from-the-guest > b.txt; git add b.txt; ${GITID} commit -qm 'made in the vm'; echo dirty >> a.txt; echo new > untracked.txt; echo done`,
  );
  assert.equal(w.exit_code, 0, JSON.stringify(w));
  const destroyed = await tools.ok('sandbox_destroy', { sandbox_id: a.sandbox_id }, VM_CREATE);
  assert.equal(destroyed.status, 'removed', JSON.stringify(destroyed));
  assert.equal(destroyed.export?.kind, 'git', JSON.stringify(destroyed));
  assert.equal(destroyed.export.commits_ahead, 1);
  assert.equal(destroyed.export.dirty_files, 2, 'a.txt modified, untracked.txt new');
  assert.equal(await dockerInspect(a.sandbox_id), null, 'the container is gone after the save');
  const applied = cliJson(['export', 'apply', destroyed.export.export_id, '--json']);
  assert.ok(JSON.stringify(applied).includes('vm-work'), JSON.stringify(applied));
  assert.equal(git(repo, 'show', `refs/remotes/chat2sbx/${a.sandbox_id}/vm-work:b.txt`), 'from-the-guest\n');
  assert.equal(git(repo, 'rev-parse', '--abbrev-ref', 'HEAD').trim(), 'main', 'the host checkout is untouched');

  // A plain copy and a managed sandbox, both left idle past the timeout.
  const b = await cloneSandbox(tools, plainDir);
  t.after(async () => (await ctx.tools()).destroyQuietly(b.sandbox_id));
  const m = await tools.ok('sandbox_create', {}, VM_CREATE);
  t.after(async () => (await ctx.tools()).destroyQuietly(m.sandbox_id));
  await runToEnd(tools, b.sandbox_id, 'echo written-in-the-vm > /workspace/new.txt');
  await tools.ok('write', { sandbox_id: m.sandbox_id, path: 'kept.txt', content: 'kept\n' }, VM_CALL);
  await restartServe({ CHAT2SBX_CLOCK_OFFSET_MS: String(25 * 3600 * 1000) });
  t.after(async () => restartServe());
  tools = await ctx.tools();
  // The expiry pass runs at start; the saves boot nothing new (both run).
  let gb, gm;
  const deadline = Date.now() + 600_000;
  for (;;) {
    gb = await tools.ok('sandbox_get', { sandbox_id: b.sandbox_id }, VM_CALL);
    gm = await tools.ok('sandbox_get', { sandbox_id: m.sandbox_id }, VM_CALL);
    if (gb.status === 'removed' && gm.status === 'removed') break;
    assert.ok(Date.now() < deadline, `not expired within 600 s: ${gb.status}, ${gm.status}`);
    await sleep(2000);
  }
  assert.equal(await dockerInspect(b.sandbox_id), null);
  assert.equal(await dockerInspect(m.sandbox_id), null);
  const ws = (await tools.ok('workspace_list', {})).workspaces.find((x) => x.workspace_id === m.workspace_id);
  assert.equal(fs.readFileSync(path.join(ws.path, 'kept.txt'), 'utf8'), 'kept\n', 'the managed workspace is kept');
  const exp = cliJson(['export', 'list', '--json']).find((x) => x.sandbox_id === b.sandbox_id);
  assert.ok(exp, 'the plain copy was saved before its removal');
  assert.equal(exp.kind, 'tar', JSON.stringify(exp));
  assert.match(exp.reason, /expir|idle/, JSON.stringify(exp));
  const to = path.join(ctx.srv.root, 'plain-home');
  const put = cli(ctx.srv, ['export', 'apply', exp.export_id, '--to', to]);
  assert.equal(put.status, 0, put.desc);
  assert.equal(fs.readFileSync(path.join(to, 'new.txt'), 'utf8'), 'written-in-the-vm\n', 'the tar holds the guest\'s file');
});

ctx.finish();
