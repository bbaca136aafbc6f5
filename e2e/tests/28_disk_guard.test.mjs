// e2e 28: a full disk loses nothing (issue 13, disk). serve runs with its
// data root on a small tmpfs the test mounts; a sandbox keeps writing into
// its managed workspace (on that tmpfs) until free space drops below
// CHAT2SBX_MIN_FREE_DISK: new sandboxes are then refused with the numbers,
// the writer is paused and a call on it says why; once the test frees the
// space on the host, the sandbox resumes by itself with its work intact, and
// every registry row and container agrees with the other. Then the disk
// fills to the last block: a change that cannot be put on record is not made
// (read-only calls go on; the CLI's destroy cannot put its removal on record,
// so it removes nothing), destroy and create end consistent, and serve.json,
// lost meanwhile, is written again once there is room.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { tmpfsDataRoot, tmpfsDataRootDone } from '../lib/clones.mjs';
import { BIN, CREATE_TIMEOUT, Server, childEnv, dockerInspect, dockerRequest, resultText } from '../lib/server.mjs';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const root = !process.getuid();
const srv = new Server();
let mnt = null;
let tools = null;

async function waitFor(what, fn, ms = 30_000) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}

before(async () => {
  if (!root) return;
  mnt = await tmpfsDataRoot(srv, 'disk', '128m');
  await srv.start({ env: { CHAT2SBX_MIN_FREE_DISK: '48m' } });
  tools = srv.tools(await srv.client());
});

after(async () => {
  if (!root) return;
  await tmpfsDataRootDone(srv, mnt);
});

const freeMiB = () => {
  const r = spawnSync('df', ['-k', '--output=avail', mnt], { encoding: 'utf8' });
  return Number(r.stdout.trim().split('\n').pop()) / 1024;
};

test('below the watermark: creates refused, the writer paused and told, resumed once space is back', { skip: !root && 'needs root to mount a tmpfs' }, async () => {
  const sbx = await tools.create({});
  const ws = (await tools.ok('workspace_list', {})).workspaces.find((w) => w.workspace_id === sbx.workspace_id);
  assert.ok(ws.path.startsWith(mnt), `the managed workspace is on the tmpfs: ${ws.path}`);
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'keep.txt', content: 'the work so far\n' });
  // 2 MB every 0.2 s until told to stop (or the disk is full).
  const writer = await tools.ok('bash', {
    sandbox_id: sbx.sandbox_id,
    command: 'i=0; while [ ! -e /workspace/stop ]; do head -c 2000000 /dev/zero > /workspace/big.$i || true; i=$((i+1)); sleep 0.2; done; echo stopped',
    yield_time_ms: 0,
  });
  assert.equal(writer.status, 'running');

  // The guard pauses it within a few passes of crossing the watermark.
  const info = await waitFor('the sandbox paused', async () => {
    const c = await dockerInspect(sbx.sandbox_id);
    return c.State.Paused && c;
  });
  assert.ok(info.State.Paused);
  assert.ok(freeMiB() < 48 + 16, `free ${freeMiB()} MiB`);

  const call = await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'echo hi' });
  assert.equal(call.isError, true);
  assert.match(resultText(call), /is paused because the disk holding the data root .* MiB free, below the 48 MiB minimum \(CHAT2SBX_MIN_FREE_DISK\)/);
  const got = await tools.ok('sandbox_get', { sandbox_id: sbx.sandbox_id });
  assert.match(got.paused, /below the 48 MiB minimum/);

  const refused = await tools.call('sandbox_create', {}, CREATE_TIMEOUT);
  assert.equal(refused.isError, true);
  assert.match(resultText(refused), /no sandbox is created while the disk holding the data root/);

  // The person frees the space on the host: the writer is told to stop and
  // its files go.
  fs.writeFileSync(path.join(ws.path, 'stop'), '');
  for (const f of fs.readdirSync(ws.path)) if (f.startsWith('big.')) fs.unlinkSync(path.join(ws.path, f));
  await waitFor('the sandbox resumed', async () => !(await dockerInspect(sbx.sandbox_id)).State.Paused);
  let out = '';
  for (let i = 0; i < 10; i++) {
    const p = await tools.ok('bash_poll', { sandbox_id: sbx.sandbox_id, session_id: writer.session_id, yield_time_ms: 5000 });
    out += p.output;
    if (p.status !== 'running') break;
  }
  assert.match(out, /stopped/, 'the writer went on after the unpause and saw the stop file');
  const kept = await tools.ok('read', { sandbox_id: sbx.sandbox_id, path: 'keep.txt', line_numbers: false });
  assert.equal(kept.content, 'the work so far\n');

  // Creates work again; rows and containers agree.
  const again = await tools.create({});
  await tools.ok('sandbox_destroy', { sandbox_id: again.sandbox_id }, CREATE_TIMEOUT);
  await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  const list = await tools.ok('sandbox_list', {});
  assert.equal(list.sandboxes.filter((s) => s.status === 'running').length, 0);
  const db = path.join(mnt, 'state', 'chat2sbx.sqlite');
  const rows = spawnSync('sqlite3', [db, "SELECT status, count(*) FROM sandboxes GROUP BY status"], { encoding: 'utf8' });
  assert.doesNotMatch(rows.stdout, /creating/, rows.stdout);
  const audit = spawnSync('sqlite3', [db, "SELECT action FROM audit WHERE action LIKE 'sandbox.%pause'"], { encoding: 'utf8' });
  assert.match(audit.stdout, /sandbox\.pause/);
  assert.match(audit.stdout, /sandbox\.unpause/);
  const log = fs.readFileSync(srv.stderrPath, 'utf8');
  assert.match(log, /paused sandbox sbx_\w+: it was writing while the disk holding the data root/);
  assert.match(log, /unpaused sandbox sbx_\w+: the disk has room again/);
});

// Fills the tmpfs to its last block with files named prefix.N (host side).
function fill(prefix) {
  // Large blocks first, then pages (tmpfs allocates 4 KiB pages), so no room
  // is left that a small file such as serve.json would fit in.
  for (const bs of ['64k', '4k']) {
    for (let i = 0; i < 64; i++) {
      const r = spawnSync('dd', ['if=/dev/zero', `of=${path.join(mnt, `${prefix}.${bs}.${i}`)}`, `bs=${bs}`], { encoding: 'utf8' });
      if (/No space left/.test(r.stderr) && freeMiB() < 0.004) break;
    }
  }
}

function sql(query) {
  const r = spawnSync('sqlite3', [path.join(mnt, 'state', 'chat2sbx.sqlite'), query], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout.trim();
}

function status() {
  return spawnSync(BIN, ['status', '--json'], {
    cwd: srv.root,
    env: childEnv({}, path.join(srv.root, 'home'), srv.dataRoot, srv.port),
    encoding: 'utf8',
    timeout: 60_000,
  });
}

async function containersOfThisServe() {
  const all = await dockerRequest('GET', '/containers/json?all=1');
  return all.body.filter((c) => (c.Labels['org.chat2sbx.registry'] || '').startsWith(mnt)).map((c) => c.Names[0].slice(1));
}

test('no room at all: changes that cannot be recorded are not made, reads go on, serve.json comes back', { skip: !root && 'needs root to mount a tmpfs' }, async () => {
  const sbx = await tools.create({});
  await tools.ok('write', { sandbox_id: sbx.sandbox_id, path: 'keep.txt', content: 'kept through a full disk\n' });
  const statePath = path.join(mnt, 'state', 'serve.json');
  assert.ok(fs.existsSync(statePath));

  // Full: the guard gives up its reserve for the registry, and the test
  // takes that room too.
  fill('fill');
  await waitFor('the reserve given up', () => !fs.existsSync(path.join(mnt, 'state', 'disk-reserve')), 20_000);
  fill('fill2');
  // Lost while full: the page it held is taken at once, so serve cannot
  // write it back yet (should serve's 2 s check win the race, again).
  for (let i = 0; i < 3 && fs.existsSync(statePath); i++) {
    fs.unlinkSync(statePath);
    fill(`fill3.${i}`);
    await sleep(2500);
  }
  assert.equal(fs.existsSync(statePath), false, 'no room for serve.json');

  // SQLite may still have room in its write-ahead log for a few rows: call
  // until the audit row of a change cannot be written (a bound keeps it finite).
  let refused = null;
  for (let i = 0; i < 4000 && !refused; i++) {
    const r = await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'true' });
    if (r.isError) refused = resultText(r);
  }
  assert.ok(refused, 'some change must meet the full registry');
  assert.match(refused, /bash was not run: its audit row could not be written .*Free space on the disk holding the state directory/);
  const before = sql("SELECT id, status FROM sandboxes ORDER BY id");
  const containers = await containersOfThisServe();

  // Reads go on; changes are refused and change nothing.
  const list = await tools.ok('sandbox_list', {});
  assert.ok(list.sandboxes.some((s) => s.sandbox_id === sbx.sandbox_id && s.status === 'running'));
  const kept = await tools.ok('read', { sandbox_id: sbx.sandbox_id, path: 'keep.txt', line_numbers: false });
  assert.equal(kept.content, 'kept through a full disk\n');
  const destroy = await tools.call('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  assert.equal(destroy.isError, true);
  assert.match(resultText(destroy), /sandbox_destroy was not run/);
  const create = await tools.call('sandbox_create', {}, CREATE_TIMEOUT);
  assert.equal(create.isError, true, resultText(create));
  // The CLI's destroy has no audit gate in front of it: the removal itself
  // must be put on record ('removing') before the engine is asked, so it is
  // refused with nothing removed (issue 13 item 4).
  const cliDestroy = spawnSync(BIN, ['sandbox', 'destroy', sbx.sandbox_id], {
    cwd: srv.root,
    env: childEnv({}, path.join(srv.root, 'home'), srv.dataRoot, srv.port),
    encoding: 'utf8',
    timeout: 120_000,
  });
  assert.notEqual(cliDestroy.status, 0, cliDestroy.stdout + cliDestroy.stderr);
  assert.match(cliDestroy.stderr, /was not removed: its removal could not be put on record|registry error/, cliDestroy.stderr);
  assert.equal((await dockerInspect(sbx.sandbox_id)).State.Running, true, 'the refused destroy left the sandbox running');
  assert.equal(sql("SELECT id, status FROM sandboxes ORDER BY id"), before, 'no row changed');
  assert.deepEqual((await containersOfThisServe()).sort(), containers.sort(), 'no container made or removed');
  assert.match(fs.readFileSync(srv.stderrPath, 'utf8'), /audit row\(s\) could not be written/);

  // Room again: serve.json is back within a few seconds, calls run.
  for (const f of fs.readdirSync(mnt)) if (f.startsWith('fill')) fs.unlinkSync(path.join(mnt, f));
  await waitFor('serve.json written again', () => fs.existsSync(statePath), 15_000);
  const st = status();
  const s = JSON.parse(st.stdout);
  assert.equal(s.service.running, true, st.stdout + st.stderr);
  assert.equal(s.service.pid, srv.proc.pid, 'status finds this serve again');
  await waitFor('calls run again', async () => !(await tools.call('bash', { sandbox_id: sbx.sandbox_id, command: 'true' })).isError, 20_000);
  await tools.ok('sandbox_destroy', { sandbox_id: sbx.sandbox_id }, CREATE_TIMEOUT);
  assert.equal((await containersOfThisServe()).includes(sbx.sandbox_id), false);
  assert.doesNotMatch(sql("SELECT status FROM sandboxes"), /creating|running/);
  assert.match(fs.readFileSync(srv.stderrPath, 'utf8'), /serve\.json written (now that it can be|again)/);
});
