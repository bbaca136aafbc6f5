/* bash_internal.h: what the bash_*.c files share (bash.h is the public
 * side): the session and waiting-reply records, the table, and the
 * functions one part calls in another. Included by bash*.c only. */
#ifndef CHAT2SBX_HELPER_BASH_INTERNAL_H
#define CHAT2SBX_HELPER_BASH_INTERNAL_H

#include "bash.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pty.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "headtail.h"
#include "hlog.h"
#include "keeper.h"
#include "paths.h"
#include "proctree.h"
#include "proto.h"
#include "sessmeta.h"
#include "spare.h"
#include "utf8.h"
#include "xalloc.h"
#include "xjson.h"

#define DRAIN_BUDGET (1024 * 1024) /* bytes read from a pipe when its shell exits */
#define READ_BUDGET (256 * 1024)   /* bytes read per pipe per loop turn (fairness) */
#define STOP_SLACK_MS 1000         /* bash.stop answers by grace + this at the latest */
#define LIST_COMMAND_MAX 1000      /* bytes of a command shown by bash.list */
#define TTY_EOF '\x04'             /* VEOF (Ctrl-D) of a fresh pseudo-terminal */
#define KEEPER_START_MS 5000       /* bash.start waits this long for the keeper's first report */
#define KILL_ROUND_MS 10           /* SIGKILL rounds: the first retry, doubling ... */
#define KILL_ROUND_MAX_MS 1000     /* ... up to this while anything of the session is left */

extern char **environ;

enum session_status { SESSION_RUNNING, SESSION_EXITED, SESSION_KILLED, SESSION_TIMED_OUT, SESSION_LOST };
enum kill_reason { KILL_NONE, KILL_STOP, KILL_TIMEOUT };
enum waiter_kind { WAIT_START, WAIT_POLL, WAIT_STOP };

struct session {
	char id[BASH_ID_MAX + 1];
	char *command;
	char *log_path;
	pid_t pid; /* the shell; also its process group id (it calls setpgid) */
	/* The keeper (keeper.h): our child, so its pid is ours until we reap
	 * it, and it exits only once nothing of the session is left; 0 once
	 * reaped. keeper_fd: the read end of its report pipe, -1 once closed. */
	pid_t keeper;
	int keeper_fd;
	/* The keeper was killed from outside: what is left of the session is
	 * found through the shell and the orphans the helper adopted, and
	 * counts until a scan finds nothing (leftovers false). */
	bool keeper_lost, leftovers;
	int pipe_fd, log_fd;
	bool interactive, tty;
	bool hidden; /* bash.start hidden: the control plane's own command, left out of bash.list */
	/* The program's stdin (interactive sessions): the pipe's write end or a
	 * duplicate of the pty master, non-blocking; -1 once closed. Input the
	 * program has not read yet waits in inbuf (at most BASH_INPUT_MAX). */
	int in_fd;
	char *inbuf;
	size_t inlen, incap;
	bool in_close;      /* bash.input close: close stdin once inbuf is written */
	bool in_mid_line;   /* tty: the last byte queued was not '\n' */
	uint64_t total;     /* bytes in the log file */
	uint64_t delivered; /* bytes already returned in replies */
	/* Of those, the prefix the control plane acknowledged (bash.ack): it
	 * reached a caller. A new attachment rewinds delivered to here. */
	uint64_t acked;
	uint64_t dropped; /* bytes lost: over BASH_LOG_MAX or a failing log write */
	unsigned char tail[3];
	size_t tail_len; /* last bytes of the log, to spot an unfinished character */
	bool ended, log_failed;
	/* tty: the master read end of file (no slave open) before the shell was
	 * reaped; kept open, not polled, until the reap (session_read). */
	bool out_held;
	/* Running when the helper began to stop: its end is not recorded, so
	 * the next helper reports it lost (sessmeta.h). */
	bool interrupted;
	char *reason; /* SESSION_LOST: why (owned) */
	enum session_status status;
	int exit_code;
	int term_sig; /* the signal that killed the shell, or 0 */
	enum kill_reason kill;
	int64_t timeout_at, kill_at;        /* monotonic ms; 0 = none */
	unsigned kill_rounds;               /* SIGKILL rounds sent so far */
	int64_t started_at_ms, ended_at_ms; /* wall clock, for bash.list */
	uint64_t seq, ended_seq;
	size_t waiters;
};

/* How much of a session's output one answer may carry: max raw bytes, and
 * whether the caller asked for head and tail while the session still runs
 * ("tail": true). */
struct output_bound {
	size_t max;
	bool tail;
};

struct waiter {
	enum waiter_kind kind;
	json_object *id; /* own reference */
	struct session *session;
	int64_t deadline;
	struct output_bound bound;
	struct waiter *next;
};

/* Everything the bash_*.c files share: the session table, the waiting
 * replies and the last /proc scan. One instance, owned by bash_session.c
 * and reached only through bash_state(); no file declares another's
 * mutable globals. The helper is single-threaded, so no lock. */
struct bash_state {
	struct session **sessions; /* owned, in start order */
	size_t nsessions, cap;
	struct waiter *waiters; /* owned, in arrival order */
	size_t nwaiters;
	uint64_t seq; /* the last sequence number given to a start or an end */
	/* Sessions behind the pollfds last handed out, in the same order: at
	 * most BASH_POLLFDS_PER_SESSION * cap entries. */
	struct session **polled;
	size_t npolled;
	struct proctree procs; /* the last scan of /proc, reused */
};

/* bash_session.c */
/* The helper's one bash state (never NULL; lives until the process ends,
 * its contents are released by bash_free). */
struct bash_state *bash_state(void);
/* Whether anything of s may still run: its keeper, or (keeper lost)
 * leftovers the last scan found. */
bool session_has_processes(const struct session *s);
int64_t wall_ms(void);
struct session *session_find(const char *id);
size_t running_count(void);
const char *status_name(enum session_status s);
void session_free(struct session *s);
void session_persist(struct session *s);
void sessions_prune(void);
/* Append s (owned by the table from now on). */
void sessions_add(struct session *s);
/* bash_output.c */
void session_read(struct session *s, size_t budget);
uint64_t session_deliverable(const struct session *s);
const char *signal_name(int sig, char *buf, size_t cap);
json_object *session_snapshot(struct session *s, struct output_bound bound);
/* bash_input.c */
bool stdin_open(const struct session *s);
void input_close(struct session *s);
size_t input_write(struct session *s, const char *p, size_t n);
void input_flush(struct session *s);
void input_queue(struct session *s, const char *p, size_t n);
/* bash_reap.c */
size_t session_signal(struct session *s, struct proctree *t, int sig);
bool procs_scan(void);
void kill_begin(struct session *s, enum kill_reason reason, int64_t now);
/* bash_waiters.c */
/* Queue a reply to request id (a reference is taken) that waits for s until
 * deadline (bash_clock_ms); the caller checked BASH_MAX_WAITERS. */
void waiter_add(enum waiter_kind kind, json_object *id, struct session *s, int64_t deadline, struct output_bound bound);
/* Answer every waiter whose condition holds (all of them when force). */
void waiters_answer(bool force);
/* bash.c */
int param_output(json_object *params, struct output_bound *ret, struct rpc_error *err);
int param_yield(json_object *params, int64_t *ret, struct rpc_error *err);
int check_session_id(const char *id, size_t len, struct rpc_error *err);

#endif
