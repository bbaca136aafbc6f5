// 32 (make test-vm): inside a vm sandbox the model has Docker of its own:
// an image the test builds from a tarball in the guest (no registry is
// reachable) is imported, run and built FROM, by the guest's dockerd, which
// starts on the first use of /run/docker.sock; the host's engine never sees
// any of it. The sandbox's limits are the guest's (memory less QEMU's own,
// vCPUs from the CPU quota), and a server in the guest is reachable through
// sandbox_expose, again after a second expose. Never asserts speed.
import assert from 'node:assert/strict';
import http from 'node:http';

import { dockerRequest, useServer } from '../lib/server.mjs';
import { VM_CALL, VM_CREATE, VM_TEST, runToEnd } from '../lib/vm.mjs';

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'vm' } });
const PORT = 8000;

function fetchUrl(url) {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { timeout: 30_000, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timed out`)));
    req.on('error', reject);
  });
}

// A bash command that must succeed; its whole output.
async function sh(tools, id, command) {
  const r = await runToEnd(tools, id, command);
  assert.equal(r.exit_code, 0, `${command}: ${JSON.stringify(r)}`);
  return r.output;
}

ctx.test('docker inside: import, run and build in the guest; limits map to the guest', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.ok('sandbox_create', { memory: '1536m', cpus: 1 }, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => tools.destroyQuietly(id));
  assert.equal(sbx.runtime, 'vm');

  // Limits: one vCPU for a one-CPU quota; the guest's RAM is the ceiling
  // less QEMU's own (some hundreds of MiB), never more.
  const [ncpu, memKb] = (await sh(tools, id, "nproc; awk '/MemTotal/ {print $2}' /proc/meminfo")).trim().split('\n');
  assert.equal(Number(ncpu), 1, 'cpus 1 is one vCPU');
  assert.ok(Number(memKb) * 1024 < 1536 * 2 ** 20, `guest RAM ${memKb} kB is below the ceiling`);
  assert.ok(Number(memKb) * 1024 > 1024 * 2 ** 20, `guest RAM ${memKb} kB is most of it`);

  // A root file system of the guest's own dash and its libraries, imported.
  const build = [
    'set -e',
    'rm -rf /tmp/r && mkdir -p /tmp/r',
    'cp --parents /bin/dash $(ldd /bin/dash | grep -o "/[^ ]*") /tmp/r/',
    'tar -C /tmp/r -cf /tmp/tiny.tar .',
    'docker import /tmp/tiny.tar c2s-tiny:1 >/dev/null',
    'docker run --rm c2s-tiny:1 /bin/dash -c "echo inner-run-ok"',
  ].join('\n');
  const out = await sh(tools, id, build);
  assert.match(out, /^inner-run-ok$/m, out);

  const dockerfile = 'FROM c2s-tiny:1\nRUN ["/bin/dash", "-c", "echo built-in-guest > /built"]\n';
  await tools.ok('write', { sandbox_id: id, path: 'ctx/Dockerfile', content: dockerfile, create_dirs: true }, VM_CALL);
  const built = await sh(
    tools,
    id,
    'cd ctx && DOCKER_BUILDKIT=0 docker build -q -t c2s-built:1 . >/dev/null && docker run --rm c2s-built:1 /bin/dash -c "read l < /built; echo \\$l"',
  );
  assert.equal(built.trim(), 'built-in-guest');
  const images = await sh(tools, id, 'docker images --format "{{.Repository}}:{{.Tag}}" | sort');
  assert.deepEqual(images.trim().split('\n'), ['c2s-built:1', 'c2s-tiny:1']);

  // The host's engine has none of it.
  const host = await dockerRequest('GET', '/images/c2s-tiny:1/json');
  assert.equal(host.status, 404, 'the image lives in the guest only');
});

ctx.test('sandbox_expose reaches a server in the guest, again after a second expose', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.ok('sandbox_create', {}, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => tools.destroyQuietly(id));
  await tools.ok('write', { sandbox_id: id, path: 'index.html', content: 'from the guest\n' }, VM_CALL);
  const serve = await tools.ok(
    'bash',
    { sandbox_id: id, command: `exec python3 -m http.server ${PORT} --bind 0.0.0.0`, yield_time_ms: 100 },
    VM_CALL,
  );
  assert.equal(serve.status, 'running', JSON.stringify(serve));
  await sh(
    tools,
    id,
    `for i in $(seq 300); do (exec 3<>/dev/tcp/127.0.0.1/${PORT}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`,
  );
  const x = await tools.ok('sandbox_expose', { sandbox_id: id, port: PORT }, VM_CALL);
  assert.equal(x.url, `http://127.0.0.1:${x.host_port}/`);
  let page = await fetchUrl(`${x.url}index.html`);
  assert.equal(page.status, 200);
  assert.equal(page.body, 'from the guest\n');
  const again = await tools.ok('sandbox_expose', { sandbox_id: id, port: PORT }, VM_CALL);
  assert.equal(again.url, x.url, 'the same URL');
  page = await fetchUrl(`${x.url}index.html`);
  assert.equal(page.body, 'from the guest\n');
});

ctx.finish();
