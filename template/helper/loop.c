/* loop.c: the helper's event loop and method table. One thread, one
 * poll(2): requests are read and dispatched as they arrive, replies go out
 * in any order (paired by id), waiting bash replies are answered when their
 * session produces output, ends or their deadline passes. Only this file
 * touches signals; only main.c calls loop_run. */
#include "loop.h"
#include "xalloc.h"
#include "xjson.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "bash.h"
#include "blob.h"
#include "direct.h"
#include "edit.h"
#include "files.h"
#include "fsstat.h"
#include "frame.h"
#include "hlog.h"
#include "list.h"
#include "patch.h"
#include "paths.h"
#include "proto.h"
#include "rpc.h"
#include "search.h"

/* Stop reading requests while this many reply bytes wait for the host. */
#define OUT_HIGH_WATER (64u * 1024 * 1024)
#define FLUSH_AT_EXIT_MS 1000

/* This start of the helper: a random id and the wall clock, so the host can
 * tell a helper that started again (the container restarted) from the one
 * it talked to before. */
static char boot_id[33];
static int64_t boot_wall_ms;
/* The attach_id of the last hello that gave one: the control plane's
 * channel now attached (proto.h, hello). */
#define ATTACH_ID_MAX 64
static char attach_id[ATTACH_ID_MAX + 1];

/* The direct channel (proto.h, channel.connect): the connected socket with
 * its reader and writer (fd -1: none), the one channel.connect made and
 * that is installed once its answer is queued (next_fd), and whether the
 * current one must go (drop). Installing and dropping wait for the loop
 * (direct_settle), never inside a read of the socket itself. */
static struct {
	int fd, next_fd;
	bool drop;
	struct frame_reader reader;
	struct frame_writer writer;
} direct = {.fd = -1, .next_fd = -1};
static struct frame_writer *stdout_writer;
/* The direct channel's directory, opened at start (O_PATH), -1 when the
 * sandbox has none: channel.connect reaches the socket through it. */
static int channel_dirfd = -1;

static void reply_sink(const char *line, size_t len, void *data);

/* Answers go to stdout again from now on (the direct channel, if any, is
 * dropped by the loop). */
static void direct_leave(void)
{
	if (direct.fd >= 0)
		direct.drop = true;
	rpc_sink_set(reply_sink, stdout_writer);
}

/* Drops a direct channel marked to go, then installs a newly connected one. */
static void direct_settle(void)
{
	if (direct.fd >= 0 && (direct.drop || direct.next_fd >= 0)) {
		rpc_sink_set(reply_sink, stdout_writer);
		frame_reader_free(&direct.reader);
		frame_writer_free(&direct.writer);
		close(direct.fd);
		direct.fd = -1;
		hlog_debug("the direct channel closed; answering on stdout");
	}
	direct.drop = false;
	if (direct.next_fd < 0)
		return;
	direct.fd = direct.next_fd;
	direct.next_fd = -1;
	frame_reader_init(&direct.reader);
	frame_writer_init(&direct.writer, direct.fd);
	rpc_sink_set(reply_sink, &direct.writer);
	hlog_debug("the direct channel is connected; answering on it");
}

/* Where answers go now. */
static struct frame_writer *current_writer(void)
{
	return direct.fd >= 0 && !direct.drop ? &direct.writer : stdout_writer;
}

static void boot_init(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	boot_wall_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	unsigned char raw[16];
	ssize_t n = getrandom(raw, sizeof raw, GRND_NONBLOCK);
	if (n != (ssize_t)sizeof raw) {
		/* No entropy yet: unique enough to tell two starts apart. */
		uint64_t mix = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ (uint64_t)getpid();
		for (size_t i = 0; i < sizeof raw; i++)
			raw[i] = (unsigned char)(mix >> (8 * (i % 8))) ^ (unsigned char)i;
	}
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof raw; i++) {
		boot_id[2 * i] = hex[raw[i] >> 4];
		boot_id[2 * i + 1] = hex[raw[i] & 15];
	}
	boot_id[2 * sizeof raw] = '\0';
}

typedef int (*method_fn)(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

/* Records the attach_id of the control plane now attached (hello or the
 * attach notification); a new one resets delivery (bash_attach_reset).
 * Returns whether it was new. */
static bool attach_note(const char *aid, size_t len)
{
	if (len == 0 || len > ATTACH_ID_MAX || strlen(aid) != len || strcmp(aid, attach_id) == 0)
		return false;
	size_t rewound = bash_attach_reset();
	blob_close_all(); /* the old attachment's handles went with it */
	direct_leave();   /* the new control plane reads stdout until it connects its own */
	memcpy(attach_id, aid, len + 1);
	hlog_debug("a new control plane attached; %zu session(s) rewound to their acknowledged output", rewound);
	return true;
}

static int method_hello(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *aid;
	size_t alen;
	int has = rpc_param_string(params, "attach_id", false, &aid, &alen, err);
	if (has < 0)
		return -1;
	if (has && (alen == 0 || alen > ATTACH_ID_MAX))
		return rpc_fail(err, "INVALID_ARGUMENT", "attach_id must be 1 to %d characters", ATTACH_ID_MAX);
	bool attached = has && attach_note(aid, alen);
	size_t running, n = bash_session_count(&running);
	json_object *r = xjson_object();
	xjson_add(r, "version", xjson_string(PROTO_VERSION));
#ifdef CHAT2SBX_VERSION
	xjson_add(r, "helper_version", xjson_string(CHAT2SBX_VERSION));
#endif
	xjson_add(r, "pid", xjson_int64(getpid()));
	xjson_add(r, "sessions", xjson_int64((int64_t)n));
	xjson_add(r, "running", xjson_int64((int64_t)running));
	xjson_add(r, "boot_id", xjson_string(boot_id));
	xjson_add(r, "started_at_ms", xjson_int64(boot_wall_ms));
	xjson_add(r, "attached", xjson_bool(attached));
	*ret_result = r;
	return 0;
}

static int method_channel_connect(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *token;
	size_t len;
	if (rpc_param_string(params, "token", true, &token, &len, err) < 0)
		return -1;
	int fd = direct_connect(channel_dirfd, token, len, err);
	if (fd < 0)
		return -1;
	if (direct.next_fd >= 0)
		close(direct.next_fd);
	direct.next_fd = fd; /* installed after this answer is queued */
	json_object *r = xjson_object();
	xjson_add(r, "connected", xjson_bool(true));
	*ret_result = r;
	return 0;
}

static const struct method {
	const char *name;
	method_fn fn;
} methods[] = {
    {"hello", method_hello},        {"bash.start", bash_rpc_start},  {"bash.poll", bash_rpc_poll},
    {"bash.input", bash_rpc_input}, {"bash.stop", bash_rpc_stop},    {"bash.list", bash_rpc_list},
    {"file.read", files_rpc_read},  {"file.write", files_rpc_write}, {"file.search", search_rpc},
    {"file.list", list_rpc},        {"file.edit", edit_rpc},         {"file.apply_patch", patch_rpc},
    {"fs.stat", fsstat_rpc},        {"fs.mounts", fsmounts_rpc},     {"blob.open", blob_rpc_open},
    {"blob.read", blob_rpc_read},   {"blob.close", blob_rpc_close},  {"channel.connect", method_channel_connect},
};

static void reply_sink(const char *line, size_t len, void *data)
{
	frame_writer_put(data, line, len);
}

/* Reply to a request that could not be parsed when its id can be found. */
static void reply_unparsed(const char *line, size_t len, const struct rpc_error *err)
{
	int64_t idv;
	if (!rpc_id_scan(line, len, &idv)) {
		hlog_warn("dropping a request without a readable id: %s", err->message);
		return;
	}
	json_object *id = xjson_int64(idv);
	rpc_send_error(id, err);
	json_object_put(id);
}

/* A request without an id is a notification (JSON-RPC 2.0, section 4.1):
 * never answered. Only the acknowledgements are known; others are ignored. */
static void dispatch_notification(json_object *root)
{
	json_object *m, *params;
	if (!json_object_object_get_ex(root, "method", &m) || !json_object_is_type(m, json_type_string) ||
	    !json_object_object_get_ex(root, "params", &params) || !json_object_is_type(params, json_type_object)) {
		hlog_debug("ignoring a request without an id");
		return;
	}
	const char *method = json_object_get_string(m);
	if (strcmp(method, "bash.ack") == 0)
		bash_ack(params);
	else if (strcmp(method, "bash.nack") == 0)
		bash_nack(params);
	else if (strcmp(method, "attach") == 0) {
		json_object *v;
		if (json_object_object_get_ex(params, "attach_id", &v) && json_object_is_type(v, json_type_string))
			attach_note(json_object_get_string(v), (size_t)json_object_get_string_len(v));
	} else
		hlog_debug("ignoring notification '%.64s'", method);
}

static void dispatch_line(char *line, size_t len, void *data)
{
	(void)data;
	json_object *root, *id, *params = NULL;
	const char *method = NULL;
	struct rpc_error err;
	int r = rpc_request_parse(line, len, &root, &id, &method, &params, &err);
	if (r == 1) {
		dispatch_notification(root);
	} else if (r < 0 && id) {
		rpc_send_error(id, &err);
	} else if (r < 0) {
		reply_unparsed(line, len, &err);
	} else {
		const struct method *m = NULL;
		for (size_t i = 0; i < sizeof methods / sizeof methods[0] && !m; i++)
			if (strcmp(methods[i].name, method) == 0)
				m = &methods[i];
		json_object *result = NULL;
		if (!m) {
			rpc_fail_code(&err, PROTO_ERR_METHOD_NOT_FOUND, "INVALID_ARGUMENT",
			              "unknown method '%.64s'; this helper (protocol %s) knows hello, "
			              "bash.start, bash.poll, bash.input, bash.stop, bash.list, file.read, "
			              "file.write, file.search, file.list, file.edit, file.apply_patch, fs.stat, "
			              "fs.mounts, blob.open, blob.read, blob.close, channel.connect",
			              method, PROTO_VERSION);
			rpc_send_error(id, &err);
		} else if ((r = m->fn(id, params, &result, &err)) == 0) {
			rpc_send_result(id, result);
		} else if (r < 0) {
			hlog_debug("%s failed: %s", m->name, err.message);
			rpc_send_error(id, &err);
		}
	}
	json_object_put(root);
}

static void dispatch_overlong(char *buf, size_t len, void *data)
{
	(void)data;
	struct rpc_error err;
	rpc_fail_code(&err, PROTO_ERR_INVALID_REQUEST, "LIMIT",
	              "request is longer than %u bytes and was dropped; write large files in "
	              "smaller parts (for example several files joined with cat in bash)",
	              PROTO_MAX_FRAME);
	reply_unparsed(buf, len, &err);
}

bool loop_stop_signal_honoured(uint32_t sender_pid, pid_t self)
{
	/* As a container's init, a sender we can name is in our own pid
	 * namespace: a command of the sandbox. The engine's stop comes from
	 * the host's namespace, which the kernel reports as pid 0
	 * (signal(7), pid_namespaces(7)). Elsewhere (tests, an init in front
	 * of us) whoever may signal us may stop us. */
	return self != 1 || sender_pid == 0;
}

/* Read pending signals; returns true when the helper must stop. */
static bool signals_read(int sigfd, bool *ret_child)
{
	bool stop = false;
	struct signalfd_siginfo si;
	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo == SIGCHLD) {
			*ret_child = true;
		} else if (!loop_stop_signal_honoured(si.ssi_pid, getpid())) {
			hlog_warn("ignoring signal %u sent by process %u inside the sandbox; only the engine "
			          "(docker stop) stops the helper",
			          si.ssi_signo, si.ssi_pid);
		} else {
			hlog_info("received signal %u; stopping every session", si.ssi_signo);
			stop = true;
		}
	}
	return stop;
}

static void flush_at_exit(struct frame_writer *w)
{
	int64_t deadline = bash_clock_ms() + FLUSH_AT_EXIT_MS;
	while (frame_writer_flush(w) > 0) {
		int64_t left = deadline - bash_clock_ms();
		if (left <= 0)
			break;
		struct pollfd p = {.fd = w->fd, .events = POLLOUT};
		if (poll(&p, 1, (int)left) <= 0)
			break;
	}
}

static int poll_timeout(void)
{
	int64_t dl = bash_next_deadline();
	if (dl < 0)
		return -1;
	int64_t left = dl - bash_clock_ms();
	return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Fixed entries of the loop's pollfd array: the signalfd, requests on
 * stdin, stdout, and the direct channel's socket. */
#define FIXED_POLLFDS 4

/* The loop proper; returns after a stop signal. */
static void serve(int in_fd, int sigfd, struct frame_reader *reader, struct frame_writer *writer)
{
	bool in_open = true;
	struct pollfd *fds = xcalloc(FIXED_POLLFDS, sizeof *fds); /* the fixed entries; grown below */
	size_t cap = FIXED_POLLFDS;
	for (;;) {
		size_t want = FIXED_POLLFDS + BASH_POLLFDS_PER_SESSION * bash_session_count(NULL);
		if (want > cap) {
			fds = xrealloc(fds, want * sizeof *fds);
			cap = want;
		}
		size_t n = 0;
		int in_idx = -1, direct_idx = -1;
		bool room = frame_writer_pending(current_writer()) < OUT_HIGH_WATER;
		fds[n++] = (struct pollfd){.fd = sigfd, .events = POLLIN};
		if (in_open && room) {
			in_idx = (int)n;
			fds[n++] = (struct pollfd){.fd = in_fd, .events = POLLIN};
		}
		if (frame_writer_pending(writer) > 0)
			fds[n++] = (struct pollfd){.fd = writer->fd, .events = POLLOUT};
		if (direct.fd >= 0) {
			short ev = (short)((room ? POLLIN : 0) | (frame_writer_pending(&direct.writer) ? POLLOUT : 0));
			direct_idx = (int)n;
			fds[n++] = (struct pollfd){.fd = direct.fd, .events = ev};
		}
		size_t base = n, m = bash_pollfds(fds + base, cap - base);
		n += m;
		if (poll(fds, n, poll_timeout()) < 0) {
			if (errno != EINTR) {
				hlog_error("poll failed: %s", strerror(errno));
				break;
			}
			for (size_t i = 0; i < n; i++)
				fds[i].revents = 0;
		}
		bool child = false, stop = false;
		if (fds[0].revents)
			stop = signals_read(sigfd, &child);
		if (child)
			bash_reap();
		bash_pollfds_handle(fds + base, m);
		if (in_idx >= 0 && fds[in_idx].revents) {
			int r = frame_reader_read(reader, in_fd, dispatch_line, dispatch_overlong, NULL);
			if (r <= 0) {
				in_open = false;
				hlog_info("requests ended (%s); sessions keep running",
				          r == 0 ? "end of input" : strerror(errno));
			}
		}
		if (direct_idx >= 0 && (fds[direct_idx].revents & (POLLIN | POLLHUP | POLLERR)) &&
		    frame_reader_read(&direct.reader, direct.fd, dispatch_line, dispatch_overlong, NULL) <= 0)
			direct_leave();
		direct_settle();
		bash_tick();
		frame_writer_flush(writer);
		if (direct.fd >= 0) {
			frame_writer_flush(&direct.writer);
			if (direct.writer.broken) {
				direct_leave();
				direct_settle();
			}
		}
		bash_spare_ensure();
		if (stop)
			break;
	}
	free(fds);
}

/* Keep every command of the sandbox away from the helper's own streams.
 * Commands run as root in the container, and /proc/1/fd/{0,1,2} would let
 * them forge replies to the host or inject requests. A non-dumpable process's
 * /proc entries (fd, environ, mem, …) and ptrace need CAP_SYS_PTRACE, which
 * sandboxes lack; execve makes each session shell dumpable again. No
 * descriptor of ours reaches a child: 0, 1 and 2 are replaced in the child
 * before exec, and everything else is close-on-exec. */
static void protect_streams(const struct loop_config *cfg)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		hlog_error("cannot make the helper non-dumpable (%s): commands could reach its "
		           "streams through /proc",
		           strerror(errno));
	/* A closed standard descriptor would be reused by a pipe or log file
	 * and then clobbered in the child; fill the gaps with /dev/null. */
	for (int fd = 0; fd <= 2; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int n = open("/dev/null", O_RDWR);
		if (n >= 0 && n != fd) {
			dup2(n, fd);
			close(n);
		}
	}
	/* Whatever we were started with (a runtime's leftovers, a test
	 * runner's pipes) must not reach the sessions either. */
	if (close_range(3, ~0u, CLOSE_RANGE_CLOEXEC) < 0) {
		struct rlimit rl;
		int max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 65536 ? (int)rl.rlim_cur : 65536;
		for (int fd = 3; fd < max; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	int own[] = {cfg->in_fd, cfg->out_fd, STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
		fcntl(own[i], F_SETFD, FD_CLOEXEC);
}

int loop_run(const struct loop_config *cfg)
{
	protect_streams(cfg);
	paths_configure(cfg->workspace, cfg->log_dir);
	boot_init();
	bash_restore(boot_wall_ms);
	sigset_t mask, old;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	if (sigprocmask(SIG_BLOCK, &mask, &old) < 0) {
		hlog_error("cannot block signals: %s", strerror(errno));
		return 1;
	}
	int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sigfd < 0) {
		hlog_error("cannot create a signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return 1;
	}
	struct sigaction ign = {.sa_handler = SIG_IGN}, old_pipe, old_hup;
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaction(SIGHUP, &ign, &old_hup);
	/* As PID 1 orphans come to us anyway; elsewhere (tests, an init in
	 * front of us) this makes them come here too. */
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) < 0)
		hlog_warn("cannot become a child subreaper: %s", strerror(errno));
	fcntl(cfg->out_fd, F_SETFL, fcntl(cfg->out_fd, F_GETFL) | O_NONBLOCK);

	struct frame_reader reader;
	struct frame_writer writer;
	frame_reader_init(&reader);
	frame_writer_init(&writer, cfg->out_fd);
	stdout_writer = &writer;
	rpc_sink_set(reply_sink, &writer);
	/* Before the first request, while nothing else runs in the sandbox:
	 * later, root in it could rename what leads to the directory (direct.c). */
	const char *channel_dir = cfg->channel_dir ? cfg->channel_dir : PROTO_CHANNEL_DIR;
	channel_dirfd = open(channel_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (channel_dirfd < 0)
		hlog_debug("no direct channel directory %s (%s): answers stay on stdout", channel_dir, strerror(errno));

	serve(cfg->in_fd, sigfd, &reader, &writer);

	bash_shutdown(sigfd);
	flush_at_exit(current_writer());
	if (current_writer() != &writer)
		flush_at_exit(&writer);
	direct_leave();
	direct_settle();
	if (direct.next_fd >= 0)
		close(direct.next_fd);
	direct.next_fd = -1;
	if (channel_dirfd >= 0)
		close(channel_dirfd);
	channel_dirfd = -1;
	stdout_writer = NULL;
	bash_free();
	rpc_sink_set(NULL, NULL);
	frame_reader_free(&reader);
	frame_writer_free(&writer);
	close(sigfd);
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return 0;
}
