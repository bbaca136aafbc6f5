/* proctree.c: the process table read from /proc/<pid>/stat (pid, parent,
 * session, state), and signals to every process below given roots. The
 * helper's only way to find a session's processes: cgroups are read-only
 * in sandboxes, so ancestry it is (a session's keeper is a child subreaper,
 * so nothing a session starts can leave its subtree while it lives). Reads
 * /proc only; decides nothing about which roots to signal. */
#include "proctree.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

enum { MARK_UNKNOWN, MARK_IN, MARK_OUT, MARK_WALKING };

static int entry_cmp(const void *a, const void *b)
{
	pid_t x = ((const struct proctree_entry *)a)->pid, y = ((const struct proctree_entry *)b)->pid;
	return (x > y) - (x < y);
}

/* Parses "pid (comm) S ppid pgrp session ..." (proc(5)); comm may hold
 * spaces and parentheses, so the fields start after the last ')'. */
static bool stat_parse(char *buf, struct proctree_entry *e)
{
	char *close = strrchr(buf, ')');
	if (!close || close[1] != ' ')
		return false;
	char state = close[2];
	long ppid, pgrp, sid;
	char *p = close + 3, *end;
	ppid = strtol(p, &end, 10);
	if (end == p)
		return false;
	pgrp = strtol(end, &p, 10);
	if (p == end)
		return false;
	sid = strtol(p, &end, 10);
	if (end == p)
		return false;
	(void)pgrp;
	e->ppid = (pid_t)ppid;
	e->sid = (pid_t)sid;
	e->zombie = state == 'Z' || state == 'X' || state == 'x';
	return true;
}

static bool stat_read(int proc_fd, const char *name, struct proctree_entry *e)
{
	char path[32], buf[512];
	snprintf(path, sizeof path, "%s/stat", name);
	int fd = openat(proc_fd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n;
	do
		n = read(fd, buf, sizeof buf - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return stat_parse(buf, e);
}

int proctree_scan(struct proctree *t)
{
	t->n = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return -errno;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		char *end;
		long pid = strtol(de->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		struct proctree_entry e = {.pid = (pid_t)pid};
		if (!stat_read(dirfd(d), de->d_name, &e))
			continue; /* exited meanwhile */
		if (t->n == t->cap) {
			t->cap = t->cap ? t->cap * 2 : 256;
			t->entries = xrealloc(t->entries, t->cap * sizeof *t->entries);
			t->mark = xrealloc(t->mark, t->cap);
		}
		t->entries[t->n++] = e;
	}
	closedir(d);
	qsort(t->entries, t->n, sizeof *t->entries, entry_cmp);
	return 0;
}

static ssize_t entry_index(const struct proctree *t, pid_t pid)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->entries[mid].pid == pid)
			return (ssize_t)mid;
		if (t->entries[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* Whether entry i is a root or below one: walks up the parent links,
 * remembering the answer for every process on the way. A snapshot read
 * over time can hold a stale link; a link back into the walk counts as
 * outside. */
static bool entry_member(struct proctree *t, size_t i)
{
	size_t cur = i, depth = 0;
	unsigned char verdict;
	for (;;) {
		if (t->mark[cur] != MARK_UNKNOWN) {
			verdict = t->mark[cur] == MARK_IN ? MARK_IN : MARK_OUT;
			break;
		}
		t->mark[cur] = MARK_WALKING;
		depth++;
		ssize_t up = t->entries[cur].ppid > 0 ? entry_index(t, t->entries[cur].ppid) : -1;
		if (up < 0) {
			verdict = MARK_OUT;
			break;
		}
		cur = (size_t)up;
	}
	/* Resolve the walked chain: its marks are MARK_WALKING, in order. */
	for (cur = i; depth-- > 0;) {
		t->mark[cur] = verdict;
		ssize_t up = entry_index(t, t->entries[cur].ppid);
		if (up < 0)
			break;
		cur = (size_t)up;
	}
	return verdict == MARK_IN;
}

static bool pid_in(pid_t pid, const pid_t *set, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == pid)
			return true;
	return false;
}

size_t proctree_signal(struct proctree *t, const pid_t *roots, size_t nroots, const pid_t *spare, size_t nspare,
                       int sig)
{
	if (t->n == 0 || nroots == 0)
		return 0;
	memset(t->mark, MARK_UNKNOWN, t->n);
	size_t found = 0;
	for (size_t r = 0; r < nroots; r++) {
		ssize_t i = entry_index(t, roots[r]);
		if (i >= 0) {
			t->mark[i] = MARK_IN;
			found++;
		}
	}
	if (found == 0)
		return 0;
	size_t sent = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct proctree_entry *e = &t->entries[i];
		if (!entry_member(t, i) || e->zombie || pid_in(e->pid, spare, nspare))
			continue;
		if (kill(e->pid, sig) == 0 || errno == EPERM)
			sent++;
	}
	return sent;
}

void proctree_free(struct proctree *t)
{
	free(t->entries);
	free(t->mark);
	t->entries = NULL;
	t->mark = NULL;
	t->n = t->cap = 0;
}
