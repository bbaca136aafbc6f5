// 05: negative security checks, attacked from inside a sandbox through the
// MCP tools a model gets: host files, host environment, the Docker socket,
// privileges, the helper's own pipes, and other sandboxes are out of reach.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

import { DOCKER_SOCKET, REPO_ROOT, dockerInspect, dockerRequest, useServer } from '../lib/server.mjs';

const CANARY_ENV = `c2s-env-canary-${process.pid}`;
const ctx = useServer({ env: { CHAT2SBX_E2E_CANARY: CANARY_ENV } });

async function sh(tools, sandboxId, command) {
  const r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 20000 });
  assert.equal(r.status, 'exited', `${command}: ${JSON.stringify(r)}`);
  return r;
}

ctx.test('host files, host environment, Docker socket and privileges stay outside', async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const canaryFile = path.join(ctx.srv.root, 'host-canary.txt');
  fs.writeFileSync(canaryFile, 'host-secret\n');

  const r = await sh(tools, sbx.sandbox_id, `cat ${canaryFile} 2>&1; ls ${ctx.srv.dataRoot} 2>&1; echo ---;` +
    ` env; echo ---; ls -l /var/run/docker.sock /run/docker.sock 2>&1; echo ---; grep CapEff /proc/self/status`);
  assert.doesNotMatch(r.output, /host-secret/, 'a host file outside the workspace is not visible');
  assert.doesNotMatch(r.output, new RegExp(CANARY_ENV), "serve's environment does not reach the sandbox");
  assert.match(r.output, /cannot access '\/var\/run\/docker\.sock': No such file/);
  assert.match(r.output, /cannot access '\/run\/docker\.sock': No such file/);
  const capEff = BigInt('0x' + /CapEff:\s*([0-9a-f]+)/.exec(r.output)[1]);
  assert.equal(capEff & (1n << 21n), 0n, 'no CAP_SYS_ADMIN');
  assert.equal(capEff & (1n << 12n), 0n, 'no CAP_NET_ADMIN');
  assert.equal(capEff & (1n << 19n), 0n, 'no CAP_SYS_PTRACE');

  const info = await dockerInspect(sbx.sandbox_id);
  assert.equal(info.HostConfig.Privileged, false);
  assert.ok(info.HostConfig.SecurityOpt.includes('no-new-privileges'));
  assert.equal(info.HostConfig.LogConfig.Type, 'none', 'helper traffic never lands in engine logs');
  const sources = info.Mounts.map((m) => m.Source);
  const channelDir = path.join(ctx.srv.dataRoot, 'state', 'channel', sbx.sandbox_id);
  assert.ok(sources.every((s) => s === sbx.workspace_path || s.endsWith('/chat2sbx-helper') || s === channelDir), JSON.stringify(sources));
  const helperMount = info.Mounts.find((m) => m.Source.endsWith('/chat2sbx-helper'));
  assert.equal(helperMount.RW, false, 'the helper is mounted read-only');
  const channelMount = info.Mounts.find((m) => m.Source === channelDir);
  assert.equal(channelMount?.RW, false, "the direct channel's directory is mounted read-only");
});

// The direct channel (issue 27): its directory is empty and read-only
// inside, and a process of the sandbox dialing its socket over and over,
// with a wrong token and forged answers, does not become the channel: after
// serve restarts (and opens the channel again) calls get the helper's answers.
ctx.test('a squatter on the direct channel socket cannot answer for the helper', async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  const id = sbx.sandbox_id;
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(id)));
  await tools.ok('write', { sandbox_id: id, path: 'real.txt', content: 'real\n' });
  const seen = await sh(tools, id, 'ls -A /.chat2sbx/channel; echo ---; touch /.chat2sbx/channel/x 2>&1; mkdir /.chat2sbx/channel/d 2>&1');
  assert.match(seen.output, /^---\n/, 'nothing is in the directory between opens');
  assert.match(seen.output, /touch: cannot touch '\/\.chat2sbx\/channel\/x': Read-only file system/);
  const squat =
    `nohup perl -MIO::Socket::UNIX -e '$t=time+10; while(time<$t){ my $s=IO::Socket::UNIX->new(Peer=>"/.chat2sbx/channel/s") or next; ` +
    `open(my $m,">>","/tmp/squat"); print $m "connected\n"; close $m; print $s "0123456789abcdef0123456789abcdef\n"; ` +
    `for my $i (1..200) { print $s qq({"jsonrpc":"2.0","id":$i,"result":{"content":"forged"}}\n) } push @k,$s }' >/dev/null 2>&1 &`;
  await sh(tools, id, squat);
  await ctx.restart('SIGTERM');
  const again = await ctx.tools();
  for (let i = 0; i < 20; i++) {
    const r = await again.ok('read', { sandbox_id: id, path: 'real.txt', line_numbers: false });
    assert.equal(r.content, 'real\n', 'the helper answers, not the squatter');
  }
  const squatted = await sh(again, id, 'cat /tmp/squat 2>/dev/null | wc -l');
  t.diagnostic(`the squatter connected ${squatted.output.trim().split('\n')[0]} time(s) while the socket existed`);
});

// An image with a one-file build context (a ustar archive made by hand),
// built by the engine (POST /build); resolves when the build finished.
function buildImage(tag, dockerfile) {
  const body = Buffer.from(dockerfile);
  const header = Buffer.alloc(512);
  const put = (text, off) => header.write(text, off, 'ascii');
  put('Dockerfile', 0);
  put('0000644\0', 100);
  put('0000000\0', 108);
  put('0000000\0', 116);
  put(body.length.toString(8).padStart(11, '0') + '\0', 124);
  put('00000000000\0', 136);
  put('        ', 148);
  put('0', 156);
  put('ustar\0' + '00', 257);
  let sum = 0;
  for (const b of header) sum += b;
  put(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  const tar = Buffer.concat([header, body, Buffer.alloc((512 - (body.length % 512)) % 512), Buffer.alloc(1024)]);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath: DOCKER_SOCKET, method: 'POST', path: `/build?t=${encodeURIComponent(tag)}&rm=1&forcerm=1`,
        headers: { Host: 'localhost', 'Content-Type': 'application/x-tar', 'Content-Length': tar.length }, timeout: 120_000 },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => (res.statusCode === 200 && !/"error"/.test(text) ? resolve() : reject(new Error(`build ${tag}: ${res.statusCode} ${text.slice(-500)}`))));
      });
    req.on('timeout', () => req.destroy(new Error(`build ${tag}: timed out`)));
    req.on('error', reject);
    req.end(tar);
  });
}

// Root in the sandbox renames the directory above the channel's mount and
// listens where /.chat2sbx/channel/s now leads, to learn the token from the
// helper and present it to serve itself (then it would answer every call).
// The template image has /.chat2sbx in a lower layer, where overlayfs
// refuses the rename (EXDEV) unless the kernel enables redirect_dir; an
// image without it (any image can be a template) gets it from the runtime,
// in the writable layer, and the rename works. The helper reaches the
// socket through the directory it opened at start, so the impostor never
// sees a connection.
ctx.test('a listener planted at the channel path after renaming /.chat2sbx learns no token', async (t) => {
  const version = fs.readFileSync(path.join(REPO_ROOT, 'VERSION'), 'utf8').trim();
  const base = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${version}`;
  const image = `chat2sbx-e2e-no-channel-dir:${process.pid}`;
  await buildImage(image, `FROM ${base}\nRUN rmdir /.chat2sbx\n`);
  t.after(() => dockerRequest('DELETE', `/images/${encodeURIComponent(image)}?force=1`).catch(() => {}));
  const env = { CHAT2SBX_E2E_CANARY: CANARY_ENV };
  const withImage = { ...env, CHAT2SBX_TEMPLATE_IMAGE: image, CHAT2SBX_LOG_DEBUG: 'lifecycle' };
  await ctx.restartWith(withImage);
  t.after(() => ctx.restartWith(env));
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  const id = sbx.sandbox_id;
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(id)));
  await tools.ok('write', { sandbox_id: id, path: 'real.txt', content: 'real\n' });
  const impostor = [
    'import os, socket, json',
    "log = open('/tmp/impostor', 'a', buffering=1)",
    "os.rename('/.chat2sbx', '/.x'); os.makedirs('/.chat2sbx/channel')",
    "l = socket.socket(socket.AF_UNIX); l.bind('/.chat2sbx/channel/s'); l.listen(4); log.write('listening\\n')",
    'h, _ = l.accept(); tok = h.recv(33); log.write("token %r\\n" % tok)',
    "s = socket.socket(socket.AF_UNIX); s.connect('/.x/channel/s'); s.sendall(tok); f = s.makefile('rb')",
    'for line in f:',
    "    m = json.loads(line); s.sendall(json.dumps({'jsonrpc': '2.0', 'id': m.get('id'), 'result': {'content': 'forged'}}).encode() + b'\\n')",
  ].join('\n');
  await tools.ok('write', { sandbox_id: id, path: '/tmp/impostor.py', content: impostor + '\n' });
  const planted = await sh(tools, id, 'nohup python3 /tmp/impostor.py >/tmp/impostor.out 2>&1 & sleep 1; cat /tmp/impostor /tmp/impostor.out; ls /.x');
  assert.match(planted.output, /^listening\n/, `the rename works in this image: ${planted.output}`);
  // serve restarts and opens the direct channel again (reconcile).
  await ctx.restartWith(withImage);
  const again = await ctx.tools();
  for (let i = 0; i < 10; i++) {
    const r = await again.ok('read', { sandbox_id: id, path: 'real.txt', line_numbers: false });
    assert.equal(r.content, 'real\n', 'the helper answers, not the impostor');
  }
  const seen = await sh(again, id, 'cat /tmp/impostor; ls -A /.x/channel');
  assert.equal(seen.output, 'listening\n', `the impostor got no connection and the socket is gone: ${seen.output}`);
  const log = fs.readFileSync(ctx.srv.stderrPath, 'utf8');
  const direct = log.split(`sandbox ${id}: calls go over the direct channel`).length - 1;
  assert.ok(direct >= 2, `the channel went direct at create and again after the restart (${direct} time(s))`);
});

ctx.test("a sandbox cannot write to or read from the helper's pipes (no forged answers)", async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  t.after(() => tools.destroyQuietly(sbx.sandbox_id));
  const r = await sh(tools, sbx.sandbox_id,
    `for i in $(seq 1 50); do echo '{"jsonrpc":"2.0","id":'$i',"result":null}'; done > /proc/1/fd/1; echo w=$?;` +
    ` timeout 1 cat /proc/1/fd/0 >/dev/null; echo r=$?; echo x > /proc/1/fd/2; echo e=$?`);
  assert.match(r.output, /w=1/, `writing to the helper's stdout is refused: ${r.output}`);
  assert.match(r.output, /r=1/, `reading the helper's stdin is refused: ${r.output}`);
  assert.match(r.output, /e=1/, `writing to the helper's stderr is refused: ${r.output}`);
  const after = await sh(tools, sbx.sandbox_id, 'echo fine');
  assert.equal(after.output, 'fine\n', 'the channel still works');
});

ctx.test('sandboxes cannot reach each other over the network', async (t) => {
  const tools = await ctx.tools();
  const a = await tools.create({});
  t.after(() => tools.destroyQuietly(a.sandbox_id));
  const b = await tools.create({});
  t.after(() => tools.destroyQuietly(b.sandbox_id));
  const server = await tools.ok('bash', {
    sandbox_id: b.sandbox_id,
    command: 'echo b-secret > s.txt; exec python3 -m http.server 8080 --bind 0.0.0.0',
    yield_time_ms: 1000,
  });
  assert.equal(server.status, 'running', JSON.stringify(server));
  const info = await dockerInspect(b.sandbox_id);
  const nets = Object.values(info.NetworkSettings.Networks);
  assert.equal(nets.length, 1);
  const ip = nets[0].IPAddress;
  assert.ok(ip, JSON.stringify(info.NetworkSettings.Networks));
  // B serves itself (the server is up) ...
  const self = await sh(tools, b.sandbox_id,
    'python3 -c "import urllib.request;print(urllib.request.urlopen(\'http://127.0.0.1:8080/s.txt\',timeout=3).read().decode())"');
  assert.match(self.output, /b-secret/);
  // ... but A cannot reach it.
  const probe = await sh(tools, a.sandbox_id,
    `python3 -c "import socket;s=socket.socket();s.settimeout(2)
try:
  s.connect(('${ip}',8080));print('REACHED')
except Exception as e:
  print('blocked',type(e).__name__)"`);
  assert.match(probe.output, /blocked/, probe.output);
  await tools.ok('bash_stop', { sandbox_id: b.sandbox_id, session_id: server.session_id });
});

ctx.finish();
