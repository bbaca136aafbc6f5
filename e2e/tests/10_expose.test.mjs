// 10: sandbox_expose publishes a sandbox's TCP port on the host through a
// forwarder container: a dev server started in a bash session answers on the
// returned URL; repeating the call returns the same mapping; the mapping
// survives a SIGKILL of serve; traffic through it is not activity; destroy
// removes the forwarder and its network (checked on the engine) and the port
// refuses connections; bad input is refused and creates nothing.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import http from 'node:http';
import path from 'node:path';

import { refused, startDevServer } from '../lib/preview.mjs';
import { BIN, childEnv, dockerInspect, dockerRequest, freePort, resultText, useServer } from '../lib/server.mjs';

const ctx = useServer();
const PORT = 8000;

// Last resort after a failed test: forwarders go with the harness's container
// cleanup (their labels name our data root); their networks are removed here.
ctx.onCleanup(async () => {
  const filters = encodeURIComponent(JSON.stringify({ label: ['org.chat2sbx.expose.registry'] }));
  const r = await dockerRequest('GET', `/networks?filters=${filters}`);
  for (const n of r.body || []) {
    if (!String(n.Labels?.['org.chat2sbx.expose.registry'] || '').startsWith(ctx.srv.dataRoot)) continue;
    const fwd = await containersLabelled(`org.chat2sbx.expose.sandbox=${n.Labels['org.chat2sbx.expose.sandbox']}`);
    for (const c of fwd) await dockerRequest('DELETE', `/containers/${c.Id}?force=1`);
    const full = (await dockerRequest('GET', `/networks/${n.Id}`)).body; // the list leaves Containers empty
    for (const id of Object.keys(full?.Containers || {})) {
      await dockerRequest('POST', `/networks/${n.Id}/disconnect`, { Container: id, Force: true });
    }
    await dockerRequest('DELETE', `/networks/${n.Id}`);
    console.log(`e2e cleanup: removed leftover network ${n.Name}`);
  }
});

// GET url from the host with node's http; resolves {status, body}.
function fetchUrl(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 10_000, agent: false }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
  });
}

async function networkExists(name) {
  const r = await dockerRequest('GET', `/networks/${encodeURIComponent(name)}`);
  return r.status !== 404;
}

async function containersLabelled(label) {
  const filters = encodeURIComponent(JSON.stringify({ label: [label] }));
  const r = await dockerRequest('GET', `/containers/json?all=1&filters=${filters}`);
  return r.body;
}

const restartKill = () => ctx.restart('SIGKILL');

// The file the directory listing shows, then the dev server.
async function startServer(tools, sandboxId) {
  await tools.ok('write', { sandbox_id: sandboxId, path: 'hello-expose.txt', content: 'hi\n' });
  return startDevServer(tools, sandboxId, PORT);
}

ctx.test('a dev server is reachable through sandbox_expose, survives a serve kill, and goes with destroy', async (t) => {
  let tools = await ctx.tools();
  // tools/list first: the SDK then checks every answer against its outputSchema.
  const { tools: list } = await tools.client.listTools();
  const def = list.find((x) => x.name === 'sandbox_expose');
  assert.ok(def, 'tools/list has sandbox_expose');
  assert.deepEqual(def.inputSchema.required, ['sandbox_id', 'port']);
  const a = def.annotations;
  assert.deepEqual(
    [a.readOnlyHint, a.destructiveHint, a.idempotentHint, a.openWorldHint],
    [false, false, true, false],
    JSON.stringify(a),
  );
  const sbx = await tools.create({});
  const id = sbx.sandbox_id;
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(id)));
  const session = await startServer(tools, id);

  const x = await tools.ok('sandbox_expose', { sandbox_id: id, port: PORT });
  assert.equal(x.sandbox_id, id);
  assert.equal(x.port, PORT);
  assert.equal(x.host, '127.0.0.1');
  assert.ok(Number.isInteger(x.host_port) && x.host_port > 0 && x.host_port < 65536, JSON.stringify(x));
  assert.equal(x.url, `http://127.0.0.1:${x.host_port}/`);
  assert.equal(x.created, true);

  const page = await fetchUrl(x.url);
  assert.equal(page.status, 200, page.body.slice(0, 300));
  assert.match(page.body, /Directory listing/);
  assert.match(page.body, /hello-expose\.txt/);

  // The same call again: the same mapping, nothing new.
  const again = await tools.ok('sandbox_expose', { sandbox_id: id, port: PORT });
  assert.deepEqual(
    { host: again.host, host_port: again.host_port, url: again.url, created: again.created },
    { host: x.host, host_port: x.host_port, url: x.url, created: false },
  );
  const got = await tools.ok('sandbox_get', { sandbox_id: id });
  assert.deepEqual(
    got.exposures?.map((e) => [e.port, e.url]),
    [[PORT, x.url]],
    JSON.stringify(got.exposures),
  );

  // The engine's view: one hardened forwarder, on the sandbox's own network.
  const fwdName = `${id}-expose-${PORT}`;
  const netName = `chat2sbx-expose-${id}`;
  const fwd = await dockerInspect(fwdName);
  assert.ok(fwd, `forwarder ${fwdName} missing`);
  assert.equal(fwd.State.Running, true);
  assert.equal(fwd.HostConfig.RestartPolicy.Name, 'unless-stopped');
  assert.equal(fwd.HostConfig.ReadonlyRootfs, true);
  assert.deepEqual(fwd.HostConfig.CapDrop, ['ALL']);
  assert.equal(fwd.HostConfig.Privileged, false);
  assert.deepEqual(fwd.HostConfig.PortBindings[`${PORT}/tcp`], [{ HostIp: '127.0.0.1', HostPort: String(x.host_port) }]);
  assert.deepEqual(Object.keys(fwd.NetworkSettings.Networks), [netName]);
  const sbxInfo = await dockerInspect(id);
  assert.ok(netName in sbxInfo.NetworkSettings.Networks, 'the sandbox joined its expose network');
  assert.ok(
    sbxInfo.NetworkSettings.Networks[netName].Aliases?.includes('sandbox'),
    JSON.stringify(sbxInfo.NetworkSettings.Networks[netName]),
  );

  // Traffic through the URL is not activity (sandbox_list does not touch it).
  const before = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === id).last_activity_at;
  for (let i = 0; i < 3; i++) assert.equal((await fetchUrl(x.url)).status, 200);
  const afterFetch = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === id)
    .last_activity_at;
  assert.equal(afterFetch, before, 'fetching through the exposed URL counted as activity');

  // serve killed and started again: the URL still serves, the mapping is the same.
  await restartKill();
  tools = await ctx.tools();
  const page2 = await fetchUrl(x.url);
  assert.equal(page2.status, 200);
  assert.match(page2.body, /hello-expose\.txt/);
  const third = await tools.ok('sandbox_expose', { sandbox_id: id, port: PORT });
  assert.equal(third.url, x.url);
  assert.equal(third.created, false);
  const sessions = await tools.ok('bash_list', { sandbox_id: id });
  assert.ok(
    sessions.sessions.some((s) => s.session_id === session && s.status === 'running'),
    'the dev server session survived the restart',
  );

  // Destroy: the forwarder and the network are gone, the port refuses.
  await tools.ok('sandbox_destroy', { sandbox_id: id });
  assert.equal(await dockerInspect(fwdName), null, 'the forwarder was left behind');
  assert.equal(await networkExists(netName), false, 'the expose network was left behind');
  assert.deepEqual(await containersLabelled(`org.chat2sbx.expose.sandbox=${id}`), []);
  assert.equal(await refused('127.0.0.1', x.host_port), true, 'the host port still accepts connections');
  const gone = await tools.call('sandbox_expose', { sandbox_id: id, port: PORT });
  assert.equal(gone.isError, true);
  assert.match(resultText(gone), /destroyed/);
});

ctx.test('bad input is refused with a clear message and creates nothing', async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  const id = sbx.sandbox_id;
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(id)));
  const cases = [
    [{ sandbox_id: id, port: 0 }, /'port' is 0; it must be in 1\.\.65535/],
    [{ sandbox_id: id, port: 70000 }, /'port' is 70000; it must be in 1\.\.65535/],
    [{ sandbox_id: id, port: '8000' }, /'port' must be an integer/],
    [{ sandbox_id: id }, /'port' is required/],
    [{ sandbox_id: 'sbx_aaaaaaaaaaaaaaaaaaaa', port: 8000 }, /sandbox 'sbx_aaaaaaaaaaaaaaaaaaaa' does not exist/],
    [{ sandbox_id: 'nope', port: 8000 }, /not a valid id/],
  ];
  for (const [args, want] of cases) {
    const r = await tools.call('sandbox_expose', args);
    assert.equal(r.isError, true, `${JSON.stringify(args)} accepted: ${JSON.stringify(r)}`);
    assert.match(resultText(r), want, JSON.stringify(args));
  }
  for (const sid of [id, 'sbx_aaaaaaaaaaaaaaaaaaaa']) {
    assert.deepEqual(await containersLabelled(`org.chat2sbx.expose.sandbox=${sid}`), [], `forwarder for ${sid}`);
    assert.equal(await networkExists(`chat2sbx-expose-${sid}`), false, `network for ${sid}`);
  }
  const got = await tools.ok('sandbox_get', { sandbox_id: id });
  assert.deepEqual(got.exposures, []);
});

ctx.test('a sandbox created with network off cannot be exposed', async (t) => {
  const tools = await ctx.tools();
  const res = await tools.call('sandbox_create', { network: false }, { timeout: 90_000 });
  if (res.isError && /unknown argument 'network'/.test(resultText(res))) {
    t.skip('sandbox_create has no network option in this build');
    return;
  }
  assert.notEqual(res.isError, true, resultText(res));
  const id = res.structuredContent.sandbox_id;
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(id)));
  const r = await tools.call('sandbox_expose', { sandbox_id: id, port: PORT });
  assert.equal(r.isError, true);
  assert.match(resultText(r), /network off/);
  assert.match(resultText(r), /network on/);
  assert.deepEqual(await containersLabelled(`org.chat2sbx.expose.sandbox=${id}`), []);
  assert.equal(await networkExists(`chat2sbx-expose-${id}`), false);
});

ctx.test('at start, forwarders of running sandboxes run again and those of failed sandboxes are removed', async (t) => {
  let tools = await ctx.tools();
  const a = (await tools.create({})).sandbox_id;
  const b = (await tools.create({})).sandbox_id;
  t.after(() => ctx.tools().then(async (x) => {
    await x.destroyQuietly(a);
    await x.destroyQuietly(b);
  }));
  const stopped = await tools.ok('sandbox_expose', { sandbox_id: a, port: 8000 });
  const removed = await tools.ok('sandbox_expose', { sandbox_id: a, port: 8001 });
  await tools.ok('sandbox_expose', { sandbox_id: b, port: 8000 });
  // Behind serve's back: one forwarder stopped (unless-stopped keeps it
  // stopped), one removed, and sandbox b's container killed.
  assert.equal((await dockerRequest('POST', `/containers/${a}-expose-8000/stop?t=1`)).status, 204);
  assert.equal((await dockerRequest('DELETE', `/containers/${a}-expose-8001?force=1`)).status, 204);
  assert.equal((await dockerRequest('POST', `/containers/${b}/kill`)).status, 204);
  for (let i = 0; i < 50 && (await dockerInspect(b))?.State?.Running; i++) await new Promise((r) => setTimeout(r, 100));

  await restartKill();
  tools = await ctx.tools();
  const f1 = await dockerInspect(`${a}-expose-8000`);
  assert.equal(f1?.State?.Running, true, 'the stopped forwarder was started again');
  const f2 = await dockerInspect(`${a}-expose-8001`);
  assert.equal(f2?.State?.Running, true, 'the removed forwarder was made again');
  assert.equal(f2.HostConfig.PortBindings['8001/tcp'][0].HostPort, String(removed.host_port), 'on the same host port');
  const again = await tools.ok('sandbox_expose', { sandbox_id: a, port: 8000 });
  assert.equal(again.url, stopped.url);
  // A repeated sandbox_expose also mends a forwarder removed behind serve's back.
  assert.equal((await dockerRequest('DELETE', `/containers/${a}-expose-8000?force=1`)).status, 204);
  const mended = await tools.ok('sandbox_expose', { sandbox_id: a, port: 8000 });
  assert.equal(mended.url, stopped.url);
  assert.equal((await dockerInspect(`${a}-expose-8000`))?.State?.Running, true, 'the forwarder was made again');

  const row = (await tools.ok('sandbox_list', {})).sandboxes.find((s) => s.sandbox_id === b);
  assert.equal(row?.status, 'failed', JSON.stringify(row));
  assert.equal(await dockerInspect(`${b}-expose-8000`), null, "the failed sandbox's forwarder was left");
  assert.equal(await networkExists(`chat2sbx-expose-${b}`), false, "the failed sandbox's network was left");
  const r = await tools.call('sandbox_expose', { sandbox_id: b, port: 8000 });
  assert.equal(r.isError, true);
  assert.match(resultText(r), /has failed/);
});

ctx.test('chat2sbx sandbox destroy (the CLI) removes the forwarder and the network too', async (t) => {
  const tools = await ctx.tools();
  const id = (await tools.create({})).sandbox_id;
  t.after(() => ctx.tools().then((x) => x.destroyQuietly(id)));
  const x = await tools.ok('sandbox_expose', { sandbox_id: id, port: 8080 });
  assert.ok(await dockerInspect(`${id}-expose-8080`));
  const srv = ctx.srv;
  const env = childEnv({}, path.join(srv.root, 'home'), srv.dataRoot, await freePort());
  const r = spawnSync(BIN, ['sandbox', 'destroy', id], { env, cwd: srv.root, encoding: 'utf8', timeout: 60_000 });
  assert.equal(r.status, 0, `chat2sbx sandbox destroy: ${r.stderr}`);
  assert.equal(await dockerInspect(`${id}-expose-8080`), null, 'the forwarder was left behind');
  assert.equal(await networkExists(`chat2sbx-expose-${id}`), false, 'the expose network was left behind');
  assert.equal(await refused('127.0.0.1', x.host_port), true);
  const got = await tools.ok('sandbox_get', { sandbox_id: id });
  assert.deepEqual(got.exposures, []);
});

ctx.finish();
