// e2e 22: only the owner gets in (issue 12). The MCP endpoint is a Unix
// socket for serve's own user (and root) and a loopback TCP port that wants
// the bearer token of STATE_DIR/token. Attacked here as another local user
// would: a second Unix account (made and removed by the test) tries the
// port without the token, tries to read the token, tries the socket, and
// tries the socket again after its file permissions were opened by mistake
// (the peer-uid check must still hold). The owner's token works, a wrong one
// gets 401 with a JSON-RPC body saying where the token is, /.well-known
// stays 404 and every OAuth path says where the token is (the MCP Inspector
// CLI, at a terminal, starts OAuth on a 401 and must print that, issue 25),
// and CHAT2SBX_MCP_TOKEN=off turns the check off with warnings.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

import { BIN, REPO_ROOT, Server, childEnv, connectClient, rawPost, useServer } from '../lib/server.mjs';

const ctx = useServer();

// One HTTP request over the Unix socket; resolves {status, text} or
// {error} when the connection ended without an answer.
function socketPost(socketPath, body, headers = {}) {
  return new Promise((resolve) => {
    const data = Buffer.from(JSON.stringify(body));
    const req = http.request(
      {
        socketPath,
        method: 'POST',
        path: '/mcp',
        headers: {
          Host: 'localhost',
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
          'Content-Length': data.length,
          ...headers,
        },
        timeout: 15_000,
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8') }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (e) => resolve({ error: e.code || e.message }));
    req.end(data);
  });
}

const PING = { jsonrpc: '2.0', id: 1, method: 'ping' };
const INIT = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'e2e-22', version: '1' } },
};

ctx.test('the state dir holds a 0600 token and a 0600 socket; the token is 32 random bytes in hex', () => {
  const state = path.join(ctx.srv.dataRoot, 'state');
  assert.equal(fs.statSync(state).mode & 0o777, 0o700);
  const tok = fs.statSync(path.join(state, 'token'));
  assert.equal(tok.mode & 0o777, 0o600);
  assert.match(ctx.srv.token, /^[0-9a-f]{64}$/);
  const sock = fs.lstatSync(ctx.srv.socketPath);
  assert.ok(sock.isSocket());
  assert.equal(sock.mode & 0o777, 0o600);
  assert.ok(!fs.readFileSync(ctx.srv.stderrPath, 'utf8').includes(ctx.srv.token), 'the token is never logged');
});

ctx.test('TCP: no token and a wrong token get 401 with a JSON-RPC error naming the token file; the token works', async () => {
  const none = await rawPost(ctx.srv.url, PING, { Authorization: null });
  assert.equal(none.status, 401, none.text);
  assert.equal(none.headers.get('www-authenticate'), 'Bearer realm="chat2sbx", error_description="send the bearer token that \'chat2sbx token\' prints"');
  assert.equal(none.json?.jsonrpc, '2.0');
  assert.equal(none.json?.error?.code, -32600);
  const tokenFile = path.join(ctx.srv.dataRoot, 'state', 'token');
  assert.ok(none.json.error.message.includes(tokenFile), none.json.error.message);
  assert.match(none.json.error.message, /Authorization: Bearer <token>/);
  assert.match(none.json.error.message, /chat2sbx token/);

  const wrong = await rawPost(ctx.srv.url, PING, { Authorization: `Bearer ${crypto.randomBytes(32).toString('hex')}` });
  assert.equal(wrong.status, 401);
  assert.match(wrong.headers.get('www-authenticate'), /error="invalid_token"/);
  assert.ok(!wrong.text.includes(ctx.srv.token), 'the answer never carries the token');

  const basic = await rawPost(ctx.srv.url, PING, { Authorization: 'Basic dXNlcjpwYXNz' });
  assert.equal(basic.status, 401);

  const right = await rawPost(ctx.srv.url, PING);
  assert.equal(right.status, 200, right.text);
  assert.deepEqual(right.json?.result, {});

  // The official SDK client with the header: every tool works as before.
  const client = await connectClient(ctx.srv.url);
  const list = await client.callTool({ name: 'sandbox_list', arguments: {} });
  assert.ok(!list.isError);
  await client.close();
  // And without it the SDK cannot even initialize.
  await assert.rejects(connectClient(ctx.srv.url, { headers: {} }), /401|nauthorized/);
});

ctx.test('the OAuth paths: /.well-known stays 404, /register 400, each saying where the token is', async () => {
  const tokenFile = path.join(ctx.srv.dataRoot, 'state', 'token');
  const ask = async (p, init = {}) => {
    const res = await fetch(new URL(p, ctx.srv.url), { ...init, redirect: 'manual', signal: AbortSignal.timeout(10_000) });
    const body = await res.json();
    assert.equal(res.headers.get('www-authenticate'), null, p);
    assert.equal(res.headers.get('location'), null, p);
    assert.deepEqual(Object.keys(body), ['error', 'error_description'], p);
    assert.ok(body.error_description.includes(tokenFile), body.error_description);
    assert.ok(!JSON.stringify(body).includes(ctx.srv.token));
    return res.status;
  };
  for (const p of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-authorization-server', '/.well-known/openid-configuration']) {
    assert.equal(await ask(p), 404, p);
  }
  const registration = JSON.stringify({ redirect_uris: ['http://127.0.0.1:6276/oauth/callback'], token_endpoint_auth_method: 'none' });
  assert.equal(await ask('/register', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: registration }), 400);
  assert.equal(await ask('/authorize?response_type=code&client_id=x&redirect_uri=http%3A%2F%2Fevil.example%2F'), 400);
  assert.equal(await ask('/token', { method: 'POST', headers: { 'Content-Type': 'application/x-www-form-urlencoded' }, body: 'grant_type=authorization_code&code=x' }), 400);
});

ctx.test('the MCP Inspector CLI at a terminal with a wrong token prints where the token is', async () => {
  // The pinned Inspector of e2e/schema-check, on a pseudo-terminal (script,
  // util-linux): given a 401 it starts OAuth, asks the well-known paths,
  // then POSTs /register, and prints that answer as it stops.
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'chat2sbx-e2e-inspector-'));
  try {
    const cli = path.join(REPO_ROOT, 'e2e/schema-check/node_modules/@modelcontextprotocol/inspector/clients/cli/build/index.js');
    const cmd = [process.execPath, cli, ctx.srv.url, '--transport', 'http', '--header', `Authorization: Bearer ${'0'.repeat(64)}`, '--method', 'tools/list'];
    const r = spawnSync('script', ['-qec', cmd.map((a) => `'${a}'`).join(' '), '/dev/null'], {
      env: { ...process.env, HOME: home, MCP_INSPECTOR_SECRET_STORE: 'memory', BROWSER: 'true' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    const out = r.stdout + r.stderr;
    assert.notEqual(r.status, 0, out);
    const tokenFile = path.join(ctx.srv.dataRoot, 'state', 'token');
    assert.match(out, /Dynamic Client Registration rejected \(HTTP 400\)/, out);
    assert.ok(out.includes(tokenFile), out);
    assert.match(out, /chat2sbx token/, out);
    assert.doesNotMatch(out, /Authorization complete|Open this URL|oauth\/callback\?code/i, out);
    console.log(`inspector says: ${out.trim().split('\n').filter((l) => l.includes('error')).pop()}`);
    assert.match(fs.readFileSync(ctx.srv.stderrPath, 'utf8'), /answered a request (for OAuth metadata|to register an OAuth client) with where the bearer token is/);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
});

ctx.test('the Unix socket serves the owner without a token', async () => {
  const r = await socketPost(ctx.srv.socketPath, INIT);
  assert.equal(r.status, 200, JSON.stringify(r));
  assert.equal(JSON.parse(r.text).result.serverInfo.name, 'chat2sbx');
});

ctx.test('the token is never returned through MCP nor written to the audit', async () => {
  const tools = await ctx.tools();
  const db = path.join(ctx.srv.dataRoot, 'state', 'chat2sbx.sqlite');
  const lists = () => Number(spawnSync('sqlite3', [db, "SELECT COUNT(*) FROM audit WHERE action = 'sandbox_list'"], { encoding: 'utf8' }).stdout);
  const before = lists();
  const res = await tools.call('sandbox_list', {});
  assert.ok(!JSON.stringify(res).includes(ctx.srv.token));
  // serve writes a request's row in a batch a few milliseconds after the
  // answer (issue 27): the dump below waits for this call's row.
  for (let i = 0; i < 100 && lists() === before; i++) await new Promise((r) => setTimeout(r, 50));
  assert.equal(lists(), before + 1, "the call's audit row");
  const dump = spawnSync('sqlite3', [db, 'SELECT * FROM audit'], { encoding: 'utf8' });
  assert.equal(dump.status, 0, dump.stderr);
  assert.ok(!dump.stdout.includes(ctx.srv.token));
});

// ---- another local user ----

const USER = `c2se2e${crypto.randomBytes(3).toString('hex')}`;
let uid = null;
let gid = null;

function asUser(cmd, args) {
  const r = spawnSync(cmd, args, { uid, gid, encoding: 'utf8', timeout: 30_000, cwd: '/' });
  return { status: r.status, stdout: r.stdout || '', stderr: r.stderr || '', desc: `${cmd} ${args.join(' ')}: ${r.status} ${r.stderr}` };
}

ctx.test('a second Unix user is refused on TCP (401) and cannot read the token or reach the socket', async (t) => {
  if (process.getuid() !== 0) return t.skip('needs root to create a user');
  const add = spawnSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', USER], { encoding: 'utf8' });
  assert.equal(add.status, 0, add.stderr);
  ctx.onCleanup(() => spawnSync('userdel', [USER]));
  uid = Number(spawnSync('id', ['-u', USER], { encoding: 'utf8' }).stdout.trim());
  gid = Number(spawnSync('id', ['-g', USER], { encoding: 'utf8' }).stdout.trim());
  assert.ok(uid > 0);

  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'workspace_list', arguments: {} } });
  const common = ['-s', '-w', '\n%{http_code}', '-H', 'Content-Type: application/json', '-H', 'Accept: application/json, text/event-stream', '-d', body];
  const tcp = asUser('curl', [...common, ctx.srv.url]);
  assert.equal(tcp.status, 0, tcp.desc);
  assert.match(tcp.stdout, /\n401$/, tcp.stdout);
  assert.match(tcp.stdout, /unauthorized/);

  const read = asUser('cat', [path.join(ctx.srv.dataRoot, 'state', 'token')]);
  assert.notEqual(read.status, 0, 'the token file is not readable by another user');
  assert.equal(read.stdout, '');
  const tokenCmd = spawnSync(BIN, ['token'], {
    uid,
    gid,
    encoding: 'utf8',
    cwd: '/',
    env: { PATH: process.env.PATH, HOME: '/nonexistent', CHAT2SBX_DATA_ROOT: ctx.srv.dataRoot },
  });
  assert.notEqual(tokenCmd.status, 0, 'chat2sbx token as another user prints nothing');
  assert.equal(tokenCmd.stdout, '');

  const sock = asUser('curl', [...common, '--unix-socket', ctx.srv.socketPath, 'http://localhost/mcp']);
  assert.equal(sock.status, 7, `the socket cannot be reached (curl exit 7): ${sock.desc} ${sock.stdout}`);
});

ctx.test('with the socket file opened by mistake, the peer-uid check still cuts another user off', async (t) => {
  if (uid === null) return t.skip('the second user was not made');
  // Let the other user traverse to the socket and write to it.
  const dirs = [ctx.srv.root, ctx.srv.dataRoot, path.join(ctx.srv.dataRoot, 'state')];
  const modes = dirs.map((d) => fs.statSync(d).mode & 0o777);
  t.after(() => {
    dirs.forEach((d, i) => fs.chmodSync(d, modes[i]));
    fs.chmodSync(ctx.srv.socketPath, 0o600);
  });
  for (const d of dirs) fs.chmodSync(d, 0o711);
  fs.chmodSync(ctx.srv.socketPath, 0o666);

  const body = JSON.stringify(INIT);
  const r = asUser('curl', ['-s', '-w', '%{http_code}', '-H', 'Content-Type: application/json', '-d', body, '--unix-socket', ctx.srv.socketPath, 'http://localhost/mcp']);
  // The connection is accepted and cut off at once: curl sees a failed
  // connect, an empty reply or a reset (7, 52, 56), never an answer. That it
  // was the uid check and not the file mode shows in serve's log.
  assert.ok([7, 52, 56].includes(r.status), `expected no answer, got ${r.desc} ${r.stdout}`);
  assert.ok(!r.stdout.includes('serverInfo'));
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  assert.match(log, new RegExp(`refused a connection on the MCP socket from uid ${uid} \\(pid \\d+\\): only root may use it`));
  // The owner is still served.
  const own = await socketPost(ctx.srv.socketPath, INIT);
  assert.equal(own.status, 200);
});

ctx.test('doctor attacks the endpoint of the running serve and the attacks fail', () => {
  const r = spawnSync(BIN, ['doctor', '--json'], {
    cwd: ctx.srv.root,
    env: childEnv({}, path.join(ctx.srv.root, 'home'), ctx.srv.dataRoot, ctx.srv.port),
    encoding: 'utf8',
    timeout: 240_000,
  });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const d = JSON.parse(r.stdout);
  const byName = Object.fromEntries(d.checks.map((c) => [c.name, c]));
  assert.equal(byName.mcp_token?.result, 'passed', JSON.stringify(byName.mcp_token));
  assert.equal(byName.mcp_socket?.result, 'passed', JSON.stringify(byName.mcp_socket));
  if (process.getuid() === 0) assert.match(byName.mcp_socket.detail, /CAP_DAC_OVERRIDE/);
  assert.ok(!r.stdout.includes(ctx.srv.token));
});

ctx.test('CHAT2SBX_MCP_TOKEN=off: the port takes requests without a token, with a warning at start, in status and in doctor', async (t) => {
  const off = new Server();
  t.after(async () => {
    await off.stop();
    await off.cleanupContainers();
    await off.removeRoot();
  });
  await off.start({ env: { CHAT2SBX_MCP_TOKEN: 'off' } });
  const r = await rawPost(off.url, PING);
  assert.equal(r.status, 200, r.text);
  assert.match(fs.readFileSync(off.stderrPath, 'utf8'), /CHAT2SBX_MCP_TOKEN=off: the MCP port takes requests WITHOUT a bearer token/);
  const env = childEnv({ CHAT2SBX_MCP_TOKEN: 'off' }, path.join(off.root, 'home'), off.dataRoot, off.port);
  const st = spawnSync(BIN, ['status', '--json'], { cwd: off.root, env, encoding: 'utf8' });
  const s = JSON.parse(st.stdout);
  assert.equal(s.mcp.token_required, false);
  assert.match(s.mcp.warning, /without a bearer token/);
  const table = spawnSync(BIN, ['status'], { cwd: off.root, env, encoding: 'utf8' });
  assert.match(table.stdout, /^TOKEN +OFF +WARNING/m);
  const doc = spawnSync(BIN, ['doctor', '--json'], { cwd: off.root, env, encoding: 'utf8', timeout: 240_000 });
  assert.equal(doc.status, 1, 'doctor fails: the token attack succeeds');
  const failed = JSON.parse(doc.stdout).checks.filter((c) => c.result === 'failed');
  assert.deepEqual(failed.map((c) => c.name), ['mcp_token']);
  assert.match(failed[0].detail, /got HTTP 200 \(serve runs with CHAT2SBX_MCP_TOKEN=off\)/);
  // The socket keeps its uid check either way.
  const sock = await socketPost(off.socketPath, INIT);
  assert.equal(sock.status, 200);

  // A token value in the setting is refused (the token is never configured).
  const bad = spawnSync(BIN, ['status'], { cwd: off.root, env: { ...env, CHAT2SBX_MCP_TOKEN: 'abc123' }, encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /CHAT2SBX_MCP_TOKEN .* takes only 'off'/);
});

ctx.test('chat2sbx token prints the token for scripts', () => {
  const r = spawnSync(BIN, ['token'], {
    cwd: ctx.srv.root,
    env: childEnv({}, path.join(ctx.srv.root, 'home'), ctx.srv.dataRoot, ctx.srv.port),
    encoding: 'utf8',
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), ctx.srv.token);
});

ctx.finish();
