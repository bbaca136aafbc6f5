// preview.mjs: a dev server in a sandbox for the sandbox_expose tests.
import assert from 'node:assert/strict';
import net from 'node:net';

// Starts `python3 -m http.server port` (in /workspace, on bind) in a bash
// session of sandboxId and waits (bounded) until it listens; returns the
// session's id.
export async function startDevServer(tools, sandboxId, port, bind = '0.0.0.0') {
  const serve = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command: `cd /workspace && exec python3 -m http.server ${port} --bind ${bind}`,
    yield_time_ms: 100,
  });
  assert.equal(serve.status, 'running', JSON.stringify(serve));
  const wait = await tools.ok('bash', {
    sandbox_id: sandboxId,
    command: `for i in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/${port}) 2>/dev/null && exit 0; sleep 0.1; done; exit 1`,
    yield_time_ms: 30_000,
  });
  assert.equal(wait.exit_code, 0, `the dev server never listened: ${JSON.stringify(wait)}`);
  return serve.session_id;
}

// Whether a TCP connection to host:port is refused (vs accepted).
export function refused(host, port) {
  return new Promise((resolve) => {
    const s = net.connect({ host, port });
    s.setTimeout(5000, () => {
      s.destroy();
      resolve(false);
    });
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', (e) => resolve(e.code === 'ECONNREFUSED' || e.code === 'ECONNRESET'));
  });
}
