/* child.h: running one host program on bytes we do not trust, bounded:
 * memory, CPU, file size, open files and wall time, in its own process
 * group that is killed whole at the deadline (issue 23). */
#ifndef CP_CHILD_H
#define CP_CHILD_H

#include <stddef.h>
#include <stdint.h>

#include "error.h"

struct cp_cancel;

/* The bounds of one child. 0 leaves a bound as serve's own. */
struct child_limits {
	uint64_t memory_bytes; /* RLIMIT_AS: address space, mappings included */
	uint64_t cpu_seconds;  /* RLIMIT_CPU: SIGXCPU there, SIGKILL 5 s later */
	uint64_t file_bytes;   /* RLIMIT_FSIZE: the largest file it may write (SIGXFSZ) */
	uint64_t open_files;   /* RLIMIT_NOFILE (never raised above serve's hard limit) */
	long wall_ms;          /* required (> 0): its whole process group gets SIGKILL then */
};

struct child_spec {
	const char *path;        /* absolute path of the program */
	const char *const *argv; /* NULL-terminated, argv[0] included */
	const char *const *envp; /* NULL-terminated; the whole environment */
	const char *cwd;         /* NULL = serve's */
	const char *in;          /* stdin bytes (in_len); NULL with in_fd < 0 = /dev/null */
	size_t in_len;
	int in_fd;      /* >= 0: stdin is this descriptor (borrowed, from its offset) */
	size_t out_max; /* stdout kept up to this many bytes; more sets out_over */
	/* > 0: stdout is written to this descriptor (borrowed; a file opened
	 * for writing) instead of collected, so it is bounded by
	 * limits.file_bytes, not out_max, and the result's out is empty. 0
	 * (never a target: it is stdin) = collected. */
	int out_fd;
	struct child_limits limits;
	/* NULL = none. Once fired (from another thread), the child's whole
	 * process group is killed as at the deadline, within 200 ms; the
	 * result then says cancelled. For a long child its owner must be able
	 * to stop (the page's doctor run at serve's shutdown). */
	const struct cp_cancel *cancel;
};

/* How a child ended. Every field is set by child_run. */
struct child_result {
	int exited;    /* 1: it exited (code), 0: a signal ended it (signal) */
	int code;      /* exit status when exited */
	int signal;    /* the signal that ended it, else 0 */
	int timed_out; /* 1: killed at limits.wall_ms */
	int cancelled; /* 1: killed because spec->cancel fired */
	int out_over;  /* 1: stdout passed out_max (it was read on and dropped) */
	char *out;     /* stdout, NUL-terminated (owned; never NULL) */
	size_t out_len;
	char *err_tail; /* the last 64 KiB of stderr, NUL-terminated (owned; never NULL) */
	size_t err_len;
	long peak_rss_kib; /* largest resident set of it and every child it waited for */
	long cpu_ms;       /* user + system time of the same */
	long wall_ms;
};
void child_result_clear(struct child_result *r);

/* Runs spec->path with spec->argv and spec->envp, never through a shell.
 * Before exec, in the child: its own process group, SIGKILL when serve
 * dies (PR_SET_PDEATHSIG), signal mask and dispositions reset, no core
 * file, and spec->limits as hard rlimits. These are per process and every
 * process it starts inherits them; rlimits are the floor that works
 * everywhere: cgroup v1 is all some hosts have, and serve may run without
 * systemd to give it a scope. stdout is collected (bounded), stderr's tail
 * kept (or written to spec->out_fd), stdin written from spec->in or spec->in_fd. At limits.wall_ms the
 * whole process group is killed (and when spec->cancel fires); once the
 * child has exited its group is killed too, so nothing it left behind runs
 * on. Blocks until then.
 * Returns 0 with *ret filled (caller clears) whatever the exit status;
 * -1 only when it could not start: UNAVAILABLE (exec failed: missing,
 * not executable, errno kept) or INTERNAL (pipe or fork failed). */
int child_run(const struct child_spec *spec, struct child_result *ret, struct cp_error **err);

#endif
