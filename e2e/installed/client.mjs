// client.mjs: the MCP client of e2e/installed/run.sh (official SDK, the
// version pinned in e2e/package-lock.json). It talks to a chat2sbx serve a
// normal user started from the installed files; run.sh runs it in phases,
// keeping what a later phase needs in a small JSON state file.
//   node client.mjs before URL TOKEN STATE  create a sandbox, run bash, read a
//                                           file, start a long-lived session
//   node client.mjs after URL TOKEN STATE   (after the upgrade and a restart of
//                                           serve) the same sandbox answers and
//                                           its session still does
//   node client.mjs destroy URL TOKEN STATE destroy it
import assert from 'node:assert/strict';
import fs from 'node:fs';

import { Tools, connectClient, resultText } from '../lib/server.mjs';

const [phase, url, token, statePath] = process.argv.slice(2);
if (!phase || !url || !token || !statePath) {
  console.error('usage: node client.mjs before|after|destroy URL TOKEN STATE');
  process.exit(2);
}

const client = await connectClient(url, { name: 'chat2sbx-e2e-installed', headers: { Authorization: `Bearer ${token}` } });
const tools = new Tools(client);
const state = fs.existsSync(statePath) ? JSON.parse(fs.readFileSync(statePath, 'utf8')) : {};
const save = () => fs.writeFileSync(statePath, JSON.stringify(state, null, 1));

// Polls an interactive session until its output contains want (bounded).
async function pollFor(sandbox_id, session_id, want) {
  let seen = '';
  for (let i = 0; i < 20 && !seen.includes(want); i++) {
    const r = await tools.ok('bash_poll', { sandbox_id, session_id, yield_time_ms: 1500 });
    seen += r.output ?? '';
  }
  assert.ok(seen.includes(want), `session ${session_id} did not answer '${want}'; it said: ${seen.slice(-500)}`);
}

try {
  if (phase === 'before') {
    const t0 = Date.now();
    const sb = await tools.create({});
    state.sandbox_id = sb.sandbox_id;
    state.create_ms = Date.now() - t0;
    const id = sb.sandbox_id;
    const b = await tools.ok('bash', { sandbox_id: id, command: 'echo hello-$((6*7)); id -u; printf keep > /workspace/note.txt' });
    assert.equal(b.exit_code, 0, JSON.stringify(b));
    assert.match(b.output, /hello-42/);
    const r = await tools.ok('read', { sandbox_id: id, path: '/workspace/note.txt' });
    assert.match(JSON.stringify(r), /keep/, `read: ${JSON.stringify(r).slice(0, 300)}`);
    // A session that lives across the upgrade: echoes each line it reads.
    const s = await tools.ok('bash', {
      sandbox_id: id,
      command: 'while IFS= read -r l; do echo "got:$l"; done',
      interactive: true,
      yield_time_ms: 500,
    });
    assert.equal(s.status, 'running', JSON.stringify(s));
    state.session_id = s.session_id;
    await tools.ok('bash_input', { sandbox_id: id, session_id: s.session_id, data: 'one\n' });
    await pollFor(id, s.session_id, 'got:one');
    save();
    console.log(`client: before: sandbox ${id}, session ${s.session_id}, create ${state.create_ms} ms`);
  } else if (phase === 'after') {
    const id = state.sandbox_id;
    const g = await tools.ok('sandbox_get', { sandbox_id: id });
    assert.equal(g.status, 'running', `after the upgrade: ${JSON.stringify(g).slice(0, 400)}`);
    await tools.ok('bash_input', { sandbox_id: id, session_id: state.session_id, data: 'two\n' });
    await pollFor(id, state.session_id, 'got:two');
    const b = await tools.ok('bash', { sandbox_id: id, command: 'cat /workspace/note.txt' });
    assert.equal(b.output.trim(), 'keep');
    console.log(`client: after: sandbox ${id} re-attached, session ${state.session_id} answers`);
  } else if (phase === 'destroy') {
    const d = await tools.call('sandbox_destroy', { sandbox_id: state.sandbox_id }, { timeout: 90_000 });
    assert.ok(!d.isError, resultText(d));
    console.log(`client: destroyed ${state.sandbox_id}`);
  } else {
    throw new Error(`unknown phase '${phase}'`);
  }
} finally {
  await client.close();
}
