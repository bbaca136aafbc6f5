// sweep.mjs: after a run, finds containers a test left behind: they carry a
// registry label (org.chat2sbx.registry, or .expose.registry for expose
// bridges) that points into an e2e data root under the temp folder which no
// longer exists. Removes them (force, with volumes) and prints each one, so
// a test that leaks shows up in the log instead of piling up on the machine.
// Never touches a container whose registry is outside the temp folder or
// still present (a user's sandboxes, or a run in progress).
// Usage: node e2e/lib/sweep.mjs [socket]. Exit 0 always; prints what it did.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';

const socketPath = process.argv[2] || '/var/run/docker.sock';
const tmp = fs.realpathSync(os.tmpdir());

function engine(method, url) {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath, method, path: url, timeout: 30000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`${method} ${url}: no answer in 30 s`)));
    req.on('error', reject);
    req.end();
  });
}

function leftover(registry) {
  if (typeof registry !== 'string' || !path.isAbsolute(registry)) return false;
  const rel = path.relative(tmp, path.resolve(registry));
  if (rel.startsWith('..') || !rel.startsWith('chat2sbx-e2e-')) return false;
  return !fs.existsSync(registry);
}

try {
  const res = await engine('GET', '/containers/json?all=1');
  if (res.status !== 200) throw new Error(`list containers: HTTP ${res.status}`);
  let removed = 0;
  for (const c of JSON.parse(res.body)) {
    const labels = c.Labels || {};
    const registry = labels['org.chat2sbx.registry'] ?? labels['org.chat2sbx.expose.registry'];
    if (!leftover(registry)) continue;
    const name = (c.Names || [c.Id])[0];
    const del = await engine('DELETE', `/containers/${c.Id}?force=1&v=1`);
    console.log(`e2e: leftover container ${name} (${c.State}, registry ${registry}): ` +
      (del.status < 300 ? 'removed' : `remove failed, HTTP ${del.status}`));
    removed++;
  }
  if (removed) console.log(`e2e: ${removed} container(s) were left by a test whose data root is gone`);
} catch (e) {
  console.log(`e2e: leftover sweep skipped: ${e.message}`);
}
