// 16: a host workspace swapped while it is being mounted (security report:
// a direct-mode sandbox swaps a directory of another workspace's path for a
// symlink to the outside between chat2sbx's check and the engine's mount).
// Two defences are tested:
//   (b) nesting: a host workspace inside a direct-mode one, or a direct-mode
//       one around another, is refused at approval, at `workspace add` and at
//       mount time, so no sandbox can write a component of another
//       workspace's path. The reporter's recipe (a sandbox swapping `sub`
//       with renameat2 RENAME_EXCHANGE every 30 ms) is run against it;
//   (a) identity: a path swapped by someone else (here the test process, a
//       tight renameat2 loop on the host, which the nesting rule cannot see)
//       is either refused before the mount (policy, openat2 without
//       symlinks) or after it (the helper's fs.stat of /workspace differs
//       from the directory that was checked); no created sandbox ever sees
//       the outside directory.
// Only behaviour is asserted: which attempts hit which defence depends on
// timing and is only reported.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { BIN, CREATE_TIMEOUT, childEnv, dockerInspect, dockerRequest, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();

const CANARY = 'chat2sbx-mount-race-canary-8d1f';
const home = () => path.join(ctx.srv.root, 'home');
const reposRoot = () => path.join(home(), 'repositories');

// Outside every allowed root: what must never be mounted.
function outsideDir() {
  const d = path.join(ctx.srv.root, 'outside');
  fs.mkdirSync(d, { recursive: true });
  fs.writeFileSync(path.join(d, 'CANARY'), `${CANARY}\n`);
  return d;
}

function cli(args) {
  const srv = ctx.srv;
  const r = spawnSync(BIN, args, {
    cwd: srv.root,
    env: childEnv(srv.env || {}, home(), srv.dataRoot, srv.port),
    encoding: 'utf8',
    timeout: 30_000,
  });
  r.desc =
    `chat2sbx ${args.join(' ')} -> exit ${r.status}; stdout: ${String(r.stdout).slice(0, 800)}; ` +
    `stderr: ${String(r.stderr).slice(0, 800)}`;
  return r;
}

function cliJson(args) {
  const r = cli(args);
  assert.equal(r.status, 0, r.desc);
  return JSON.parse(r.stdout);
}

async function requestApproval(tools, p, mode) {
  const res = await tools.call('sandbox_create', { workspace_path: p, workspace_mode: mode }, CREATE_TIMEOUT);
  assert.ok(!res.isError, `request ${p} (${mode}): ${resultText(res)}`);
  const sc = res.structuredContent ?? JSON.parse(resultText(res));
  assert.equal(sc.status, 'approval_required', JSON.stringify(sc));
  return sc.approval_id;
}

async function sh(tools, sandboxId, command) {
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
  assert.equal(r.status, 'exited', `${command}: ${JSON.stringify(r)}`);
  return r;
}

// One create attempt; returns {kind, text, sandboxId}. A created sandbox is
// checked for the canary and destroyed.
async function attempt(tools, p, mode, seen) {
  const res = await tools.call('sandbox_create', { workspace_path: p, workspace_mode: mode }, CREATE_TIMEOUT);
  const text = resultText(res);
  if (res.isError) return { kind: 'refused', text };
  const sc = res.structuredContent ?? JSON.parse(text);
  if (!sc.sandbox_id) return { kind: sc.status || 'no sandbox', text };
  const target = mode === 'clone' ? '/.chat2sbx/source' : '/workspace';
  const r = await tools.ok('bash', {
    sandbox_id: sc.sandbox_id,
    command: `cat ${target}/CANARY /workspace/CANARY 2>/dev/null; ls -a ${target} | head -20; test -S ${target}/docker.sock && echo ENGINE-SOCKET; true`,
    yield_time_ms: 30_000,
  });
  seen.push({ sandbox: sc.sandbox_id, output: r.output ?? '' });
  await tools.ok('sandbox_destroy', { sandbox_id: sc.sandbox_id }, CREATE_TIMEOUT);
  return { kind: 'created', text: r.output ?? '' };
}

// gVisor (runsc) shows its own device and inode numbers for a bind mount,
// so the identity check (a) only runs under runc; there only (b) holds
// (docs/workspaces.md).
const RUNTIME = process.env.CHAT2SBX_RUNTIME || '';
const IDENTITY_SKIP = RUNTIME && RUNTIME !== 'runc' ? `the identity check does not apply to runtime ${RUNTIME}` : false;

const REFUSAL_RE =
  /changed while it was being mounted|now resolves to|is not below an allowed root|does not exist|lies inside|changed while it was being checked|cannot be resolved at/;

ctx.test('(b) the reporter recipe: a workspace inside a direct-mode one is refused; the swap loop reaches nothing', async (t) => {
  const tools = await ctx.tools();
  const outside = outsideDir();
  const proj = path.join(reposRoot(), 'proj');
  fs.mkdirSync(proj, { recursive: true });
  cliJson(['approval', 'approve', await requestApproval(tools, proj, 'direct'), '--json']);
  const p = await tools.create({ workspace_path: proj, workspace_mode: 'direct' });
  t.after(() => tools.destroyQuietly(p.sandbox_id));
  await sh(tools, p.sandbox_id, `mkdir -p /workspace/sub && ln -sfn ${outside} /workspace/swap`);

  // Approval time.
  const sub = path.join(proj, 'sub');
  const subApproval = await requestApproval(tools, sub, 'direct');
  const refused = cli(['approval', 'approve', subApproval, '--json']);
  assert.notEqual(refused.status, 0, `approving a directory inside a direct workspace: ${refused.desc}`);
  assert.match(refused.stderr + refused.stdout, /lies inside .*direct-mode workspace 'ws_/, refused.desc);
  // workspace add, in either mode.
  for (const mode of ['direct', 'clone']) {
    const add = cli(['workspace', 'add', sub, '--mode', mode, '--json']);
    assert.notEqual(add.status, 0, `workspace add inside a direct workspace (${mode}): ${add.desc}`);
    assert.match(add.stderr + add.stdout, /lies inside/, add.desc);
  }
  // A direct-mode ancestor of an existing workspace.
  const outer = path.join(reposRoot(), 'outer');
  const inner = path.join(outer, 'inner');
  fs.mkdirSync(inner, { recursive: true });
  cliJson(['workspace', 'add', inner, '--mode', 'clone', '--json']);
  const anc = cli(['workspace', 'add', outer, '--mode', 'direct', '--json']);
  assert.notEqual(anc.status, 0, anc.desc);
  assert.match(anc.stderr + anc.stdout, /contains .*inner/, anc.desc);

  // The swap loop of the report, in P, then creates of sub.
  const loop = await tools.ok('bash', {
    sandbox_id: p.sandbox_id,
    command:
      'python3 -c \'import ctypes,time\nl=ctypes.CDLL(None,use_errno=True)\n' +
      'while True:\n l.renameat2(-100,b"/workspace/sub",-100,b"/workspace/swap",2)\n time.sleep(0.03)\'',
    yield_time_ms: 500,
  });
  assert.equal(loop.status, 'running', JSON.stringify(loop));
  const seen = [];
  const kinds = {};
  for (let i = 0; i < 20; i++) {
    const a = await attempt(tools, sub, 'direct', seen);
    kinds[a.kind] = (kinds[a.kind] || 0) + 1;
    if (a.kind === 'refused') assert.match(a.text, REFUSAL_RE, a.text);
  }
  await tools.call('bash_stop', { sandbox_id: p.sandbox_id, session_id: loop.session_id });
  console.log(`recipe attempts: ${JSON.stringify(kinds)}`);
  for (const s of seen) assert.ok(!s.output.includes(CANARY), `sandbox ${s.sandbox} sees the outside: ${s.output}`);
  cli(['approval', 'reject', subApproval]);
});

ctx.test('(a) a path swapped from the host while it is mounted: refused or verified, never the outside', { skip: IDENTITY_SKIP }, async (t) => {
  const tools = await ctx.tools();
  const outside = outsideDir();
  const seen = [];
  const kinds = {};
  const refusals = [];
  for (const mode of ['direct', 'clone']) {
    const race = path.join(reposRoot(), `race-${mode}`);
    const ws = path.join(race, 'ws');
    const alt = path.join(race, 'alt');
    fs.mkdirSync(ws, { recursive: true });
    fs.writeFileSync(path.join(ws, 'INSIDE'), 'inside\n');
    fs.symlinkSync(outside, alt);
    cliJson(['approval', 'approve', await requestApproval(tools, ws, mode), '--json']);
    // A tight RENAME_EXCHANGE loop of ws and alt in a child process.
    const swapper = spawn(
      'python3',
      [
        '-c',
        'import ctypes,sys\nl=ctypes.CDLL(None,use_errno=True)\na=sys.argv[1].encode();b=sys.argv[2].encode()\n' +
          'while True:\n l.renameat2(-100,a,-100,b,2)\n',
        ws,
        alt,
      ],
      { stdio: 'ignore' },
    );
    t.after(() => swapper.kill('SIGKILL'));
    try {
      for (let i = 0; i < 12; i++) {
        const a = await attempt(tools, ws, mode, seen);
        kinds[`${mode} ${a.kind}`] = (kinds[`${mode} ${a.kind}`] || 0) + 1;
        if (a.kind === 'refused') {
          assert.match(a.text, REFUSAL_RE, a.text);
          refusals.push(a.text);
        }
      }
    } finally {
      swapper.kill('SIGKILL');
    }
  }
  console.log(`host swap attempts: ${JSON.stringify(kinds)}`);
  const mounted = refusals.filter((x) => /changed while it was being mounted/.test(x));
  for (const x of mounted) assert.match(x, /(nothing was mounted|was removed before anything ran in it); try again/, x);
  const afterStart = mounted.filter((x) => / sees .* at \/(workspace|\.chat2sbx\/source)/.test(x));
  console.log(
    `refused: ${refusals.length}; by the mount check: ${mounted.length} ` +
      `(after the container started, fs.stat mismatch: ${afterStart.length}; before it, openat2: ${mounted.length - afterStart.length})`,
  );
  for (const s of seen) {
    assert.ok(!s.output.includes(CANARY), `sandbox ${s.sandbox} sees the outside directory: ${s.output}`);
    assert.ok(!s.output.includes('ENGINE-SOCKET'), `sandbox ${s.sandbox} sees an engine socket: ${s.output}`);
  }
  // Every refusal after a container existed removed it: no container of
  // this run is left but those destroyed above (cleanupContainers would
  // report leftovers); the registry lists no live sandbox.
  const list = await tools.ok('sandbox_list', {});
  const live = (list.sandboxes || []).filter((s) => s.status === 'running' || s.status === 'creating');
  assert.deepEqual(live, [], `no sandbox is left from the refused creates: ${JSON.stringify(list)}`);
});

ctx.test('(a) a container restarted onto another directory: the re-attach refuses it, stops it, marks it failed', { skip: IDENTITY_SKIP }, async (t) => {
  const tools = await ctx.tools();
  const outside = outsideDir();
  const base = path.join(reposRoot(), 'restart');
  const ws = path.join(base, 'ws');
  fs.mkdirSync(ws, { recursive: true });
  fs.writeFileSync(path.join(ws, 'INSIDE'), 'inside\n');
  cliJson(['approval', 'approve', await requestApproval(tools, ws, 'direct'), '--json']);
  const sbx = await tools.create({ workspace_path: ws, workspace_mode: 'direct' });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const first = await sh(tools, sbx.sandbox_id, 'cat /workspace/INSIDE');
  assert.match(first.output, /inside/);

  // On the host: the directory is moved away and replaced with a symlink to
  // the outside; then the engine starts the container again (it resolves
  // the bind source anew).
  fs.renameSync(ws, path.join(base, 'ws.moved'));
  fs.symlinkSync(outside, ws);
  const r = await dockerRequest('POST', `/containers/${sbx.sandbox_id}/restart?t=0`);
  assert.ok(r.status === 204, `restart: ${JSON.stringify(r)}`);

  // The next call re-attaches; until the container runs again it may say
  // "retry" (UNAVAILABLE); then it must refuse for good.
  let text = '';
  const deadline = Date.now() + 60_000;
  for (;;) {
    const res = await tools.call('bash', {
      sandbox_id: sbx.sandbox_id,
      command: 'cat /workspace/CANARY',
      yield_time_ms: 5000,
    });
    text = resultText(res);
    assert.ok(!text.includes(CANARY), `the restarted sandbox ran a command on the outside directory: ${text}`);
    assert.equal(res.isError, true, `a command ran in the restarted sandbox: ${text}`);
    if (/has failed/.test(text)) break;
    assert.ok(Date.now() < deadline, `no refusal within 60 s: ${text}`);
    await new Promise((res2) => setTimeout(res2, 500));
  }
  assert.match(text, /mounted another directory/, text);
  assert.match(text, /changed while it was being mounted/, text);
  const info = await dockerInspect(sbx.sandbox_id);
  assert.equal(info?.State?.Running, false, `the container is stopped: ${JSON.stringify(info?.State)}`);
  const list = await tools.ok('sandbox_list', {});
  const row = (list.sandboxes || []).find((x) => x.sandbox_id === sbx.sandbox_id);
  assert.equal(row?.status, 'failed', JSON.stringify(row));
  fs.unlinkSync(ws);
});
