// 19: host files are never planted by container root (issue 12, item 2).
// In a managed workspace and in a direct one, a sandbox tries every route we
// know to leave a setuid/setgid program or file capabilities in /workspace
// (chmod, install -m 4755, cp -p / cp -a / mv / ln of the image's setuid
// programs, tar -xp, python and perl chmod, open and mknod with 04755,
// chmod through /proc/self/fd, a mode with bits above 16, openat2,
// fchmodat2, setxattr security.capability), and the host copies are
// checked on the host, not through the tools. The same attack in a plain
// container with the engine's default profile does plant the bits, so the
// check can fail. Ordinary work still works: chmod +x and running it, git
// checkout of executable files, dpkg -i of a package built here, a venv;
// io_uring_setup and openat2 answer ENOSYS while open works. Under gVisor
// (when the engine has runsc) the same holds, and a runsc without
// --oci-seccomp is refused. doctor's setuid_files attack passes.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
  BIN,
  CREATE_TIMEOUT,
  Server,
  childEnv,
  dockerRequest,
  measure,
  median,
  resultText,
  useServer,
} from '../lib/server.mjs';
import { ensureRunscSeccomp, hasOciSeccomp } from '../lib/runtimes.mjs';

const ctx = useServer();
const IMAGE = process.env.CHAT2SBX_TEMPLATE_IMAGE || `chat2sbx-template:${fs.readFileSync(new URL('../../VERSION', import.meta.url), 'utf8').trim()}`;

const home = (srv = ctx.srv) => path.join(srv.root, 'home');

function cli(args, srv = ctx.srv, env = {}) {
  const r = spawnSync(BIN, args, {
    cwd: srv.root,
    env: childEnv({ ...(srv.env || {}), ...env }, home(srv), srv.dataRoot, srv.port),
    encoding: 'utf8',
    timeout: 180_000,
  });
  r.desc = `chat2sbx ${args.join(' ')} -> exit ${r.status}; stdout: ${String(r.stdout).slice(0, 3000)}; stderr: ${String(r.stderr).slice(0, 1500)}`;
  return r;
}

// A command in the sandbox; returns {exit_code, output} once it ended.
async function run(tools, sandboxId, command) {
  let r = await tools.ok('bash', { sandbox_id: sandboxId, command, yield_time_ms: 30_000 });
  let output = r.output ?? '';
  const deadline = Date.now() + 90_000;
  while (r.status === 'running' || r.has_more_output) {
    assert.ok(Date.now() < deadline, `${command.slice(0, 80)}: still running`);
    r = await tools.ok('bash_poll', { sandbox_id: sandboxId, session_id: r.session_id, yield_time_ms: 10_000 });
    output += r.output ?? '';
  }
  assert.equal(r.status, 'exited', `${command.slice(0, 80)}: ${JSON.stringify(r)}`);
  return { exit_code: r.exit_code, output };
}

async function ok(tools, sandboxId, command) {
  const r = await run(tools, sandboxId, command);
  assert.equal(r.exit_code, 0, `${command.slice(0, 200)}: exit ${r.exit_code}; output: ${r.output}`);
  return r.output;
}

// Every route, run by bash in directory $1; one "@@ NAME ok|refused: ERR"
// line per route. Files the routes change are made first, so a refusal is
// never a missing file (the host check below counts them).
const ATTACK = String.raw`
set -u
d="$1"; mkdir -p "$d" && cd "$d" || exit 3
why() { printf '%s\n' "$1" | grep -m1 -E 'not permitted|not implemented|cross-device|not supported' || printf '%s\n' "$1" | tail -n1; }
try() { n=$1; shift; if o=$("$@" 2>&1); then echo "@@ $n ok"; else echo "@@ $n refused: $(why "$o")"; fi; }
cp /usr/bin/true base
for f in c1 c2 c3 c4 p1 p2 p3 p4 p5 p6 p7 p8 q1; do cp base $f; done
mkdir dir1
try 'chmod 4755' chmod 4755 c1
try 'chmod u+s' chmod u+s c2
try 'chmod g+s' chmod g+s c3
try 'chmod 6755' chmod 6755 c4
try 'chmod g+s on a directory' chmod g+s dir1
try 'install -m 4755' install -m 4755 base i1
try 'install -m 2755' install -m 2755 base i2
suid=/usr/bin/passwd; [ -u "$suid" ] || suid=$(find /usr/bin /bin -maxdepth 1 -perm -4000 -type f | head -n1)
try "cp -p $suid" cp -p "$suid" s1
try "cp -a $suid" cp -a "$suid" s2
cp -a "$suid" /tmp/moved 2>/dev/null || cp "$suid" /tmp/moved
try 'mv of a setuid file from the image' mv /usr/bin/chfn s3
try "ln $suid (hard link)" ln "$suid" s4
t=$(mktemp -d); cp base "$t/x1"; tar -C "$t" --mode=4755 -cf "$t.tar" x1; tar -C "$t" --mode=2755 --transform s/x1/x2/ -rf "$t.tar" x1
try 'tar -xpf (4755, 2755 members)' tar -xpf "$t.tar"
try 'tar -xf --same-owner --preserve-permissions' tar -xf "$t.tar" --same-owner --preserve-permissions --transform s/^x/y/
try 'perl chmod 04755' perl -e 'chmod(04755, "q1") == 1 or die "$!\n"'
try 'perl sysopen O_CREAT 04755' perl -MFcntl -e 'sysopen(my $h, "q2", O_CREAT|O_WRONLY, 04755) or die "$!\n"'
python3 - <<'PY'
import ctypes, os, shutil, stat
libc = ctypes.CDLL(None, use_errno=True)
def call(nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *a)
    if r < 0: raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r
def how(mode):
    return ctypes.byref((ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, mode, 0))
cap = bytes.fromhex('01000002' '80000000' + '00' * 12)  # v2, effective, CAP_SETUID
def fd_of(p):
    return os.open(p, os.O_RDONLY)
routes = [
    ('python os.chmod 0o4755', lambda: os.chmod('p1', 0o4755)),
    ('python os.fchmod 0o2755', lambda: os.fchmod(fd_of('p2'), 0o2755)),
    ('python os.chmod via /proc/self/fd', lambda: os.chmod('/proc/self/fd/%d' % fd_of('p3'), 0o4755)),
    ('python os.chmod follow_symlinks=False', lambda: os.chmod('p4', 0o4755, follow_symlinks=False)),
    ('python os.open O_CREAT 0o4755', lambda: os.close(os.open('n1', os.O_CREAT | os.O_WRONLY, 0o4755))),
    ('python O_TMPFILE 0o4755 + link', lambda: os.link('/proc/self/fd/%d' % os.open('.', os.O_TMPFILE | os.O_WRONLY, 0o4755), 'n2')),
    ('python creat 0o4755', lambda: os.close(call(85, b'n3', ctypes.c_ulong(0o4755)))),
    ('python mknod S_IFREG|0o4755', lambda: os.mknod('n4', stat.S_IFREG | 0o4755)),
    ('python shutil.copy2 of a setuid file', lambda: shutil.copy2(os.environ.get('SUID', '/usr/bin/passwd'), 'n5')),
    ('chmod with a mode above 16 bits', lambda: call(90, b'p5', ctypes.c_ulong((1 << 32) | 0o4755))),
    ('fchmodat 0o4755', lambda: call(268, ctypes.c_long(-100), b'p6', ctypes.c_ulong(0o4755))),
    ('openat2 O_CREAT mode 0o4755', lambda: os.close(call(437, ctypes.c_long(-100), b'n6', how(0o4755), ctypes.c_size_t(24)))),
    ('fchmodat2 0o4755', lambda: call(452, ctypes.c_long(-100), b'p7', ctypes.c_ulong(0o4755), 0)),
    ('setxattr security.capability (setcap)', lambda: os.setxattr('p8', 'security.capability', cap)),
]
for name, fn in routes:
    try:
        fn(); print('@@ %s ok' % name)
    except OSError as e:
        print('@@ %s refused: %s' % (name, e.strerror))
PY
echo @@end
`;

// Runs the attack in /workspace/<sub>; returns {name: 'ok'|'refused: ...'}.
async function attack(tools, sandboxId, sub) {
  const out = await ok(tools, sandboxId, `cat > /tmp/attack.sh <<'EOF'\n${ATTACK}\nEOF\nbash /tmp/attack.sh /workspace/${sub}`);
  assert.match(out, /@@end/, out);
  const routes = {};
  for (const m of out.matchAll(/^@@ (.+?) (ok|refused: .*)$/gm)) routes[m[1]] = m[2];
  assert.equal(Object.keys(routes).length, 29, `every route ran: ${out}`);
  return routes;
}

// Host side: every entry under dir (links not followed) whose mode has
// S_ISUID/S_ISGID, or with a security.capability attribute. python3 on the
// host reads the attributes (node has no getxattr).
function hostOffenders(dir) {
  const r = spawnSync(
    'python3',
    [
      '-c',
      `import os, sys, json
out = []
for root, dirs, files in os.walk(sys.argv[1]):
    for n in dirs + files:
        p = os.path.join(root, n); st = os.lstat(p)
        if st.st_mode & 0o6000: out.append('%s %o' % (os.path.relpath(p, sys.argv[1]), st.st_mode & 0o7777))
        try:
            os.getxattr(p, 'security.capability', follow_symlinks=False); out.append(os.path.relpath(p, sys.argv[1]) + ' caps')
        except OSError: pass
print(json.dumps({'n': sum(len(d) + len(f) for _, d, f in os.walk(sys.argv[1])), 'bad': out}))`,
      dir,
    ],
    { encoding: 'utf8' },
  );
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout);
}

function assertRefused(routes, where) {
  const planted = ['chmod 4755', 'chmod u+s', 'chmod g+s', 'chmod 6755', 'install -m 4755', 'python os.chmod 0o4755',
    'python os.open O_CREAT 0o4755', 'python mknod S_IFREG|0o4755', 'perl chmod 04755', 'chmod with a mode above 16 bits'];
  for (const name of planted) assert.match(routes[name], /^refused: .*Operation not permitted/, `${where}: ${name}: ${routes[name]}`);
  assert.match(routes['openat2 O_CREAT mode 0o4755'], /Function not implemented/, `${where}: openat2`);
}

// The host's view of the attack directory: every file reached the host,
// none has a bit or capabilities.
function assertHostClean(dir, where) {
  const seen = hostOffenders(dir);
  assert.ok(seen.n >= 14, `${where}: the sandbox's files are on the host (${seen.n} entries in ${dir})`);
  assert.deepEqual(seen.bad, [], `${where}: host files with setuid/setgid bits or capabilities in ${dir}`);
}

async function managedPath(tools, workspaceId) {
  const ws = (await tools.ok('workspace_list', {})).workspaces.find((w) => w.workspace_id === workspaceId);
  assert.ok(ws?.path, JSON.stringify(ws));
  return ws.path;
}

ctx.test('managed workspace: no route leaves a setuid/setgid bit or capabilities on the host copy', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  try {
    const routes = await attack(tools, sbx.sandbox_id, 'attack');
    console.log(`e2e 19: managed: ${JSON.stringify(routes)}`);
    assertRefused(routes, 'managed');
    assertHostClean(path.join(await managedPath(tools, sbx.workspace_id), 'attack'), 'managed');
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('direct workspace: the same routes fail, and writing an existing setuid file clears its bit', async () => {
  const tools = await ctx.tools();
  const dir = path.join(home(), 'repositories', 'direct-setuid');
  fs.mkdirSync(dir, { recursive: true });
  // The owner's own setuid file (made on the host): a sandbox that changes
  // it must not keep the bit (CAP_FSETID is dropped).
  fs.copyFileSync('/usr/bin/true', path.join(dir, 'owners-suid'));
  fs.chmodSync(path.join(dir, 'owners-suid'), 0o4755);
  const add = cli(['workspace', 'add', dir, '--mode', 'direct', '--json']);
  assert.equal(add.status, 0, add.desc);
  const sbx = await tools.create({ workspace_id: JSON.parse(add.stdout).workspace_id });
  try {
    assert.equal(sbx.workspace_mode, 'direct');
    const routes = await attack(tools, sbx.sandbox_id, 'attack');
    assertRefused(routes, 'direct');
    assertHostClean(path.join(dir, 'attack'), 'direct');
    await ok(tools, sbx.sandbox_id, 'printf "#!/bin/sh\\necho replaced\\n" > /workspace/owners-suid');
    assert.equal(fs.lstatSync(path.join(dir, 'owners-suid')).mode & 0o6000, 0, 'the write cleared the setuid bit');
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('control: the same attack with the engine default profile does plant the bits (the check can fail)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'c2s-e2e19-control-'));
  const name = `c2s-e2e19-control-${process.pid}`;
  fs.writeFileSync(path.join(dir, 'attack.sh'), ATTACK);
  try {
    const c = await dockerRequest('POST', `/containers/create?name=${name}`, {
      Image: IMAGE,
      Entrypoint: ['bash', '/w/attack.sh', '/w/attack'],
      HostConfig: {
        NetworkMode: 'none',
        SecurityOpt: ['no-new-privileges'],
        CapDrop: ['NET_RAW', 'MKNOD', 'AUDIT_WRITE', 'SYS_CHROOT', 'SETFCAP'],
        Mounts: [{ Type: 'bind', Source: dir, Target: '/w' }],
      },
    });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    await dockerRequest('POST', `/containers/${name}/start`);
    await dockerRequest('POST', `/containers/${name}/wait`);
    const bad = hostOffenders(path.join(dir, 'attack')).bad;
    assert.ok(bad.some((b) => /^c1 4755$/.test(b)), `chmod 4755 planted a setuid file without the profile: ${bad}`);
    assert.ok(bad.length >= 10, `most routes plant a bit without the profile: ${bad}`);
  } finally {
    await dockerRequest('DELETE', `/containers/${name}?force=1&v=1`).catch(() => {});
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

ctx.test('ordinary work still works: chmod +x, git checkout of executables, dpkg -i, a venv, open', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  const host = await managedPath(tools, sbx.workspace_id);
  try {
    // chmod +x and running it; modes without the two bits.
    assert.equal(
      await ok(tools, sbx.sandbox_id, `printf '#!/bin/sh\\necho ran\\n' > run.sh && chmod +x run.sh && ./run.sh &&
        mkdir -p shared && chmod 1777 shared && chmod 0640 run.sh && chmod u=rwx,go=rx run.sh && stat -c %a run.sh shared`),
      'ran\n755\n1777\n',
    );
    // git: an executable file survives rm + checkout, and a branch switch.
    const gitOut = await ok(
      tools,
      sbx.sandbox_id,
      `set -e; git init -q repo; cd repo; git config user.email a@b; git config user.name a
       printf '#!/bin/sh\\necho tool\\n' > tool.sh; chmod 755 tool.sh; git add tool.sh; git commit -qm one
       git checkout -qb other; git rm -q tool.sh; git commit -qm two; git checkout -q main || git checkout -q master
       test -x tool.sh && ./tool.sh; rm tool.sh; git checkout -- tool.sh; ./tool.sh; git ls-files -s tool.sh | cut -c1-6`,
    );
    assert.equal(gitOut, 'tool\ntool\n100755\n');
    // dpkg -i of a package built here (no package source reaches a sandbox).
    const deb = fs.mkdtempSync(path.join(os.tmpdir(), 'c2s-e2e19-deb-'));
    try {
      const build = (pkg, mode) => {
        const root = path.join(deb, pkg);
        fs.mkdirSync(path.join(root, 'DEBIAN'), { recursive: true });
        fs.mkdirSync(path.join(root, 'usr', 'local', 'bin'), { recursive: true });
        fs.writeFileSync(path.join(root, 'DEBIAN', 'control'),
          `Package: ${pkg}\nVersion: 1.0\nArchitecture: all\nMaintainer: e2e <e2e@localhost>\nDescription: e2e 19\n`);
        fs.writeFileSync(path.join(root, 'usr', 'local', 'bin', pkg), `#!/bin/sh\necho ${pkg} works\n`);
        fs.chmodSync(path.join(root, 'usr', 'local', 'bin', pkg), mode);
        const r = spawnSync('dpkg-deb', ['--root-owner-group', '-b', root, path.join(host, `${pkg}.deb`)], { encoding: 'utf8' });
        assert.equal(r.status, 0, r.stderr);
      };
      build('c2s-hello', 0o755);
      build('c2s-setuid', 0o4755);
    } finally {
      fs.rmSync(deb, { recursive: true, force: true });
    }
    assert.match(await ok(tools, sbx.sandbox_id, 'dpkg -i c2s-hello.deb >/dev/null && c2s-hello && dpkg -s c2s-hello | grep Status'),
      /^c2s-hello works\nStatus: install ok installed\n$/);
    // The price, stated: a package that ships a setuid program cannot be
    // unpacked (sudo, cron, dbus ...); the sandbox is root already.
    const suidPkg = await run(tools, sbx.sandbox_id, 'dpkg -i c2s-setuid.deb');
    assert.notEqual(suidPkg.exit_code, 0, suidPkg.output);
    assert.match(suidPkg.output, /error setting permissions of '.*c2s-setuid.*': Operation not permitted/);
    // A Python venv (a package-manager-like install of files and modes).
    assert.match(await ok(tools, sbx.sandbox_id, 'python3 -m venv --without-pip /tmp/v && /tmp/v/bin/python -c "print(42)"'), /^42\n$/);
    // io_uring and openat2 answer ENOSYS, so programs fall back; open works.
    const sys = await ok(tools, sbx.sandbox_id, `python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def res(r): return 'ok' if r >= 0 else os.strerror(ctypes.get_errno())
print('io_uring_setup', res(libc.syscall(425, 4, ctypes.byref((ctypes.c_uint32 * 30)()))))
print('io_uring_enter', res(libc.syscall(426, 0, 0, 0, 0, 0, 0)))
print('io_uring_register', res(libc.syscall(427, 0, 0, 0, 0)))
how = (ctypes.c_uint64 * 3)(0, 0, 0)
print('openat2', res(libc.syscall(437, -100, b'/etc/hostname', ctypes.byref(how), 24)))
fd = os.open('made.txt', os.O_CREAT | os.O_WRONLY, 0o644); os.write(fd, b'x'); os.close(fd)
print('open', oct(os.stat('made.txt').st_mode & 0o7777), open('/etc/hostname').read() != '')
PY`);
    assert.equal(
      sys,
      'io_uring_setup Function not implemented\nio_uring_enter Function not implemented\n' +
        'io_uring_register Function not implemented\nopenat2 Function not implemented\nopen 0o644 True\n',
    );
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('the engine gets the profile: SecurityOpt seccomp=..., CapDrop FSETID; cost per create measured', async () => {
  const tools = await ctx.tools();
  const sbx = await tools.create({});
  try {
    const insp = (await dockerRequest('GET', `/containers/${sbx.sandbox_id}/json`)).body;
    const opt = insp.HostConfig.SecurityOpt.find((o) => o.startsWith('seccomp='));
    assert.ok(opt, JSON.stringify(insp.HostConfig.SecurityOpt));
    assert.ok(insp.HostConfig.SecurityOpt.includes('no-new-privileges'));
    assert.ok(insp.HostConfig.CapDrop.includes('FSETID'), JSON.stringify(insp.HostConfig.CapDrop));
    const profile = JSON.parse(opt.slice('seccomp='.length));
    const chmod = profile.syscalls.filter((r) => r.names.includes('chmod'));
    assert.equal(chmod.length, 1);
    assert.deepEqual(chmod[0].args, [{ index: 1, value: 0o6000, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }]);

    // Cost: the same raw create with and without the profile, alternated.
    const body = (withProfile) => ({
      Image: IMAGE,
      Entrypoint: ['true'],
      HostConfig: { NetworkMode: 'none', SecurityOpt: withProfile ? ['no-new-privileges', opt] : ['no-new-privileges'] },
    });
    const times = { default: [], sandbox: [] };
    for (let i = 0; i < 10; i++) {
      for (const k of i % 2 ? ['default', 'sandbox'] : ['sandbox', 'default']) {
        const name = `c2s-e2e19-cost-${process.pid}-${k}-${i}`;
        const t0 = process.hrtime.bigint();
        const c = await dockerRequest('POST', `/containers/create?name=${name}`, body(k === 'sandbox'));
        times[k].push(Number(process.hrtime.bigint() - t0) / 1e6);
        assert.equal(c.status, 201);
        await dockerRequest('DELETE', `/containers/${name}?force=1`);
      }
    }
    measure({
      create_body_bytes_default: JSON.stringify(body(false)).length,
      create_body_bytes_sandbox: JSON.stringify(body(true)).length,
      create_ms_p50_default: median(times.default).toFixed(1),
      create_ms_p50_sandbox: median(times.sandbox).toFixed(1),
    });
  } finally {
    await tools.destroyQuietly(sbx.sandbox_id);
  }
});

ctx.test('doctor: the setuid_files attack passes and names what it proved', () => {
  const r = cli(['doctor', '--json']);
  assert.equal(r.status, 0, r.desc);
  const check = JSON.parse(r.stdout).checks.find((c) => c.name === 'setuid_files');
  assert.equal(check?.result, 'passed', JSON.stringify(check));
  assert.match(check.detail, /routes tried, no host file under .* has S_ISUID, S_ISGID or file capabilities/);
  assert.match(check.detail, /chmod 4755 refused \(Operation not permitted\)/);
  assert.match(check.detail, /io_uring_setup refused/);
});

ctx.test('gVisor (runsc): the profile applies, no bit reaches the host; runsc without --oci-seccomp is refused', async (t) => {
  const { runsc, why } = await ensureRunscSeccomp();
  if (!runsc) {
    console.log(`e2e 19: gVisor test skipped: ${why}`);
    t.skip(why);
    return;
  }
  // A second registration of the same runsc without the flag, to see it refused.
  const daemonJson = process.env.CHAT2SBX_DAEMON_JSON || '/etc/docker/daemon.json';
  const plainName = 'c2s-e2e19-runsc-plain';
  const original = fs.readFileSync(daemonJson, 'utf8');
  const reload = async (want) => {
    process.kill(Number(fs.readFileSync('/var/run/docker.pid', 'utf8').trim()), 'SIGHUP');
    for (let i = 0; i < 50; i++) {
      const rts = (await dockerRequest('GET', '/info')).body?.Runtimes || {};
      if (Boolean(rts[plainName]) === want) return;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.fail(`the engine did not ${want ? 'add' : 'drop'} runtime ${plainName} on reload`);
  };
  const srv = new Server();
  try {
    await srv.start({ env: { CHAT2SBX_RUNTIME: 'runsc' } });
    const tools = srv.tools(await srv.client());
    const sbx = await tools.create({});
    try {
      assert.equal(sbx.runtime, 'runsc');
      const routes = await attack(tools, sbx.sandbox_id, 'attack');
      console.log(`e2e 19: gVisor: ${JSON.stringify(routes)}`);
      for (const name of ['chmod 4755', 'chmod g+s', 'install -m 4755', 'python os.chmod 0o4755', 'python os.open O_CREAT 0o4755'])
        assert.match(routes[name], /^refused: .*Operation not permitted/, `gVisor: ${name}: ${routes[name]}`);
      // gVisor of 2022 answers EPERM (it drops errnoRet) where runc says ENOSYS.
      assert.match(routes['openat2 O_CREAT mode 0o4755'], /^refused: (Function not implemented|Operation not permitted)/);
      const ws = (await tools.ok('workspace_list', {})).workspaces.find((w) => w.workspace_id === sbx.workspace_id);
      assertHostClean(path.join(ws.path, 'attack'), 'gVisor');
    } finally {
      await tools.destroyQuietly(sbx.sandbox_id);
    }
    await srv.stop();

    const d = JSON.parse(original);
    d.runtimes[plainName] = { path: runsc.path, runtimeArgs: ['--network=none'] };
    fs.writeFileSync(daemonJson, JSON.stringify(d, null, 2) + '\n');
    await reload(true);
    await srv.start({ env: { CHAT2SBX_RUNTIME: plainName } });
    const tools2 = srv.tools(await srv.client());
    const res = await tools2.call('sandbox_create', {}, CREATE_TIMEOUT);
    assert.equal(res.isError, true, resultText(res));
    assert.match(resultText(res), /registered without --oci-seccomp.*daemon\.json.*no sandbox was created/s);
    assert.equal((await tools2.ok('sandbox_list', {})).sandboxes.length, 0);
  } finally {
    await srv.stop();
    await srv.cleanupContainers();
    await srv.removeRoot();
    if (fs.readFileSync(daemonJson, 'utf8') !== original) {
      fs.writeFileSync(daemonJson, original);
      await reload(false);
    }
    assert.ok(hasOciSeccomp((await dockerRequest('GET', '/info')).body.Runtimes.runsc));
  }
});

ctx.finish();
