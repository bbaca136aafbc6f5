// Helpers of the direct-mode git scenarios (20, 32): the CLI against the
// file's server, the owner's own git on the host, a fresh repository under
// the allowed root, and commands run in a sandbox until they end.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

import { runCli, runCliJson } from './clones.mjs';

export const home = (ctx) => path.join(ctx.srv.root, 'home');
export const reposRoot = (ctx) => path.join(home(ctx), 'repositories');

export const cli = (ctx, args) => runCli(ctx.srv, args, { timeout: 30_000 });
export const cliJson = (ctx, args) => runCliJson(ctx.srv, args);

// The owner's git on the host: their own config only (no global or system
// file that could hide or add behaviour).
export function hostGit(dir, ...args) {
  return spawnSync('git', ['-c', 'user.name=owner', '-c', 'user.email=owner@host', '-C', dir, ...args], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', LC_ALL: 'C', GIT_EDITOR: 'true' },
  });
}

export function hostGitOk(dir, ...args) {
  const r = hostGit(dir, ...args);
  assert.equal(r.status, 0, `host git ${args.join(' ')} in ${dir}: ${r.stderr}${r.error ? ` (${r.error.message})` : ''}`);
  return r.stdout;
}

// A fresh repository under the allowed root with one commit and a hook of
// the owner's (which must stay as it is).
export function makeRepo(ctx, name) {
  const dir = path.join(reposRoot(ctx), name);
  fs.mkdirSync(dir, { recursive: true });
  hostGitOk(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, 'README'), 'hello\n');
  hostGitOk(dir, 'add', 'README');
  hostGitOk(dir, 'commit', '-q', '-m', 'first');
  fs.writeFileSync(path.join(dir, '.git/hooks/pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
  return dir;
}

export function registerDirect(ctx, dir) {
  return cliJson(ctx, ['workspace', 'add', dir, '--mode', 'direct', '--json']).workspace_id;
}

// Runs command in the sandbox; returns {code, output} (output drained).
export async function run(tools, sandboxId, command) {
  let r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
  let output = r.output ?? '';
  const deadline = Date.now() + 60_000;
  while (r.status === 'running' || r.has_more_output) {
    assert.ok(Date.now() < deadline, `${command}: still running: ${JSON.stringify(r)}`);
    r = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 5000 });
    output += r.output ?? '';
  }
  assert.equal(r.status, 'exited', `${command}: ${JSON.stringify(r)}`);
  return { code: r.exit_code, output };
}

export async function sh(tools, sandboxId, command) {
  const r = await run(tools, sandboxId, command);
  assert.equal(r.code, 0, `${command}: exit ${r.code}; output: ${r.output}`);
  return r.output;
}
