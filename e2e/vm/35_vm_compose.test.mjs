// 35 (make test-vm): `docker compose` inside a vm sandbox (issue 15, item 5):
// Debian's docker-compose in the guest runs a two-service compose file on
// the guest's own engine, from an image the test imports from a tarball it
// builds in the guest (no registry is reachable): a web service and a
// client that reaches it by its service name over the project's network.
// The host's engine sees none of it. Never asserts speed.
import assert from 'node:assert/strict';

import { dockerRequest, useServer } from '../lib/server.mjs';
import { VM_CALL, VM_CREATE, VM_TEST, runToEnd } from '../lib/vm.mjs';

const ctx = useServer({ env: { CHAT2SBX_RUNTIME: 'vm' } });

const COMPOSE = `services:
  web:
    image: c2s-py:1
    command: ["/usr/bin/python3", "-m", "http.server", "8080", "--directory", "/srv"]
    volumes:
      - ./site:/srv:ro
  probe:
    image: c2s-py:1
    depends_on: [web]
    command:
      - /usr/bin/python3
      - -c
      - |
        import time, urllib.request
        for i in range(120):
            try:
                print(urllib.request.urlopen("http://web:8080/index.html", timeout=5).read().decode(), end="")
                break
            except Exception as e:
                time.sleep(1)
        else:
            raise SystemExit("web never answered")
`;

ctx.test('docker-compose runs two services from an imported image; they talk by name', VM_TEST, async (t) => {
  const tools = await ctx.tools();
  const sbx = await tools.ok('sandbox_create', { memory: '1536m' }, VM_CREATE);
  const id = sbx.sandbox_id;
  t.after(async () => (await ctx.tools()).destroyQuietly(id));
  assert.equal(sbx.runtime, 'vm');

  // An image of the guest's own python3, its libraries and standard library.
  const image = await runToEnd(
    tools,
    id,
    [
      'set -e',
      'py=$(readlink -f /usr/bin/python3)',
      // Paths as the loader finds them; -h stores what symlinks point to.
      'libs=$(ldd "$py" | grep -o "/[^ ]*" | sed "s|^/||")',
      'tar -C / -chf /tmp/py.tar --exclude=__pycache__ --exclude=test --exclude=idlelib usr/bin/python3 "${py#/}" $libs "usr/lib/$(basename "$py")"',
      'docker import /tmp/py.tar c2s-py:1 >/dev/null && rm -f /tmp/py.tar',
      'docker run --rm c2s-py:1 /usr/bin/python3 -c "print(\\"py-ok\\")"',
    ].join('\n'),
  );
  assert.equal(image.exit_code, 0, JSON.stringify(image).slice(-2000));
  assert.match(image.output, /^py-ok$/m);

  await tools.ok('write', { sandbox_id: id, path: 'app/docker-compose.yml', content: COMPOSE, create_dirs: true }, VM_CALL);
  await tools.ok('write', { sandbox_id: id, path: 'app/site/index.html', content: 'served-by-compose\n', create_dirs: true }, VM_CALL);
  const up = await runToEnd(
    tools,
    id,
    'cd /workspace/app && docker-compose version --short && docker-compose up --no-color --abort-on-container-exit --exit-code-from probe 2>&1; rc=$?; docker-compose down -v >/dev/null 2>&1; exit $rc',
  );
  assert.equal(up.exit_code, 0, up.output.slice(-3000));
  assert.match(up.output, /probe.*\|\s*served-by-compose/, up.output.slice(-3000));
  const left = await runToEnd(tools, id, 'docker ps -aq | wc -l; docker network ls --format "{{.Name}}" | grep -c app_ || true');
  assert.equal(left.output, '0\n0\n', 'compose down removed its containers and network');

  const host = await dockerRequest('GET', '/images/c2s-py:1/json');
  assert.equal(host.status, 404, 'the image lives in the guest only');
});

ctx.finish();
