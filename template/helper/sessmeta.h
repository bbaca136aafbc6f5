/* sessmeta.h: one small metadata file per bash session, beside its log
 * (<log_dir>/<session_id>.json), so a helper that starts again after its
 * container restarted (an engine restart, a crash of the helper) knows the
 * sessions of the helper before it: which had ended and how, and which were
 * still running and so were interrupted ("lost"). The log files themselves
 * are the output; this is only the index. The files are on the container's
 * own disk (/tmp of the image, not a tmpfs), so they survive a restart of
 * the container but not its removal. */
#ifndef CHAT2SBX_HELPER_SESSMETA_H
#define CHAT2SBX_HELPER_SESSMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SESSMETA_ID_MAX 128           /* as BASH_ID_MAX */
#define SESSMETA_COMMAND_MAX 4096     /* bytes of the command kept (bash.list shows 1000) */
#define SESSMETA_FILE_MAX (64 * 1024) /* a larger file is not ours: skipped */
#define SESSMETA_STATUS_MAX 16        /* "exited", "killed", "timed_out" */
#define SESSMETA_SCAN_MAX 100000      /* directory entries looked at, at most */

/* What is kept of one session. ended false: the session was running when
 * the file was last written. */
struct sessmeta {
	char id[SESSMETA_ID_MAX + 1];
	char *command; /* owned; at most SESSMETA_COMMAND_MAX bytes, cut at a character boundary */
	int64_t started_at_ms;
	int pid;
	bool interactive, tty;
	bool hidden; /* started with bash.start hidden */
	bool ended;
	char status[SESSMETA_STATUS_MAX]; /* when ended */
	int exit_code, term_sig;          /* when ended; term_sig 0 = none */
	int64_t ended_at_ms;              /* when ended */
	uint64_t delivered;               /* log bytes already returned in replies */
	uint64_t acked;                   /* of those, bytes the control plane acknowledged (bash.ack) */
	uint64_t dropped;                 /* log bytes lost (dropped_output_bytes) */
};

/* Frees m->command; the struct itself is the caller's. Accepts NULL. */
void sessmeta_clear(struct sessmeta *m);

/* Writes m to <dir>/<m->id>.json atomically (a temporary ".<id>.json.tmp" in
 * dir, then rename), mode 0600, without fsync (a crash of the whole machine
 * loses the container's /tmp anyway). dir must exist. Returns 0 or -errno.
 * Never blocks beyond the file system calls. */
int sessmeta_write(const char *dir, const struct sessmeta *m);

/* Removes <dir>/<id>.json (the log stays). Returns 0 or -errno (-ENOENT
 * when there was none). */
int sessmeta_remove(const char *dir, const char *id);

/* Reads every "<id>.json" in dir (the first SESSMETA_SCAN_MAX entries)
 * whose content is a valid metadata record of that id (others are skipped:
 * wrong names, oversized, malformed, from another version), keeps the max
 * most recently started (never more in memory) and returns them oldest
 * first in *ret (caller clears each and frees the array; NULL when *ret_n
 * is 0). A missing dir is no session (0). Returns 0 or -errno when the
 * directory cannot be opened. */
int sessmeta_load_all(const char *dir, size_t max, struct sessmeta **ret, size_t *ret_n);

#endif
