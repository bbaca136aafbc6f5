// 06: host workspaces and approvals (docs/workspaces.md "Workspaces, approvals and the
// policy"). A host directory reaches a sandbox only after a person on the
// machine approved it with the CLI; the path policy refuses credential stores
// and anything outside CHAT2SBX_ALLOWED_HOST_ROOTS before an approval is even
// recorded; clone mode never writes to the host, direct mode does; the active
// sandbox limit holds; managed workspaces are retained 30 days, then trashed.
// Everything is checked against the host file system, the registry through the
// CLI, and the engine, not only against what the tools say.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import {
  BIN,
  CREATE_TIMEOUT,
  SANDBOX_ID_RE,
  Server,
  WORKSPACE_ID_RE,
  childEnv,
  dockerInspect,
  dockerRequest,
  resultText,
  useServer,
} from '../lib/server.mjs';

const ctx = useServer();

const APPROVAL_ID_RE = /^approval_[a-z2-7]{20}$/;
const DAY_MS = 24 * 60 * 60 * 1000;

// ---- host side helpers ----

const home = () => path.join(ctx.srv.root, 'home');
const reposRoot = () => path.join(home(), 'repositories');

// A fresh directory under the allowed root (created with its parents).
function hostDir(...parts) {
  const p = path.join(reposRoot(), ...parts);
  fs.mkdirSync(p, { recursive: true });
  return p;
}

// Runs the CLI (same binary, same environment as serve, including the env
// serve was last started with, e.g. the clock offset). Returns the spawnSync
// result plus `desc`, a one-line account for assertion messages.
function cli(args, { env = {} } = {}) {
  const srv = ctx.srv;
  const r = spawnSync(BIN, args, {
    cwd: srv.root,
    env: childEnv({ ...(srv.env || {}), ...env }, home(), srv.dataRoot, srv.port),
    encoding: 'utf8',
    timeout: 30_000,
  });
  r.desc =
    `chat2sbx ${args.join(' ')} -> exit ${r.status}${r.signal ? ` (signal ${r.signal})` : ''}` +
    `${r.error ? ` (${r.error.message})` : ''}; stdout: ${String(r.stdout).slice(0, 1500)}; ` +
    `stderr: ${String(r.stderr).slice(0, 1500)}`;
  return r;
}

// Runs a CLI command that must exit 0 and print JSON; returns the JSON.
function cliJson(args) {
  const r = cli(args);
  assert.equal(r.status, 0, r.desc);
  try {
    return JSON.parse(r.stdout);
  } catch (e) {
    assert.fail(`stdout is not JSON (${e.message}): ${r.desc}`);
  }
}

function approvalList() {
  const list = cliJson(['approval', 'list', '--json']);
  assert.ok(Array.isArray(list), `approval list --json prints a JSON array: ${JSON.stringify(list)}`);
  return list;
}

function git(dir, ...args) {
  const r = spawnSync('git', ['-c', 'user.name=x', '-c', 'user.email=x@y', '-C', dir, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C' },
  });
  assert.equal(r.status, 0, `git ${args.join(' ')} in ${dir}: ${r.stderr}${r.error ? r.error.message : ''}`);
  return r.stdout;
}

// Every file under dir (except .git), relative path -> content.
function filesOf(dir) {
  const out = {};
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.name === '.git') continue;
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out[path.relative(dir, p)] = fs.readFileSync(p, 'utf8');
    }
  };
  walk(dir);
  return out;
}

// What must not change on the host for a clone-mode workspace.
function repoSnapshot(dir) {
  return {
    files: filesOf(dir),
    head: git(dir, 'rev-parse', 'HEAD').trim(),
    refs: git(dir, 'for-each-ref', '--format=%(refname) %(objectname)'),
    status: git(dir, 'status', '--porcelain'),
    branch: git(dir, 'symbolic-ref', 'HEAD').trim(),
  };
}

// Containers of the engine that bind-mount something at or below hostPath.
async function containersMounting(hostPath) {
  const list = await dockerRequest('GET', '/containers/json?all=1');
  return (list.body || [])
    .filter((c) => (c.Mounts || []).some((m) => m.Source === hostPath || String(m.Source || '').startsWith(hostPath + '/')))
    .map((c) => `${(c.Names || [])[0]} ${JSON.stringify(c.Mounts)}`);
}

// ---- MCP side helpers ----

// A command in the sandbox that must exit 0; returns its output (drains a
// session that is still running).
async function sh(tools, sandboxId, command) {
  let r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
  let output = r.output ?? '';
  const deadline = Date.now() + 60_000;
  while (r.status === 'running' || r.has_more_output) {
    assert.ok(Date.now() < deadline, `${command}: still running: ${JSON.stringify(r)}`);
    r = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 5000 });
    output += r.output ?? '';
  }
  assert.equal(r.status, 'exited', `${command}: ${JSON.stringify(r)}`);
  assert.equal(r.exit_code, 0, `${command}: exit ${r.exit_code}; output: ${output}`);
  return output;
}

// sandbox_create for a host path that was never decided: a normal result
// asking for approval, with nothing created.
async function requestApproval(tools, workspacePath, mode) {
  const args = { workspace_path: workspacePath, workspace_mode: mode };
  const res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
  assert.ok(!res.isError, `sandbox_create(${JSON.stringify(args)}) is isError, expected approval_required: ${resultText(res)}`);
  const sc = res.structuredContent ?? JSON.parse(resultText(res));
  assert.equal(sc.status, 'approval_required', `sandbox_create(${JSON.stringify(args)}): ${JSON.stringify(sc)}`);
  assert.match(String(sc.approval_id), APPROVAL_ID_RE, JSON.stringify(sc));
  assert.equal(sc.workspace_path, workspacePath, `workspace_path as given: ${JSON.stringify(sc)}`);
  assert.equal(sc.workspace_mode, mode, JSON.stringify(sc));
  assert.ok(
    String(sc.message).includes(`chat2sbx approval approve ${sc.approval_id}`),
    `message tells the command to run on the host: ${JSON.stringify(sc)}`,
  );
  assert.match(
    String(sc.message),
    new RegExp(`http://127\\.0\\.0\\.1:\\d+/ui/#/approvals/${sc.approval_id}\\b`),
    `message names the owner page's link to this approval, never a login code: ${JSON.stringify(sc)}`,
  );
  assert.ok(!String(sc.message).includes('code='), `no login code in the model's answer: ${JSON.stringify(sc)}`);
  assert.equal(sc.sandbox_id, undefined, `no sandbox for an undecided path: ${JSON.stringify(sc)}`);
  return sc;
}

function approve(approvalId) {
  const a = cliJson(['approval', 'approve', approvalId, '--json']);
  assert.equal(a.approval_id, approvalId, JSON.stringify(a));
  assert.equal(a.status, 'approved', JSON.stringify(a));
  assert.match(String(a.workspace_id), WORKSPACE_ID_RE, JSON.stringify(a));
  return a;
}

function wsRow(list, workspaceId) {
  return (list.workspaces || []).find((w) => w.workspace_id === workspaceId);
}

// ---------------------------------------------------------------------------

ctx.test('host-path policy refusals: isError naming the path and the rule, no approval recorded', async () => {
  const tools = await ctx.tools();
  const root = reposRoot();
  fs.mkdirSync(root, { recursive: true });
  fs.mkdirSync(path.join(root, 'p', '.ssh'), { recursive: true });
  fs.mkdirSync(path.join(home(), '.ssh'), { recursive: true });
  const link = path.join(root, 'keys');
  fs.symlinkSync(path.join(home(), '.ssh'), link);
  const wsBefore = (await tools.ok('workspace_list', {})).workspaces.length;
  const activeBefore = (await tools.ok('sandbox_list', {})).active_count;

  fs.writeFileSync(path.join(root, 'file.txt'), 'not a directory\n');
  const cases = [
    { p: '/etc', rule: /is not below an allowed root/, why: 'outside the allowed roots' },
    { p: '/etc', mode: 'direct', rule: /is not below an allowed root/, why: 'outside the allowed roots (direct)' },
    { p: 'repositories/proj', rule: /is relative/, why: 'relative path' },
    { p: '~/repositories/proj', rule: /is relative|absolute/, why: 'a ~ path' },
    { p: path.join(root, 'no-such-dir'), rule: /does not exist/, why: 'nonexistent' },
    { p: path.join(root, 'file.txt'), rule: /not a directory/, why: 'a file' },
    { p: root, rule: /allowed root itself/, why: 'the root itself' },
    { p: path.join(root, 'p', '.ssh'), rule: /credential directory '\.ssh'/, why: '.ssh component' },
    {
      p: link,
      rule: /credential directory '\.ssh'|is not below an allowed root/,
      why: 'symlink to ~/.ssh',
      names: [link, path.join(home(), '.ssh')],
    },
  ];
  const problems = [];
  for (const c of cases) {
    const args = { workspace_path: c.p, ...(c.mode ? { workspace_mode: c.mode } : {}) };
    const res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
    const text = resultText(res);
    const label = `${c.why}: sandbox_create(${JSON.stringify(args)}) -> isError=${res.isError} ${text.slice(0, 400)}`;
    if (res.isError !== true) {
      problems.push(`${label} (expected isError)`);
      continue;
    }
    const names = c.names || [c.p];
    const missing = [];
    if (!names.some((n) => text.includes(n))) missing.push(`does not name the path ${names.join(' or ')}`);
    if (!c.rule.test(text)) missing.push(`does not name the rule ${c.rule}`);
    if (missing.length) problems.push(`${label} (${missing.join('; ')})`);
  }

  // workspace_path and workspace_id together is an argument error.
  const both = await tools.call('sandbox_create', {
    workspace_path: path.join(root, 'p'),
    workspace_id: 'ws_aaaaaaaaaaaaaaaaaaaa',
  });
  if (both.isError !== true) problems.push(`workspace_path + workspace_id: expected isError, got ${resultText(both).slice(0, 300)}`);

  // Nothing was recorded or started for any of them.
  const refusedPaths = new Set([...cases.map((c) => c.p), path.join(home(), '.ssh'), path.join(root, 'p'), '/etc']);
  try {
    const leaked = approvalList().filter((a) => refusedPaths.has(a.host_path) || refusedPaths.has(a.real_path));
    if (leaked.length) problems.push(`approvals were recorded for refused paths: ${JSON.stringify(leaked)}`);
  } catch (e) {
    problems.push(e.message);
  }
  const wsAfter = (await tools.ok('workspace_list', {})).workspaces.length;
  if (wsAfter !== wsBefore) problems.push(`workspace_list grew from ${wsBefore} to ${wsAfter}`);
  const activeAfter = (await tools.ok('sandbox_list', {})).active_count;
  if (activeAfter !== activeBefore) problems.push(`active_count changed from ${activeBefore} to ${activeAfter}`);
  assert.ok(problems.length === 0, `${problems.length} problem(s):\n${problems.join('\n')}`);
});

ctx.test('clone mode: approval while serve runs, full git history inside, the host repo never changes', async (t) => {
  const srv = ctx.srv;
  // A validating client: approval_required must also fit sandbox_create's outputSchema.
  const tools = srv.tools(await srv.client({ listTools: true, name: 'chat2sbx-e2e-06-clone' }));
  const proj = hostDir('proj');
  git(proj, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(proj, 'a.txt'), 'alpha\n');
  git(proj, 'add', '-A');
  git(proj, 'commit', '-qm', 'first');
  fs.writeFileSync(path.join(proj, 'b.txt'), 'beta\n');
  git(proj, 'add', '-A');
  git(proj, 'commit', '-qm', 'second');
  git(proj, 'checkout', '-qb', 'feature');
  fs.writeFileSync(path.join(proj, 'f.txt'), 'feature\n');
  git(proj, 'add', '-A');
  git(proj, 'commit', '-qm', 'on feature');
  git(proj, 'checkout', '-q', 'main');
  const real = fs.realpathSync(proj);
  const hostLog = git(proj, 'log', '--format=%H %s', 'main');
  const hostLogOneline = git(proj, 'log', '--oneline', '--no-decorate');
  const featureHash = git(proj, 'rev-parse', 'feature').trim();
  const before = repoSnapshot(proj);
  const activeBefore = (await tools.ok('sandbox_list', {})).active_count;

  // ---- undecided: approval_required, nothing mounted ----
  const req = await requestApproval(tools, proj, 'clone');
  const again = await requestApproval(tools, proj, 'clone');
  assert.equal(again.approval_id, req.approval_id, 'repeating the same path+mode returns the same approval_id');
  assert.equal((await tools.ok('sandbox_list', {})).active_count, activeBefore, 'no sandbox for a pending approval');
  assert.deepEqual(await containersMounting(real), [], 'no container mounts the repo before approval');
  const pending = approvalList().find((a) => a.approval_id === req.approval_id);
  assert.ok(pending, `approval list shows ${req.approval_id}: ${JSON.stringify(approvalList())}`);
  assert.equal(pending.status, 'pending', JSON.stringify(pending));
  assert.equal(pending.mode, 'clone', JSON.stringify(pending));
  assert.equal(pending.host_path, proj, JSON.stringify(pending));
  assert.equal(pending.real_path, real, JSON.stringify(pending));
  assert.ok(pending.requested_at, JSON.stringify(pending));

  // ---- approve on the host while serve runs ----
  const ap = approve(req.approval_id);
  assert.equal(ap.mode, 'clone', JSON.stringify(ap));
  const decided = approvalList().find((a) => a.approval_id === req.approval_id);
  assert.equal(decided?.status, 'approved', JSON.stringify(decided));
  assert.equal(decided?.workspace_id, ap.workspace_id, JSON.stringify(decided));
  assert.ok(decided?.decided_at, `decided_at is set: ${JSON.stringify(decided)}`);

  const sbx = await tools.create({ workspace_path: proj, workspace_mode: 'clone' });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  assert.match(String(sbx.sandbox_id), SANDBOX_ID_RE, JSON.stringify(sbx));
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.workspace_mode, 'clone', JSON.stringify(sbx));
  assert.equal(sbx.workspace_id, ap.workspace_id, `the approved workspace is used: ${JSON.stringify(sbx)}`);
  assert.equal(sbx.workspace_path, real, JSON.stringify(sbx));
  assert.equal(sbx.host_path, real, JSON.stringify(sbx));
  assert.equal(sbx.reused, false, JSON.stringify(sbx));

  // ---- the engine: source read-only at /.chat2sbx/source, /workspace is not the host repo ----
  const info = await dockerInspect(sbx.container_id || sbx.sandbox_id);
  const mounts = JSON.stringify(info?.Mounts);
  const src = (info?.Mounts || []).find((m) => m.Destination === '/.chat2sbx/source');
  assert.ok(src, `/.chat2sbx/source is mounted: ${mounts}`);
  assert.equal(src.Source, real, mounts);
  assert.equal(src.RW, false, `the source is mounted read-only: ${mounts}`);
  assert.ok(
    !(info.Mounts || []).some((m) => m.Destination === '/workspace' && (m.Source === real || m.Source.startsWith(real + '/'))),
    `/workspace is not the host repository: ${mounts}`,
  );

  // ---- inside: the whole history and every branch ----
  const inLog = await sh(tools, sbx.sandbox_id, 'cd /workspace && git log --format="%H %s" main');
  assert.equal(inLog, hostLog, 'git log (hashes) inside equals the host');
  const inOneline = await sh(tools, sbx.sandbox_id, 'cd /workspace && git log --oneline --no-decorate');
  assert.equal(inOneline, hostLogOneline, 'git log --oneline inside equals the host');
  const branches = await sh(tools, sbx.sandbox_id, 'cd /workspace && git branch -a');
  assert.match(branches, /feature/, `git branch -a lists feature: ${branches}`);
  const inFeature = await sh(
    tools,
    sbx.sandbox_id,
    'cd /workspace && (git rev-parse -q --verify refs/heads/feature || git rev-parse -q --verify refs/remotes/origin/feature)',
  );
  assert.equal(inFeature.trim(), featureHash, 'the feature branch has the host commit');
  const roProbe = await tools.ok('bash', { sandbox_id: sbx.sandbox_id, command: 'touch /.chat2sbx/source/x 2>&1', yield_time_ms: 20_000 });
  assert.notEqual(roProbe.exit_code, 0, `the source is not writable from inside: ${JSON.stringify(roProbe)}`);

  // ---- edit, add, commit inside ----
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'a.txt', content: 'changed inside\n' });
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'new.txt', content: 'new inside\n' });
  await sh(tools, sbx.sandbox_id, 'cd /workspace && git add -A && git -c user.name=x -c user.email=x@y commit -qm inside');
  const inHead = (await sh(tools, sbx.sandbox_id, 'cd /workspace && git rev-parse HEAD')).trim();
  assert.notEqual(inHead, before.head, 'the commit inside moved HEAD inside');
  assert.deepEqual(repoSnapshot(proj), before, 'the host repository is unchanged after edits and a commit inside');

  // ---- reattach ----
  const byId = await tools.create({ workspace_id: sbx.workspace_id });
  assert.equal(byId.sandbox_id, sbx.sandbox_id, `create {workspace_id} returns the running sandbox: ${JSON.stringify(byId)}`);
  assert.equal(byId.reused, true, JSON.stringify(byId));
  const byPath = await tools.create({ workspace_path: proj, workspace_mode: 'clone' });
  assert.equal(byPath.sandbox_id, sbx.sandbox_id, `create {workspace_path} returns the running sandbox: ${JSON.stringify(byPath)}`);
  assert.equal(byPath.reused, true, JSON.stringify(byPath));

  const ws = wsRow(await tools.ok('workspace_list', {}), sbx.workspace_id);
  assert.equal(ws?.mode, 'clone', JSON.stringify(ws));
  assert.equal(ws?.host_path, real, JSON.stringify(ws));
  assert.equal(ws?.state, 'in_use', JSON.stringify(ws));
  assert.equal(ws?.sandbox_id, sbx.sandbox_id, JSON.stringify(ws));

  // ---- destroy ----
  const d = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  assert.equal(d.status, 'removed', JSON.stringify(d));
  assert.equal(await dockerInspect(info.Id), null, 'the container is gone');
  assert.deepEqual(repoSnapshot(proj), before, 'the host repository is unchanged after destroy');
});

ctx.test('direct mode: the host directory is /workspace, changes appear on the host at once and stay', async (t) => {
  const tools = await ctx.tools();
  const dir = hostDir('direct-dir');
  fs.writeFileSync(path.join(dir, 'existing.txt'), 'one\n');
  const real = fs.realpathSync(dir);

  const req = await requestApproval(tools, dir, 'direct');
  const ap = approve(req.approval_id);
  assert.equal(ap.mode, 'direct', JSON.stringify(ap));
  assert.equal(ap.host_path, real, JSON.stringify(ap));

  const sbx = await tools.create({ workspace_path: dir, workspace_mode: 'direct' });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.workspace_mode, 'direct', JSON.stringify(sbx));
  assert.equal(sbx.workspace_id, ap.workspace_id, JSON.stringify(sbx));
  assert.equal(sbx.workspace_path, real, JSON.stringify(sbx));
  assert.equal(sbx.host_path, real, JSON.stringify(sbx));

  const info = await dockerInspect(sbx.container_id || sbx.sandbox_id);
  const wsMount = (info?.Mounts || []).find((m) => m.Destination === '/workspace');
  assert.equal(wsMount?.Source, real, `the host directory is /workspace: ${JSON.stringify(info?.Mounts)}`);
  assert.equal(wsMount?.RW, true, `read-write: ${JSON.stringify(info?.Mounts)}`);

  const w = await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'from-sandbox.txt', content: 'written inside\n' });
  assert.equal(w.created, true, JSON.stringify(w));
  assert.equal(fs.readFileSync(path.join(dir, 'from-sandbox.txt'), 'utf8'), 'written inside\n', 'write reaches the host');
  await sh(tools, sbx.sandbox_id, "sed -i 's/one/two/' existing.txt && echo three >> /workspace/existing.txt");
  assert.equal(fs.readFileSync(path.join(dir, 'existing.txt'), 'utf8'), 'two\nthree\n', 'bash edit reaches the host');
  fs.writeFileSync(path.join(dir, 'from-host.txt'), 'host side\n');
  const r = await tools.ok('read', { sandbox_id: sbx.sandbox_id, path: 'from-host.txt', line_numbers: false });
  assert.equal(r.content, 'host side\n', 'a host change is visible inside');

  const d = await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  assert.equal(d.status, 'removed', JSON.stringify(d));
  assert.deepEqual(
    filesOf(dir),
    { 'existing.txt': 'two\nthree\n', 'from-sandbox.txt': 'written inside\n', 'from-host.txt': 'host side\n' },
    'host files are kept after destroy',
  );
});

ctx.test('reject: the same path+mode is refused naming the approval; the other mode is a new request', async () => {
  const tools = await ctx.tools();
  const dir = hostDir('rejected');
  fs.writeFileSync(path.join(dir, 'x.txt'), 'x\n');
  let other = null;
  try {
    const req = await requestApproval(tools, dir, 'clone');
    const rj = cli(['approval', 'reject', req.approval_id, '--json']);
    assert.equal(rj.status, 0, rj.desc);
    const rjJson = JSON.parse(rj.stdout);
    assert.equal(rjJson.approval_id, req.approval_id, rj.desc);
    assert.equal(rjJson.status, 'rejected', rj.desc);
    const row = approvalList().find((a) => a.approval_id === req.approval_id);
    assert.equal(row?.status, 'rejected', JSON.stringify(row));

    const res = await tools.call('sandbox_create', { workspace_path: dir, workspace_mode: 'clone' }, CREATE_TIMEOUT);
    const text = resultText(res);
    assert.equal(res.isError, true, `create after reject: ${text}`);
    assert.ok(text.includes(req.approval_id), `names the approval ${req.approval_id}: ${text}`);
    assert.match(text, /rejected/, text);
    assert.deepEqual(await containersMounting(fs.realpathSync(dir)), [], 'nothing mounts the rejected path');

    other = await requestApproval(tools, dir, 'direct');
    assert.notEqual(other.approval_id, req.approval_id, 'the other mode is a separate approval');
    const otherRow = approvalList().find((a) => a.approval_id === other.approval_id);
    assert.equal(otherRow?.status, 'pending', JSON.stringify(otherRow));
    assert.equal(otherRow?.mode, 'direct', JSON.stringify(otherRow));

    const unknown = cli(['approval', 'approve', 'approval_aaaaaaaaaaaaaaaaaaaa', '--json']);
    assert.equal(unknown.status, 3, `unknown approval id: ${unknown.desc}`);
  } finally {
    if (other) cli(['approval', 'reject', other.approval_id]); // leave nothing pending
  }
});

ctx.test('workspace add: registered without an approval step, idempotent, listed by CLI and tool', async (t) => {
  const tools = await ctx.tools();
  const dir = hostDir('added');
  fs.writeFileSync(path.join(dir, 'readme.txt'), 'added\n');
  const real = fs.realpathSync(dir);

  const add = cliJson(['workspace', 'add', dir, '--mode', 'direct', '--json']);
  assert.match(String(add.workspace_id), WORKSPACE_ID_RE, JSON.stringify(add));
  assert.equal(add.mode, 'direct', JSON.stringify(add));
  assert.equal(add.host_path, real, JSON.stringify(add));
  const again = cliJson(['workspace', 'add', dir, '--mode', 'direct', '--json']);
  assert.equal(again.workspace_id, add.workspace_id, `workspace add again returns the same one: ${JSON.stringify(again)}`);
  const refused = cli(['workspace', 'add', '/etc', '--mode', 'direct', '--json']);
  assert.equal(refused.status, 5, `workspace add of a refused path: ${refused.desc}`);

  const sbx = await tools.create({ workspace_id: add.workspace_id });
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  assert.equal(sbx.status, 'running', JSON.stringify(sbx));
  assert.equal(sbx.workspace_mode, 'direct', JSON.stringify(sbx));
  assert.equal(sbx.workspace_path, real, JSON.stringify(sbx));
  const r = await tools.ok('read', { sandbox_id: sbx.sandbox_id, path: 'readme.txt', line_numbers: false });
  assert.equal(r.content, 'added\n');

  const cliRow = cliJson(['workspace', 'list', '--json']).find?.((w) => w.workspace_id === add.workspace_id);
  assert.equal(cliRow?.mode, 'direct', `workspace list --json: ${JSON.stringify(cliRow)}`);
  assert.equal(cliRow?.host_path, real, `workspace list --json: ${JSON.stringify(cliRow)}`);
  assert.equal(cliRow?.sandbox_id, sbx.sandbox_id, `workspace list --json: ${JSON.stringify(cliRow)}`);
  assert.equal(cliRow?.state, 'in_use', `workspace list --json: ${JSON.stringify(cliRow)}`);
  const toolRow = wsRow(await tools.ok('workspace_list', {}), add.workspace_id);
  assert.equal(toolRow?.mode, 'direct', `workspace_list: ${JSON.stringify(toolRow)}`);
  assert.equal(toolRow?.host_path, real, `workspace_list: ${JSON.stringify(toolRow)}`);
  assert.equal(toolRow?.state, 'in_use', `workspace_list: ${JSON.stringify(toolRow)}`);
  assert.ok(
    !approvalList().some((a) => a.real_path === real && a.status === 'pending'),
    'workspace add leaves no pending approval',
  );

  await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  const idle = wsRow(await tools.ok('workspace_list', {}), add.workspace_id);
  assert.equal(idle?.sandbox_id, undefined, `no sandbox after destroy: ${JSON.stringify(idle)}`);
  assert.notEqual(idle?.state, 'in_use', JSON.stringify(idle));
  assert.equal(fs.readFileSync(path.join(dir, 'readme.txt'), 'utf8'), 'added\n', 'host file kept');

  // A registered path+mode counts as approved for workspace_path too.
  const byPath = await tools.create({ workspace_path: dir, workspace_mode: 'direct' });
  t.after(() => tools.destroyQuietly(byPath.sandbox_id));
  assert.equal(byPath.workspace_id, add.workspace_id, `create by path after workspace add: ${JSON.stringify(byPath)}`);
  await tools.ok('sandbox_destroy', { sandbox_id: byPath.sandbox_id }, CREATE_TIMEOUT);
});

ctx.test('the policy is checked again: at approve time (exit 5) and at create time', async (t) => {
  const tools = await ctx.tools();
  const sshDir = path.join(home(), '.ssh');
  fs.mkdirSync(sshDir, { recursive: true });

  // Requested while fine, swapped for a symlink to ~/.ssh before the approval.
  const a = hostDir('swapped-before-approve');
  const req = await requestApproval(tools, a, 'direct');
  fs.renameSync(a, a + '.orig');
  fs.symlinkSync(sshDir, a);
  const refused = cli(['approval', 'approve', req.approval_id, '--json']);
  assert.equal(refused.status, 5, `approve after the path became a link to ~/.ssh: ${refused.desc}`);
  const row = approvalList().find((x) => x.approval_id === req.approval_id);
  assert.notEqual(row?.status, 'approved', `a refused approve approves nothing: ${JSON.stringify(row)}`);
  assert.equal(row?.workspace_id, undefined, `a refused approve creates no workspace: ${JSON.stringify(row)}`);
  cli(['approval', 'reject', req.approval_id]); // leave nothing pending

  // Approved while fine, swapped for a symlink to ~/.ssh before the create.
  const b = hostDir('swapped-before-create');
  const reqB = await requestApproval(tools, b, 'direct');
  const ap = approve(reqB.approval_id);
  fs.renameSync(b, b + '.orig');
  fs.symlinkSync(sshDir, b);
  const activeBefore = (await tools.ok('sandbox_list', {})).active_count;
  for (const args of [{ workspace_id: ap.workspace_id }, { workspace_path: b, workspace_mode: 'direct' }]) {
    const res = await tools.call('sandbox_create', args, CREATE_TIMEOUT);
    const sid = res.structuredContent?.sandbox_id;
    if (sid) t.after(() => tools.destroyQuietly(sid));
    assert.equal(res.isError, true, `sandbox_create(${JSON.stringify(args)}) after the approved dir became a link to ~/.ssh: ${resultText(res)}`);
  }
  assert.equal((await tools.ok('sandbox_list', {})).active_count, activeBefore, 'no sandbox was started');
  assert.deepEqual(await containersMounting(sshDir), [], 'nothing mounts ~/.ssh');
});

ctx.test('CHAT2SBX_MAX_ACTIVE_SANDBOXES=2: the third create is refused until one is destroyed', async () => {
  const srv2 = new Server();
  let ok = false;
  let tools = null;
  const created = [];
  try {
    await srv2.start({ env: { CHAT2SBX_MAX_ACTIVE_SANDBOXES: '2' } });
    tools = srv2.tools(await srv2.client());
    for (let i = 0; i < 2; i++) created.push((await tools.create({})).sandbox_id);
    const third = await tools.call('sandbox_create', {}, CREATE_TIMEOUT);
    const text = resultText(third);
    if (!third.isError && third.structuredContent?.sandbox_id) created.push(third.structuredContent.sandbox_id);
    assert.equal(third.isError, true, `third sandbox_create with a limit of 2: ${text}`);
    assert.match(text, /limit/, text);
    assert.match(text, /2 of 2 active/, text);
    assert.equal((await tools.ok('sandbox_list', {})).active_count, 2, 'still two active');

    await tools.ok('sandbox_destroy', { sandbox_id: created.shift() }, CREATE_TIMEOUT);
    const next = await tools.create({});
    created.push(next.sandbox_id);
    assert.equal(next.status, 'running', JSON.stringify(next));
    ok = true;
  } finally {
    for (const id of created) await tools?.destroyQuietly(id);
    const st = await srv2.stop();
    await srv2.cleanupContainers();
    if (ok && !st.killed && (st.code === 0 || st.signal === 'SIGTERM')) {
      await srv2.removeRoot();
    } else {
      console.log(`---- second serve stderr (stop: ${JSON.stringify(st)}; root ${srv2.root}) ----\n${srv2.stderrTail(60)}\n----`);
    }
  }
});

ctx.test('retention: managed workspace retained 30 days, then trashed; host workspaces never move', async (t) => {
  let tools = await ctx.tools();
  const srv = ctx.srv;
  const created = [];
  t.after(async () => {
    const tl = await ctx.tools().catch(() => null);
    for (const id of created) await tl?.destroyQuietly(id);
  });
  const restart = async (env) => {
    const st = await srv.stop();
    assert.ok(!st.killed && (st.code === 0 || st.signal === 'SIGTERM'), `serve stopped cleanly: ${JSON.stringify(st)}`);
    await srv.start({ env });
    ctx.generation++; // the shared client belonged to the old process
    return ctx.tools();
  };

  // A managed workspace with a file, released.
  const sbx = await tools.create({});
  created.push(sbx.sandbox_id);
  const wsId = sbx.workspace_id;
  const wsPath = sbx.workspace_path;
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'keep.txt', content: 'kept for 30 days\n' });
  await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);

  let row = wsRow(await tools.ok('workspace_list', {}), wsId);
  assert.equal(row?.state, 'retained', `released managed workspace: ${JSON.stringify(row)}`);
  const released = Date.parse(row.released_at);
  const trashAt = Date.parse(row.trash_at);
  assert.ok(Number.isFinite(released) && Number.isFinite(trashAt), `released_at/trash_at are times: ${JSON.stringify(row)}`);
  assert.ok(Math.abs(trashAt - released - 30 * DAY_MS) < 60_000, `trash_at = released_at + 30 d: ${JSON.stringify(row)}`);
  assert.ok(Math.abs(released - Date.now()) < 10 * 60_000, `released_at is about now: ${JSON.stringify(row)}`);

  // Retained: can still be attached.
  const back = await tools.create({ workspace_id: wsId });
  created.push(back.sandbox_id);
  assert.equal(back.reused, false, JSON.stringify(back));
  assert.equal((await tools.ok('read', { sandbox_id: back.sandbox_id, path: 'keep.txt', line_numbers: false })).content, 'kept for 30 days\n');
  row = wsRow(await tools.ok('workspace_list', {}), wsId);
  assert.equal(row?.state, 'in_use', `attached again: ${JSON.stringify(row)}`);
  await tools.ok('sandbox_destroy', { sandbox_id: back.sandbox_id }, CREATE_TIMEOUT);

  // A host (direct) workspace, used and released.
  const hostWs = hostDir('retain-direct');
  fs.writeFileSync(path.join(hostWs, 'host.txt'), 'host\n');
  const add = cliJson(['workspace', 'add', hostWs, '--mode', 'direct', '--json']);
  const hs = await tools.create({ workspace_id: add.workspace_id });
  created.push(hs.sandbox_id);
  await tools.ok('sandbox_destroy', { sandbox_id: hs.sandbox_id }, CREATE_TIMEOUT);

  // 31 days later.
  try {
    tools = await restart({ CHAT2SBX_CLOCK_OFFSET_MS: String(31 * DAY_MS) });
    const deadline = Date.now() + 15_000;
    for (;;) {
      row = wsRow(await tools.ok('workspace_list', {}), wsId);
      if (row?.state === 'trashed' || Date.now() > deadline) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    assert.equal(row?.state, 'trashed', `31 days after release (checked for 15 s after start): ${JSON.stringify(row)}`);
    assert.ok(row.trashed_at, `trashed_at is set: ${JSON.stringify(row)}`);
    assert.ok(!fs.existsSync(wsPath), `${wsPath} is gone`);
    assert.ok(!fs.existsSync(path.join(srv.dataRoot, 'workspaces', wsId)), `DATA_ROOT/workspaces/${wsId} is gone`);
    const trashRoot = path.join(srv.dataRoot, 'trash');
    const listing = fs.existsSync(trashRoot) ? fs.readdirSync(trashRoot) : '(no trash dir)';
    const inTrash = path.join(trashRoot, wsId, 'keep.txt');
    assert.ok(fs.existsSync(inTrash), `${inTrash} exists; DATA_ROOT/trash: ${JSON.stringify(listing)}`);
    assert.equal(fs.readFileSync(inTrash, 'utf8'), 'kept for 30 days\n');

    const cliRow = cliJson(['workspace', 'list', '--json']).find?.((w) => w.workspace_id === wsId);
    assert.equal(cliRow?.state, 'trashed', `workspace list --json: ${JSON.stringify(cliRow)}`);

    const activeBefore = (await tools.ok('sandbox_list', {})).active_count;
    const att = await tools.call('sandbox_create', { workspace_id: wsId }, CREATE_TIMEOUT);
    if (!att.isError && att.structuredContent?.sandbox_id) created.push(att.structuredContent.sandbox_id);
    assert.equal(att.isError, true, `attaching a trashed workspace: ${resultText(att)}`);
    assert.equal((await tools.ok('sandbox_list', {})).active_count, activeBefore, 'no sandbox for a trashed workspace');

    const hostRow = wsRow(await tools.ok('workspace_list', {}), add.workspace_id);
    assert.ok(hostRow, `the host workspace is listed: ${JSON.stringify(hostRow)}`);
    assert.notEqual(hostRow.state, 'trashed', `host workspace: ${JSON.stringify(hostRow)}`);
    assert.equal(fs.readFileSync(path.join(hostWs, 'host.txt'), 'utf8'), 'host\n', 'the host directory stays in place');
    assert.ok(!fs.existsSync(path.join(trashRoot, add.workspace_id)), 'the host workspace is not in the trash');
  } finally {
    // Back to the real clock for whatever follows (a failure here is reported
    // by ctx.finish, not allowed to hide the assertion above).
    await restart({}).catch((e) => console.log(`e2e 06: restart without the clock offset: ${e.message}`));
  }
});

ctx.finish();
