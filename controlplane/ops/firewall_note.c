/* firewall_note.c: how a serve that is not root knows the host-edge
 * firewall is in place. Reading nftables needs CAP_NET_ADMIN, so a normal
 * user's serve cannot read table inet chat2sbx back. Root, having installed
 * it (setup --install-firewall, a root setup or serve, the package's
 * chat2sbx-firewall unit), writes its fingerprint to OPS_FIREWALL_NOTE
 * (/run/chat2sbx/firewall: on a tmpfs, so a reboot, which also empties the
 * kernel's ruleset, removes it). A serve that cannot read the table trusts
 * the note only when it and its directory are owned by root and writable by
 * no one else, and its fingerprint is the one this build would install.
 * The note proves what root installed, not that nobody removed it since
 * (only root can): docs/operations.md, "As a normal user". */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/xalloc.h"
#include "ops.h"

#define NOTE_MAX 4096

/* dir of path (at most size bytes), "/" for a file at the root. */
static void dir_of(const char *path, char *dir, size_t size)
{
	snprintf(dir, size, "%s", path);
	char *slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else
		snprintf(dir, size, ".");
}

int ops_firewall_note_write(const char *path, const char *fingerprint, struct cp_error **err)
{
	char dir[4096];
	dir_of(path, dir, sizeof(dir));
	if (mkdir(dir, 0755) == 0) {
		/* Readable by every user whatever the umask (a unit's 0077). */
		if (chmod(dir, 0755) < 0)
			return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "make '%s' readable", dir);
	} else if (errno != EEXIST) {
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "create the directory '%s' of the firewall note",
		                          dir);
	}
	_cleanup_free_ char *tmp = xasprintf("%s.%d.tmp", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "write the firewall note '%s'", tmp);
	_cleanup_free_ char *text =
	    xasprintf("# written by chat2sbx (root) after installing table inet chat2sbx; serve as a normal user "
	              "trusts it\nfingerprint=%s\ninstalled_at_ms=%lld\n",
	              fingerprint, (long long)clock_now_ms());
	size_t len = strlen(text);
	int ok = fchmod(fd, 0644) == 0 && write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
	int saved = errno;
	if (close(fd) < 0 && ok) {
		ok = 0;
		saved = errno;
	}
	if (!ok || rename(tmp, path) < 0) {
		if (ok)
			saved = errno;
		unlink(tmp);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, saved, "write the firewall note '%s'", path);
	}
	return 0;
}

/* 1 when st is owned by uid and writable by nobody else; else 0 with why. */
static int owned_tight(const struct stat *st, uid_t uid, const char *what, const char *name, char *detail, size_t size)
{
	if (st->st_uid != uid) {
		snprintf(detail, size, "the %s '%s' belongs to uid %u, not to uid %u (root)", what, name,
		         (unsigned)st->st_uid, (unsigned)uid);
		return 0;
	}
	if (st->st_mode & 022) {
		snprintf(detail, size, "the %s '%s' is writable by others (mode %04o)", what, name,
		         (unsigned)(st->st_mode & 07777));
		return 0;
	}
	return 1;
}

int ops_firewall_note_check(const char *path, const char *fingerprint, uid_t trusted_uid, char *detail, size_t size)
{
	char dir[4096];
	dir_of(path, dir, sizeof(dir));
	struct stat st;
	if (lstat(dir, &st) < 0) {
		snprintf(detail, size, "there is no firewall note ('%s' is missing: %s)", dir, strerror(errno));
		return 0;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(detail, size, "'%s' is not a directory", dir);
		return 0;
	}
	if (!owned_tight(&st, trusted_uid, "directory", dir, detail, size))
		return 0;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		snprintf(detail, size, "there is no firewall note '%s' (%s)", path, strerror(errno));
		return 0;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(detail, size, "the firewall note '%s' is not a regular file", path);
		return 0;
	}
	if (!owned_tight(&st, trusted_uid, "firewall note", path, detail, size))
		return 0;
	char buf[NOTE_MAX + 1];
	ssize_t n = read(fd, buf, NOTE_MAX);
	if (n < 0 || (size_t)st.st_size > NOTE_MAX) {
		snprintf(detail, size, "the firewall note '%s' cannot be read or is over %d bytes", path, NOTE_MAX);
		return 0;
	}
	buf[n] = '\0';
	const char *found = NULL;
	size_t flen = 0;
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		if (len > 12 && !strncmp(line, "fingerprint=", 12)) {
			found = line + 12;
			flen = len - 12;
		}
		line = nl ? nl + 1 : NULL;
	}
	if (!found) {
		snprintf(detail, size, "the firewall note '%s' names no fingerprint", path);
		return 0;
	}
	if (flen != strlen(fingerprint) || memcmp(found, fingerprint, flen) != 0) {
		snprintf(detail, size,
		         "the firewall note '%s' names another ruleset ('%.*s'; this chat2sbx would install '%s'): "
		         "chat2sbx was upgraded or the engine's networks changed since root installed it",
		         path, (int)(flen > 80 ? 80 : flen), found, fingerprint);
		return 0;
	}
	snprintf(detail, size, "root installed this ruleset ('%s', note %s)", fingerprint, path);
	return 1;
}
