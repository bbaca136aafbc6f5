/* proctree.h: a snapshot of the process table from /proc (pid, parent,
 * session, state of every process), so the helper can find every process
 * a session started by its ancestry and signal them. Used by bash.c to stop
 * sessions (bash.stop, timeout_ms, helper shutdown). */
#ifndef CHAT2SBX_HELPER_PROCTREE_H
#define CHAT2SBX_HELPER_PROCTREE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct proctree_entry {
	pid_t pid, ppid, sid;
	bool zombie; /* state Z or X: exited, waiting to be reaped; cannot act */
};

struct proctree {
	struct proctree_entry *entries; /* sorted by pid */
	size_t n, cap;
	unsigned char *mark; /* scratch for proctree_signal, n entries */
};

/* Read every process of /proc into t (which must be zeroed or scanned
 * before; its old contents are replaced). Processes that exit while the
 * directory is read are skipped. Returns 0, or -errno when /proc cannot be
 * read (then t is empty). Blocks for the reads of /proc only (about 10 µs
 * per process). */
int proctree_scan(struct proctree *t);

/* Send sig to every live (not zombie) process of t that is one of
 * roots[0..nroots) or descends from one (by parent links), except the
 * processes in spare[0..nspare) themselves (their descendants still count).
 * Returns how many processes were signalled (kill(2) succeeded or failed
 * with EPERM). Roots not in t are ignored. Never blocks. */
size_t proctree_signal(struct proctree *t, const pid_t *roots, size_t nroots, const pid_t *spare, size_t nspare,
                       int sig);

/* Release t's memory (t stays usable: empty). */
void proctree_free(struct proctree *t);

#endif
