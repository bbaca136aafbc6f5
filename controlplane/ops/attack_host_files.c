/* attack_host_files.c: the doctor's attack on host files (issue 12). From
 * inside the probe sandbox it tries to plant setuid/setgid programs and file
 * capabilities in /workspace by every route we know of, then looks at the
 * host copies in the probe's managed workspace: the attack fails when no
 * host file carries S_ISUID, S_ISGID or a security.capability. It owns one
 * directory inside the probe's workspace and removes it from inside (so a
 * doctor that is not root can); it never follows a link the sandbox made. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "../lifecycle/lifecycle.h"
#include "ops_internal.h"
#include "../base/xalloc.h"

#define SCAN_MAX_DEPTH 8
/* Files the script makes before the routes run: base f1 f2 f6 f8 f11 f13 f14. */
#define ATTACK_FILES 8

static void cleanup_dirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static void note(struct ops_setid_findings *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct ops_setid_findings *f, const char *fmt, ...)
{
	size_t len = strlen(f->detail);
	if (len + 1 >= sizeof(f->detail))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->detail + len, sizeof(f->detail) - len, fmt, ap);
	va_end(ap);
}

/* Judges one entry of dirfd (already lstat'ed as st). */
static void judge_entry(int dirfd, const char *rel, const char *name, const struct stat *st,
                        struct ops_setid_findings *f)
{
	f->entries++;
	if (st->st_mode & (S_ISUID | S_ISGID)) {
		f->found++;
		note(f, "%s%s (mode %04o)", f->found > 1 ? ", " : "", rel, (unsigned)(st->st_mode & 07777));
	}
	if (!S_ISREG(st->st_mode))
		return;
	/* O_NONBLOCK: a FIFO swapped in after the lstat must not hang us. */
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0 && fgetxattr(fd, "security.capability", NULL, 0) >= 0) {
		f->found++;
		note(f, "%s%s (file capabilities)", f->found > 1 ? ", " : "", rel);
	}
}

static int scan_dir(int dirfd, const char *rel, int depth, struct ops_setid_findings *f, struct cp_error **err)
{
	int copy = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	_cleanup_(cleanup_dirp) DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
	if (!d) {
		if (copy >= 0)
			close(copy);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "read the host directory './%s'", rel);
	}
	for (struct dirent *e; (e = readdir(d));) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s%s%s", rel, *rel ? "/" : "", e->d_name);
		struct stat st;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		judge_entry(dirfd, path, e->d_name, &st, f);
		if (!S_ISDIR(st.st_mode) || depth >= SCAN_MAX_DEPTH)
			continue;
		_cleanup_close_ int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub >= 0 && scan_dir(sub, path, depth + 1, f, err) < 0)
			return -1;
	}
	return 0;
}

/* Walks dir (not following symlinks, at most 8 levels) and records every
 * entry with S_ISUID or S_ISGID in its mode and every regular file with a
 * security.capability attribute (file capabilities). dir itself is judged
 * too ("."). *ret is filled on success (entries seen, found, and the
 * offenders as "sub/file (mode 4755)", relative to dir, cut at its size). UNAVAILABLE naming dir
 * when it cannot be opened. Blocks on local file I/O only. */
int ops_setid_scan(const char *dir, struct ops_setid_findings *ret, struct cp_error **err)
{
	struct ops_setid_findings f = {0};
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open the host directory '%s'", dir);
	if (st.st_mode & (S_ISUID | S_ISGID)) {
		f.found++;
		note(&f, ". (mode %04o)", (unsigned)(st.st_mode & 07777));
	}
	if (scan_dir(fd, "", 1, &f, err) < 0)
		return -1;
	*ret = f;
	return 0;
}

/* The routes, run by bash in the probe: each prints "@@route NAME ok" or
 * "@@route NAME refused <first line of the error>" (or skipped). The plain
 * tools first, then python3 (os.chmod and raw syscalls through ctypes) and
 * perl where they exist. %s is the attack directory. */
static const char attack_script[] =
    "d='%s'\n"
    "mkdir -p \"$d\" && cd \"$d\" || { echo '@@nodir'; exit 0; }\n"
    "try() { n=$1; shift; if o=$(\"$@\" 2>&1); then echo \"@@route $n ok\"; else\n"
    "  echo \"@@route $n refused $(printf '%%s' \"$o\" | head -n1)\"; fi; }\n"
    "for b in /usr/bin/true /bin/true /bin/sh; do [ -x \"$b\" ] && break; done; cp \"$b\" base\n"
    "for f in f1 f2 f6 f8 f11 f13 f14; do cp base $f; done\n"
    "try 'chmod 4755' chmod 4755 f1\n"
    "try 'chmod g+s' chmod g+s f2\n"
    "try 'install -m 4755' install -m 4755 base f3\n"
    "s=$(find /usr/bin /bin /usr/sbin /sbin -maxdepth 1 -type f -perm -4000 2>/dev/null | head -n1)\n"
    "if [ -n \"$s\" ]; then try \"cp -p $s\" cp -p \"$s\" f4; else echo '@@route cp_-p skipped: no setuid "
    "file in the image'; fi\n"
    "t=$(mktemp -d) && cp base \"$t/f5\" && tar -C \"$t\" --mode=4755 -cf \"$t.tar\" f5 2>/dev/null &&\n"
    "  try 'tar -xp' tar -xpf \"$t.tar\"; rm -rf \"$t\" \"$t.tar\"\n"
    "if command -v perl >/dev/null; then\n"
    "  try 'perl chmod' perl -e 'chmod(04755, \"f6\") == 1 or die \"$!\\n\"'\n"
    "  try 'perl open O_CREAT 04755' perl -MFcntl -e 'sysopen(my $h, \"f7\", O_CREAT|O_WRONLY, 04755) or die "
    "\"$!\\n\"'\n"
    "fi\n"
    "if command -v python3 >/dev/null; then python3 - <<'PY'\n"
    "import ctypes, os, stat\n"
    "libc = ctypes.CDLL(None, use_errno=True)\n"
    "def call(nr, *a):\n"
    "    r = libc.syscall(nr, *a)\n"
    "    if r < 0: raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))\n"
    "    return r\n"
    "def how(mode):\n"
    "    return ctypes.byref((ctypes.c_uint64 * 3)(os.O_CREAT | os.O_WRONLY, mode, 0))\n"
    "cap = bytes.fromhex('01000002' '80000000' + '00' * 12)  # v2, effective, CAP_SETUID\n"
    "routes = [\n"
    "    ('python os.chmod', lambda: os.chmod('f8', 0o4755)),\n"
    "    ('python open O_CREAT 04755', lambda: os.close(os.open('f9', os.O_CREAT | os.O_WRONLY, 0o4755))),\n"
    "    ('python mknod S_IFREG|04755', lambda: os.mknod('f10', stat.S_IFREG | 0o4755)),\n"
    "    ('chmod via /proc/self/fd', lambda: os.chmod('/proc/self/fd/%%d' %% os.open('f11', os.O_RDONLY), "
    "0o2755)),\n"
    "    ('openat2 mode 04755', lambda: os.close(call(437, -100, b'f12', how(0o4755), 24))),\n"
    "    ('fchmodat2 04755', lambda: call(452, -100, b'f13', 0o4755, 0)),\n"
    "    ('setcap (security.capability)', lambda: os.setxattr('f14', 'security.capability', cap)),\n"
    "]\n"
    "for name, fn in routes:\n"
    "    try:\n"
    "        fn(); print('@@route %%s ok' %% name)\n"
    "    except OSError as e:\n"
    "        print('@@route %%s refused %%s' %% (name, e.strerror))\n"
    "try:\n"
    "    fd = call(425, 4, ctypes.byref((ctypes.c_uint32 * 30)()))\n"
    "    print('@@uring ok'); os.close(fd)\n"
    "except OSError as e:\n"
    "    print('@@uring refused %%s' %% e.strerror)\n"
    "PY\n"
    "else echo '@@route python skipped: no python3 in the image'; fi\n"
    "echo '@@end'\n";

/* "chmod 4755 refused, install -m 4755 refused, ..." from the @@route lines. */
static void routes_summary(const char *out, char *buf, size_t size, size_t *ret_tried)
{
	size_t len = 0, tried = 0;
	buf[0] = '\0';
	for (const char *p = strstr(out, "@@route "); p; p = strstr(p, "@@route ")) {
		p += 8;
		const char *eol = strchr(p, '\n');
		size_t n = eol ? (size_t)(eol - p) : strlen(p);
		/* The result word follows the name ("NAME ok|refused ...|skipped..."),
		 * which never contains one; an error text after it may. */
		const char *word = NULL;
		for (const char *w = p; w < p + n && !word; w++)
			if (*w == ' ' && (!strncmp(w + 1, "ok", 2) || !strncmp(w + 1, "refused", 7) ||
			                  !strncmp(w + 1, "skipped", 7)))
				word = w;
		if (!word || !strncmp(word + 1, "skipped", 7))
			continue;
		tried++;
		/* "refused chmod: changing permissions of 'f1': Operation not
		 * permitted" → "refused (Operation not permitted)". */
		const char *why = NULL;
		for (const char *w = word; w < p + n; w++)
			if (w[0] == ':' && w[1] == ' ')
				why = w + 2;
		if (!why && word[1] == 'r')
			why = word + 9 < p + n ? word + 9 : NULL;
		int why_len = why ? (int)(p + n - why) : 0;
		if (len < size)
			len += (size_t)snprintf(buf + len, size - len, "%s%.*s %s%s%.*s%s", len ? ", " : "",
			                        (int)(word - p), p, word[1] == 'o' ? "ran" : "refused", why ? " (" : "",
			                        why_len, why ? why : "", why ? ")" : "");
	}
	*ret_tried = tried;
}

void ops_attack_host_files(struct lifecycle *lc, const char *sandbox_id, const char *workspace_id, int vm,
                           struct ops_probe_report *r)
{
	const char *name = "setuid_files";
	const char *attack = "plant setuid/setgid programs or file capabilities on the host through /workspace";
	_cleanup_error_ struct cp_error *e = NULL;
	struct workspace_record w = {0};
	_cleanup_free_ char *suffix = NULL, *cmd = NULL, *out = NULL, *cleanup_out = NULL;
	char dir[64], host_dir[4200], routes[1400];
	if (store_workspace_get(lifecycle_store(lc), workspace_id, &w, &e) < 0 || id_new("", &suffix, &e) < 0) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "%s", e->message);
		workspace_record_clear(&w);
		return;
	}
	snprintf(dir, sizeof(dir), ".chat2sbx-doctor-%s", suffix);
	snprintf(host_dir, sizeof(host_dir), "%s/%s", w.path, dir);
	char sandbox_dir[128];
	snprintf(sandbox_dir, sizeof(sandbox_dir), "%s/%s", POLICY_WORKSPACE_TARGET, dir);
	cmd = xasprintf(attack_script, sandbox_dir);
	if (ops_probe_run(lc, sandbox_id, cmd, &out, &e) < 0) {
		ops_probe_report_add(r, name, attack, OPS_CHECK_FAILED, "%s", e->message);
		workspace_record_clear(&w);
		return;
	}
	size_t tried = 0;
	routes_summary(out, routes, sizeof(routes), &tried);
	struct ops_setid_findings f = {0};
	char detail[8192];
	enum ops_check_result result = OPS_CHECK_FAILED;
	if (!strstr(out, "@@end") || strstr(out, "@@nodir"))
		snprintf(detail, sizeof(detail), "the attack did not run to its end inside the sandbox (%.200s)", out);
	else if (ops_setid_scan(host_dir, &f, &e) < 0)
		snprintf(detail, sizeof(detail), "%s (it was made as /workspace/%s inside)", e->message, dir);
	else if (!f.found && f.entries < ATTACK_FILES)
		/* The routes work on files made first; without them on the host,
		 * every "refused" may be a missing file, which proves nothing. */
		snprintf(detail, sizeof(detail),
		         "the sandbox's files did not reach the host directory '%s' (%zu of %d entries), so the "
		         "refusals prove nothing; routes: %s",
		         host_dir, f.entries, ATTACK_FILES, routes);
	else if (f.found)
		snprintf(detail, sizeof(detail), "on the host, in '%s': %s; routes: %s", host_dir, f.detail, routes);
	else if (!vm && strstr(out, "@@uring ok"))
		snprintf(detail, sizeof(detail),
		         "io_uring_setup succeeded in the sandbox: io_uring opens and changes files past the mode "
		         "checks; routes: %s",
		         routes);
	else if (tried < 3)
		snprintf(detail, sizeof(detail), "only %zu routes could be tried, too few to prove anything: %s", tried,
		         routes);
	else {
		result = OPS_CHECK_PASSED;
		snprintf(detail, sizeof(detail),
		         "%zu routes tried, no host file under '%s' has S_ISUID, S_ISGID or file capabilities (%zu "
		         "entries); %s; %s",
		         tried, host_dir, f.entries, routes,
		         vm ? "io_uring in the guest is the guest kernel's (its file operations "
		              "reach the host as 9p requests QEMU performs; QEMU's container "
		              "is judged under privileges)"
		         : strstr(out, "@@uring refused") ? "io_uring_setup refused"
		                                          : "io_uring not tried (no python3)");
	}
	ops_probe_report_add(r, name, attack, result, "%s", detail);
	/* Root-owned files on the host: removed from inside. */
	_cleanup_free_ char *rm = xasprintf("rm -rf '%s'", sandbox_dir);
	if (ops_probe_run(lc, sandbox_id, rm, &cleanup_out, &e) < 0)
		cp_error_freep(&e);
	workspace_record_clear(&w);
}
