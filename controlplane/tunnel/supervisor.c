/* supervisor.c: runs OpenAI's tunnel-client as serve's child (DESIGN.md,
 * Tunnel; issue 7). One supervisor thread spawns it (fork + execve with a
 * fixed, minimal environment), waits for it, and restarts it with capped
 * exponential backoff; one reader thread per child forwards its output lines
 * to our log. It never reads the runtime key: the client gets a `file:`
 * reference (the client's documented `--control-plane.api-key=file:PATH`
 * form), so the key is in no argv and no environment. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "tunnel/tunnel_internal.h"

#define STOP_GRACE_MS 5000
#define READER_POLL_MS 200
#define LINE_MAX_BYTES 4096
#define DEFAULT_PATH "/usr/local/bin:/usr/bin:/bin"

struct tunnel_supervisor {
	const struct config *cfg; /* borrowed; outlives the supervisor */
	char *mcp_socket;         /* serve's Unix socket, which the client dials */
	char tunnel_id[64];
	pthread_mutex_t lock;
	pthread_cond_t changed; /* CLOCK_MONOTONIC; state changes, stop, child gone */
	int stop;               /* tunnel_stop was called */
	int done;               /* the supervisor thread has finished */
	struct tunnel_status st;
	pthread_t thread;
};

int64_t tunnel_backoff_ms(unsigned failures)
{
	if (failures == 0)
		return 0;
	int64_t ms = TUNNEL_BACKOFF_MIN_MS;
	for (unsigned i = 1; i < failures && ms < TUNNEL_BACKOFF_MAX_MS; i++)
		ms *= 2;
	return ms > TUNNEL_BACKOFF_MAX_MS ? TUNNEL_BACKOFF_MAX_MS : ms;
}

/* Caller holds sup->lock. */
static void set_state_locked(struct tunnel_supervisor *sup, enum tunnel_state state)
{
	sup->st.state = state;
	sup->st.updated_at_ms = clock_now_ms();
	tunnel_state_write(sup->cfg, &sup->st);
	pthread_cond_broadcast(&sup->changed);
}

/* A loopback port free right now for the client's health server. Another
 * process could take it before the client binds; the client then exits and
 * the next start picks another port. */
static int free_loopback_port(unsigned *ret_port)
{
	_cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0)
		return -1;
	*ret_port = ntohs(a.sin_port);
	return 0;
}

/* ---- output forwarding ---- */

struct reader {
	int fd;
	_Atomic int stop; /* the child is gone: drain what is buffered, then end */
	pthread_t thread;
};

static void emit_line(char *line, size_t len)
{
	while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n'))
		len--;
	line[len] = '\0';
	/* The client's text goes into our log verbatim except control bytes,
	 * which could forge log lines or terminal escapes. */
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 && line[i] != '\t')
			line[i] = '?';
	if (len > 0)
		log_info("tunnel", "tunnel-client: %s", line);
}

static void *reader_main(void *arg)
{
	struct reader *r = arg;
	char line[LINE_MAX_BYTES + 1];
	size_t used = 0;
	for (;;) {
		struct pollfd p = {.fd = r->fd, .events = POLLIN};
		int n = poll(&p, 1, READER_POLL_MS);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0) {
			if (r->stop)
				break; /* a grandchild may hold the pipe open; stop anyway */
			continue;
		}
		char buf[2048];
		ssize_t got = n > 0 ? read(r->fd, buf, sizeof(buf)) : -1;
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			break;
		for (ssize_t i = 0; i < got; i++) {
			line[used++] = buf[i];
			if (buf[i] == '\n' || used == LINE_MAX_BYTES) {
				emit_line(line, used);
				used = 0;
			}
		}
	}
	if (used > 0)
		emit_line(line, used);
	return NULL;
}

/* ---- spawning ---- */

struct spawn_plan {
	char *argv[7];
	char *envp[8];
	char arg_key[4300], arg_health[64], arg_mcp[4300];
	char env_path[4200], env_home[4200], env_lang[256], env_id[96];
};

/* PATH, HOME and LANG are passed through from our own process environment
 * (not settings, so not in config/): the client needs a search path and a
 * home, nothing else of ours. No CHAT2SBX_* variable and nothing secret. */
static void plan_build(struct tunnel_supervisor *sup, unsigned health_port, struct spawn_plan *p)
{
	const struct config *cfg = sup->cfg;
	size_t a = 0, e = 0;
	snprintf(p->arg_key, sizeof(p->arg_key), "--control-plane.api-key=file:%s/key", cfg->secret_dir);
	snprintf(p->arg_health, sizeof(p->arg_health), "--health.listen-addr=127.0.0.1:%u", health_port);
	/* The client dials our Unix socket (tunnel-client docs/configuration.md,
	 * "MCP server": a channel-qualified --mcp.server-url with unix-socket=),
	 * so it needs no token and no other local user can pose as it. */
	snprintf(p->arg_mcp, sizeof(p->arg_mcp),
	         "--mcp.server-url=channel=main,url=http://localhost/mcp,unix-socket=%s", sup->mcp_socket);
	p->argv[a++] = cfg->tunnel_client;
	p->argv[a++] = "run";
	p->argv[a++] = p->arg_key;
	p->argv[a++] = p->arg_health;
	p->argv[a++] = p->arg_mcp;
	p->argv[a] = NULL;

	const char *path = getenv("PATH"), *home = getenv("HOME"), *lang = getenv("LANG");
	snprintf(p->env_path, sizeof(p->env_path), "PATH=%s", path && *path ? path : DEFAULT_PATH);
	p->envp[e++] = p->env_path;
	if (home && *home) {
		snprintf(p->env_home, sizeof(p->env_home), "HOME=%s", home);
		p->envp[e++] = p->env_home;
	}
	if (lang && *lang) {
		snprintf(p->env_lang, sizeof(p->env_lang), "LANG=%s", lang);
		p->envp[e++] = p->env_lang;
	}
	/* The tunnel id is not secret (it is typed into ChatGPT's app dialog). */
	snprintf(p->env_id, sizeof(p->env_id), "CONTROL_PLANE_TUNNEL_ID=%s", sup->tunnel_id);
	p->envp[e++] = p->env_id;
	p->envp[e] = NULL;
}

/* Between fork and execve only async-signal-safe calls: the parent has
 * threads. */
static void __attribute__((noreturn)) child_exec(const struct spawn_plan *p, int out_fd, pid_t parent)
{
	/* Own process group: a terminal's Ctrl+C reaches serve, which then
	 * stops the client in order, instead of killing both at once. */
	setpgid(0, 0);
	/* Dies with serve even on SIGKILL. The signal is tied to the forking
	 * thread, the supervisor thread, which outlives every child it starts. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(0);
	/* Default dispositions first, then unblock: a SIGTERM that tunnel_stop
	 * sent already is then delivered to the default action, not to serve's
	 * inherited handler (which would swallow it). */
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, &dfl, NULL);
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	int in = open("/dev/null", O_RDONLY);
	if (in < 0 || dup2(in, STDIN_FILENO) < 0 || dup2(out_fd, STDOUT_FILENO) < 0 || dup2(out_fd, STDERR_FILENO) < 0)
		_exit(126);
	close_range(3, ~0U, 0);
	execve(p->argv[0], p->argv, p->envp);
	static const char msg[] = "cannot execute the tunnel client\n";
	ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
	(void)ignored;
	_exit(127);
}

/* Starts one child; on success *ret_pid and *ret_out_fd (the read end of its
 * stdout/stderr pipe, owned by the caller). */
static int spawn_child(const struct spawn_plan *p, pid_t *ret_pid, int *ret_out_fd, char *why, size_t why_size)
{
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		snprintf(why, why_size, "cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0)
		child_exec(p, fds[1], parent);
	int saved = errno;
	close(fds[1]);
	if (pid < 0) {
		close(fds[0]);
		snprintf(why, why_size, "cannot fork: %s", strerror(saved));
		return -1;
	}
	*ret_pid = pid;
	*ret_out_fd = fds[0];
	return 0;
}

static void describe_exit(const siginfo_t *si, char *buf, size_t size)
{
	if (si->si_code == CLD_EXITED)
		snprintf(buf, size, "exit status %d", si->si_status);
	else
		snprintf(buf, size, "killed by signal %d (%s)", si->si_status, strsignal(si->si_status));
}

/* Runs one child to its end. Returns how long it lived (ms), or -1 when it
 * could not be started (the reason is in st.last_exit). Called without the
 * lock. */
static int64_t run_child_once(struct tunnel_supervisor *sup, int first)
{
	unsigned port = 0;
	struct spawn_plan plan;
	char why[256] = "";
	pid_t pid = -1;
	int out_fd = -1;
	if (free_loopback_port(&port) < 0)
		snprintf(why, sizeof(why), "no free loopback port for the health server: %s", strerror(errno));
	else {
		plan_build(sup, port, &plan);
		spawn_child(&plan, &pid, &out_fd, why, sizeof(why));
	}

	pthread_mutex_lock(&sup->lock);
	if (!first)
		sup->st.restarts++;
	if (pid < 0) {
		snprintf(sup->st.last_exit, sizeof(sup->st.last_exit), "%s", why);
		pthread_mutex_unlock(&sup->lock);
		log_warn("tunnel", "start tunnel-client: %s", why);
		return -1;
	}
	sup->st.pid = pid;
	snprintf(sup->st.health_url, sizeof(sup->st.health_url), "http://127.0.0.1:%u", port);
	set_state_locked(sup, TUNNEL_STATE_RUNNING);
	pthread_mutex_unlock(&sup->lock);
	log_info("tunnel", "started tunnel-client (pid %d), health server http://127.0.0.1:%u", (int)pid, port);

	int64_t started = clock_monotonic_ms();
	struct reader rd = {.fd = out_fd};
	int reading = pthread_create(&rd.thread, NULL, reader_main, &rd) == 0;
	if (!reading) {
		/* Nobody would drain the pipe: close it, so the client's writes
		 * fail instead of blocking it. */
		log_warn("tunnel", "cannot start the reader of tunnel-client's output; it is discarded");
		close(out_fd);
		out_fd = -1;
	}

	/* Wait without reaping, so the pid cannot be reused while tunnel_stop
	 * may still signal it; clear it under the lock, then reap. */
	siginfo_t si = {0};
	int w;
	while ((w = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT)) < 0 && errno == EINTR)
		;
	int64_t lived = clock_monotonic_ms() - started;
	char exit_text[160];
	if (w < 0) /* only if someone else reaped it; never signal that pid again */
		snprintf(exit_text, sizeof(exit_text), "exit not observed: %s", strerror(errno));
	else
		describe_exit(&si, exit_text, sizeof(exit_text));
	/* What the client left in its group goes with it; while it is a
	 * zombie its pid (and so the group id) cannot be reused. */
	if (w == 0)
		kill(-pid, SIGKILL);
	pthread_mutex_lock(&sup->lock);
	sup->st.pid = 0;
	snprintf(sup->st.last_exit, sizeof(sup->st.last_exit), "%s", exit_text);
	pthread_cond_broadcast(&sup->changed);
	pthread_mutex_unlock(&sup->lock);
	while (w == 0 && waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;

	rd.stop = 1;
	if (reading)
		pthread_join(rd.thread, NULL);
	if (out_fd >= 0)
		close(out_fd);
	log_warn("tunnel", "tunnel-client (pid %d) ended after %lld ms: %s", (int)pid, (long long)lived, exit_text);
	return lived;
}

static void *supervisor_main(void *arg)
{
	struct tunnel_supervisor *sup = arg;
	unsigned failures = 0;
	int first = 1;
	pthread_mutex_lock(&sup->lock);
	while (!sup->stop) {
		set_state_locked(sup, TUNNEL_STATE_STARTING);
		pthread_mutex_unlock(&sup->lock);
		int64_t lived = run_child_once(sup, first);
		first = 0;
		pthread_mutex_lock(&sup->lock);
		if (sup->stop)
			break;
		if (lived >= TUNNEL_STABLE_MS)
			failures = 0;
		failures++;
		int64_t delay = tunnel_backoff_ms(failures);
		set_state_locked(sup, TUNNEL_STATE_BACKOFF);
		log_info("tunnel", "restarting tunnel-client in %lld ms (restart %u)", (long long)delay,
		         sup->st.restarts + 1);
		struct timespec until = clock_deadline_after(delay);
		while (!sup->stop && pthread_cond_timedwait(&sup->changed, &sup->lock, &until) != ETIMEDOUT)
			;
	}
	set_state_locked(sup, TUNNEL_STATE_STOPPED);
	sup->done = 1;
	pthread_cond_broadcast(&sup->changed);
	pthread_mutex_unlock(&sup->lock);
	return NULL;
}

static void supervisor_free(struct tunnel_supervisor *sup)
{
	pthread_cond_destroy(&sup->changed);
	pthread_mutex_destroy(&sup->lock);
	free(sup->mcp_socket);
	free(sup);
}

int tunnel_start(const struct config *cfg, const char *mcp_socket, struct tunnel_supervisor **ret_sup,
                 struct cp_error **err)
{
	if (tunnel_config_check(cfg, err) < 0) {
		tunnel_state_write_refused(cfg, (*err)->message);
		return -1;
	}
	/* The flag's value is a comma-separated list of key=value pairs. */
	if (strpbrk(mcp_socket, ",=")) {
		cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		             "the MCP socket path '%s' contains ',' or '=', which the tunnel client's --mcp.server-url "
		             "cannot carry; set a CHAT2SBX_STATE_DIR without them",
		             mcp_socket);
		tunnel_state_write_refused(cfg, (*err)->message);
		return -1;
	}
	struct tunnel_supervisor *sup = xcalloc(1, sizeof(*sup));
	sup->cfg = cfg;
	sup->mcp_socket = xstrdup(mcp_socket);
	pthread_mutex_init(&sup->lock, NULL);
	clock_cond_init(&sup->changed);
	if (tunnel_id_read(cfg, sup->tunnel_id, sizeof(sup->tunnel_id), err) < 0) {
		tunnel_state_write_refused(cfg, (*err)->message);
		supervisor_free(sup);
		return -1;
	}
	sup->st.state = TUNNEL_STATE_STARTING;

	/* The supervisor thread (and the reader threads it starts) take no
	 * signals: serve's main thread handles SIGTERM/SIGINT/SIGHUP. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int r = pthread_create(&sup->thread, NULL, supervisor_main, sup);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r != 0) {
		supervisor_free(sup);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, r, "start the tunnel supervisor thread");
	}
	*ret_sup = sup;
	return 0;
}

static void signal_child(pid_t pid, int sig)
{
	kill(-pid, sig); /* its process group (it leads one), then itself */
	kill(pid, sig);
}

void tunnel_stop(struct tunnel_supervisor *sup)
{
	if (!sup)
		return;
	pthread_mutex_lock(&sup->lock);
	sup->stop = 1;
	pthread_cond_broadcast(&sup->changed);
	pid_t termed = 0;
	struct timespec until = clock_deadline_after(STOP_GRACE_MS);
	while (!sup->done) {
		if (sup->st.pid > 0 && termed != sup->st.pid) {
			termed = sup->st.pid;
			log_info("tunnel", "stopping tunnel-client (pid %d)", (int)termed);
			signal_child(termed, SIGTERM);
		}
		if (pthread_cond_timedwait(&sup->changed, &sup->lock, &until) == ETIMEDOUT) {
			if (sup->st.pid > 0) {
				log_warn("tunnel", "tunnel-client (pid %d) ignored SIGTERM for %d ms; killing it",
				         (int)sup->st.pid, STOP_GRACE_MS);
				signal_child(sup->st.pid, SIGKILL);
			}
			until = clock_deadline_after(STOP_GRACE_MS);
		}
	}
	pthread_mutex_unlock(&sup->lock);
	pthread_join(sup->thread, NULL);
	supervisor_free(sup);
}

void tunnel_status_get(struct tunnel_supervisor *sup, struct tunnel_status *ret)
{
	pthread_mutex_lock(&sup->lock);
	*ret = sup->st;
	pthread_mutex_unlock(&sup->lock);
}
