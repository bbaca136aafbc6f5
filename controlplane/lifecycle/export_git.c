/* export_git.c: git on the host, for saved clone work. What it reads came
 * out of a sandbox and the repository it may write is the person's, so git
 * runs with a fixed, minimal environment and command-line settings that
 * leave no way for a setting or a hook to run a program: no system or
 * global config, hooks and fsmonitor off, only local-file transports,
 * object checks on every fetch. Never through a shell. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/buf.h"
#include "../base/cleanup.h"
#include "export_internal.h"

/* -c settings given to every git call (git-config(1) names them). The
 * repository's own config is still read; these win over it. */
static const char *const fixed_config[] = {
    "core.hooksPath=/dev/null",   /* no hook (reference-transaction runs on every fetch) */
    "core.fsmonitor=false",       /* a program named by config */
    "core.sshCommand=false",      /* never used: no ssh transport */
    "protocol.allow=never",       /* every transport off ... */
    "protocol.file.allow=always", /* ... but local files (a bundle is one) */
    "transfer.fsckObjects=true",  /* check every object received */
    "fetch.fsckObjects=true",     /* (wins over transfer.fsckObjects: set it too) */
    "fetch.writeCommitGraph=false",
    "fetch.recurseSubmodules=false",
    "submodule.recurse=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "core.pager=cat",
    "color.ui=false",
    "credential.helper=",
    "core.askPass=",
    "advice.detachedHead=false",
    "safe.bareRepository=all",
    NULL,
};

static const char *const git_paths[] = {"/usr/bin/git", "/usr/local/bin/git", "/bin/git", NULL};

static const char *git_binary(void)
{
	for (size_t i = 0; git_paths[i]; i++)
		if (access(git_paths[i], X_OK) == 0)
			return git_paths[i];
	return NULL;
}

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The verb of args ("fetch", "bundle verify") for messages. */
static void verb_of(const char *const *args, char *buf, size_t size)
{
	size_t i = 0;
	while (args[i] && args[i][0] == '-')
		i++;
	snprintf(buf, size, "%s", args[i] ? args[i] : "?");
}

static int wait_child(pid_t pid, int *status)
{
	for (;;) {
		pid_t r = waitpid(pid, status, 0);
		if (r == pid)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int run(const char *cwd, const char *home, const char *const *args, const char *in, size_t in_len, int in_fd,
               size_t out_max, long timeout_ms, char **ret_out, size_t *ret_len, int *ret_status, struct cp_error **err)
{
	const char *git = git_binary();
	char verb[64];
	verb_of(args, verb, sizeof(verb));
	if (!git)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "git is not installed on this machine (looked for /usr/bin/git); install it "
		                    "('apt-get install git') to save or apply the work of clone sandboxes");
	/* Everything the child needs is built before fork. */
	size_t n_args = 0, n_cfg = 0;
	while (args[n_args])
		n_args++;
	while (fixed_config[n_cfg])
		n_cfg++;
	const char **argv = xcalloc(2 + 2 * n_cfg + n_args + 1, sizeof(*argv));
	size_t a = 0;
	argv[a++] = git;
	for (size_t i = 0; i < n_cfg; i++) {
		argv[a++] = "-c";
		argv[a++] = fixed_config[i];
	}
	for (size_t i = 0; i < n_args; i++)
		argv[a++] = args[i];
	argv[a] = NULL;
	char home_env[4200];
	snprintf(home_env, sizeof(home_env), "HOME=%s", home ? home : "/nonexistent");
	const char *envp[] = {"PATH=/usr/local/bin:/usr/bin:/bin",
	                      home_env,
	                      "LC_ALL=C",
	                      "GIT_CONFIG_NOSYSTEM=1",
	                      "GIT_CONFIG_GLOBAL=/dev/null",
	                      "GIT_TERMINAL_PROMPT=0",
	                      "GIT_NO_REPLACE_OBJECTS=1",
	                      "GIT_ATTR_NOSYSTEM=1",
	                      "GIT_PROTOCOL_FROM_USER=0",
	                      "GIT_OPTIONAL_LOCKS=0",
	                      "GIT_ASKPASS=",
	                      "SSH_ASKPASS=",
	                      NULL};
	int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	if (pipe2(pin, O_CLOEXEC) < 0 || pipe2(pout, O_CLOEXEC) < 0 || pipe2(perr, O_CLOEXEC) < 0) {
		int e = errno;
		for (int i = 0; i < 2; i++) {
			if (pin[i] >= 0)
				close(pin[i]);
			if (pout[i] >= 0)
				close(pout[i]);
			if (perr[i] >= 0)
				close(perr[i]);
		}
		free(argv);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, e, "run git %s", verb);
	}
	pid_t pid = fork();
	if (pid == 0) {
		/* Only async-signal-safe calls from here to execve. */
		if (dup2(in_fd >= 0 ? in_fd : pin[0], 0) < 0 || dup2(pout[1], 1) < 0 || dup2(perr[1], 2) < 0)
			_exit(126);
		if (cwd && chdir(cwd) < 0)
			_exit(125);
		execve(git, (char *const *)argv, (char *const *)envp);
		_exit(127);
	}
	int fork_errno = errno;
	close(pin[0]);
	close(pout[1]);
	close(perr[1]);
	free(argv);
	if (pid < 0) {
		close(pin[1]);
		close(pout[0]);
		close(perr[0]);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, fork_errno, "run git %s", verb);
	}
	if (!in || in_len == 0) {
		close(pin[1]);
		pin[1] = -1;
	} else {
		fcntl(pin[1], F_SETFL, O_NONBLOCK);
	}
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	fcntl(perr[0], F_SETFL, O_NONBLOCK);
	struct cp_buf out, errtail;
	cp_buf_init(&out, out_max);
	cp_buf_init(&errtail, 64 * 1024);
	size_t in_off = 0;
	int over = 0, timed_out = 0;
	int64_t deadline = now_ms() + timeout_ms;
	while (pout[0] >= 0 || perr[0] >= 0) {
		struct pollfd p[3];
		int np = 0, io = -1, ie = -1, ii = -1;
		if (pout[0] >= 0)
			io = np, p[np++] = (struct pollfd){.fd = pout[0], .events = POLLIN};
		if (perr[0] >= 0)
			ie = np, p[np++] = (struct pollfd){.fd = perr[0], .events = POLLIN};
		if (pin[1] >= 0)
			ii = np, p[np++] = (struct pollfd){.fd = pin[1], .events = POLLOUT};
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			timed_out = 1;
			break;
		}
		if (poll(p, (nfds_t)np, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			break;
		char buf[65536];
		if (io >= 0 && p[io].revents) {
			ssize_t n = read(pout[0], buf, sizeof(buf));
			if (n > 0) {
				if (!over && cp_buf_append(&out, buf, (size_t)n) < 0)
					over = 1;
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(pout[0]);
				pout[0] = -1;
			}
		}
		if (ie >= 0 && p[ie].revents) {
			ssize_t n = read(perr[0], buf, sizeof(buf));
			if (n > 0) {
				if (cp_buf_append(&errtail, buf, (size_t)n) < 0) {
					cp_buf_consume(&errtail, errtail.len / 2);
					cp_buf_append(&errtail, buf, (size_t)n < errtail.max / 2 ? (size_t)n : 0);
				}
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(perr[0]);
				perr[0] = -1;
			}
		}
		if (ii >= 0 && p[ii].revents) {
			ssize_t n = write(pin[1], in + in_off, in_len - in_off);
			if (n > 0)
				in_off += (size_t)n;
			if ((n < 0 && errno != EAGAIN && errno != EINTR) || in_off == in_len) {
				close(pin[1]);
				pin[1] = -1;
			}
		}
	}
	if (pin[1] >= 0)
		close(pin[1]);
	if (pout[0] >= 0)
		close(pout[0]);
	if (perr[0] >= 0)
		close(perr[0]);
	if (timed_out)
		kill(pid, SIGKILL);
	int status = 0;
	wait_child(pid, &status);
	int r = 0;
	if (timed_out) {
		r = cp_error_set(err, CP_ERR_TIMEOUT, "git %s did not finish within %ld s", verb, timeout_ms / 1000);
	} else if (over) {
		r = cp_error_set(err, CP_ERR_LIMIT, "git %s printed more than %zu bytes", verb, out_max);
	} else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		if (code == 127 || code == 126 || code == 125) {
			r = cp_error_set(err, CP_ERR_UNAVAILABLE, "git %s could not start (%s)", verb,
			                 code == 125 ? "its directory is gone" : "exec failed");
		} else if (ret_status) {
			*ret_status = code;
			r = 1;
		} else {
			/* The last lines of git's own message say what was wrong. */
			const char *tail = errtail.data ? errtail.data : "";
			size_t tl = errtail.len;
			while (tl && (tail[tl - 1] == '\n' || tail[tl - 1] == ' '))
				tl--;
			size_t from = tl > 600 ? tl - 600 : 0;
			char shown[1400];
			policy_text_escape(tail + from, tl - from, shown, sizeof(shown));
			r = cp_error_set(err, CP_ERR_INTERNAL, "git %s failed (exit code %d): %s", verb, code,
			                 tl ? shown : "no message");
		}
	}
	if (r == 0 || r == 1) {
		if (ret_len)
			*ret_len = out.len;
		if (ret_out)
			*ret_out = cp_buf_steal(&out);
	}
	if (r == 0 && ret_status)
		*ret_status = 0;
	cp_buf_free(&out);
	cp_buf_free(&errtail);
	return r;
}

int export_git_run(const char *cwd, const char *home, const char *const *args, const char *in, size_t in_len,
                   size_t out_max, long timeout_ms, char **ret_out, size_t *ret_len, int *ret_status,
                   struct cp_error **err)
{
	return run(cwd, home, args, in, in_len, -1, out_max, timeout_ms, ret_out, ret_len, ret_status, err);
}

int export_git_run_fd(const char *cwd, const char *home, const char *const *args, int in_fd, size_t out_max,
                      long timeout_ms, char **ret_out, size_t *ret_len, struct cp_error **err)
{
	return run(cwd, home, args, NULL, 0, in_fd, out_max, timeout_ms, ret_out, ret_len, NULL, err);
}

int export_git_objects_dir(const char *dir, const char *home, char **ret, struct cp_error **err)
{
	struct stat st;
	if (!dir || stat(dir, &st) < 0 || !S_ISDIR(st.st_mode))
		return cp_error_set(err, CP_ERR_NOT_FOUND, "'%s' is gone or not a directory", dir ? dir : "");
	const char *args[] = {"rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", NULL};
	const char *bare_args[] = {"rev-parse", "--is-bare-repository", "--path-format=absolute", "--git-common-dir",
	                           NULL};
	_cleanup_free_ char *out = NULL;
	int status = 0;
	if (export_git_run(dir, home, args, NULL, 0, 65536, 30000, &out, NULL, &status, err) < 0)
		return -1;
	char *common = NULL;
	if (status == 0) {
		/* toplevel \n common-dir \n: dir itself must be the top level. */
		char *nl = strchr(out, '\n');
		if (!nl)
			return cp_error_set(err, CP_ERR_NOT_FOUND, "'%s' is not a git repository", dir);
		*nl = '\0';
		char real[4096];
		if (!realpath(dir, real) || strcmp(real, out) != 0)
			return cp_error_set(err, CP_ERR_NOT_FOUND, "'%s' is not the top of a git repository", dir);
		common = nl + 1;
	} else {
		free(out);
		out = NULL;
		if (export_git_run(dir, home, bare_args, NULL, 0, 65536, 30000, &out, NULL, &status, err) < 0)
			return -1;
		if (status != 0 || strncmp(out, "true\n", 5) != 0)
			return cp_error_set(err, CP_ERR_NOT_FOUND, "'%s' is not a git repository", dir);
		common = out + 5;
	}
	common[strcspn(common, "\n")] = '\0';
	if (common[0] != '/')
		return cp_error_set(err, CP_ERR_NOT_FOUND, "'%s': git names no object directory", dir);
	*ret = xasprintf("%s/objects", common);
	return 0;
}
