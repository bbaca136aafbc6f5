/* export_git.c: git on the host, for saved clone work. What it reads came
 * out of a sandbox and the repository it may write is the person's, so git
 * runs with a fixed, minimal environment and command-line settings that
 * leave no way for a setting or a hook to run a program: no system or
 * global config, hooks and fsmonitor off, only local-file transports,
 * object checks on every fetch. Never through a shell, and always bounded
 * (base/child.c: memory ceiling, CPU, file size, wall time; issue 23). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "export.h"

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
    /* Bounds git keeps itself, inside the ceiling child.c sets (issue 23):
     * blobs above 64 MiB are streamed, not held; one thread, so one arena
     * and one delta cache; mappings of packs bounded. */
    "core.bigFileThreshold=64m",
    "core.deltaBaseCacheLimit=32m",
    "core.packedGitWindowSize=32m",
    "core.packedGitLimit=128m",
    "pack.threads=1",
    "pack.windowMemory=64m",
    "pack.depth=50",
    "index.threads=1",
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

/* The bounds in force (export_git_configure); the defaults until then. */
static struct export_git_bounds bounds = {
    .memory_bytes = EXPORT_GIT_MEMORY_DEFAULT,
    .max_input_bytes = EXPORT_GIT_MAX_INPUT_DEFAULT,
};
static __thread struct export_git_usage usage;

void export_git_configure(uint64_t memory_bytes, uint64_t max_input_bytes)
{
	if (memory_bytes)
		bounds.memory_bytes = memory_bytes;
	if (max_input_bytes)
		bounds.max_input_bytes = max_input_bytes;
}

const struct export_git_bounds *export_git_bounds_in_force(void)
{
	return &bounds;
}

void export_git_usage_take(struct export_git_usage *ret)
{
	*ret = usage;
	usage = (struct export_git_usage){0};
}

/* The verb of args ("fetch", "bundle verify") for messages. */
static void verb_of(const char *const *args, char *buf, size_t size)
{
	size_t i = 0;
	while (args[i] && args[i][0] == '-')
		i++;
	snprintf(buf, size, "%s", args[i] ? args[i] : "?");
}

static void size_text(uint64_t bytes, char *buf, size_t size)
{
	if (bytes >= (1ull << 30) && bytes % (1ull << 30) == 0)
		snprintf(buf, size, "%llu GiB", (unsigned long long)(bytes >> 30));
	else
		snprintf(buf, size, "%llu MiB", (unsigned long long)(bytes >> 20));
}

/* git's own words for an allocation or a mapping the ceiling refused
 * (wrapper.c "Out of memory, malloc failed", zlib's "out of memory",
 * packfile.c "mmap failed", "cannot be mapped"; strerror(ENOMEM) from
 * anything else). Which allocation meets the ceiling first varies with the
 * address space's layout, so any of them may be the one. */
static int out_of_memory(const char *tail)
{
	return strcasestr(tail, "out of memory") || strcasestr(tail, "mmap failed") ||
	       strstr(tail, "cannot be mapped") || strcasestr(tail, "cannot allocate memory") ||
	       strcasestr(tail, "unable to allocate");
}

/* The error for a git that ended badly, naming the bound it hit. */
static int judge(const char *verb, const struct child_result *c, const struct child_limits *lim, long timeout_ms,
                 int *ret_status, struct cp_error **err)
{
	char mem[32], file[32];
	size_text(lim->memory_bytes, mem, sizeof(mem));
	size_text(lim->file_bytes, file, sizeof(file));
	if (c->timed_out)
		return cp_error_set(err, CP_ERR_TIMEOUT,
		                    "git %s did not finish within %ld s (the time bound of host git on a sandbox's "
		                    "bytes); it was stopped",
		                    verb, timeout_ms / 1000);
	if (c->signal == SIGXCPU || (c->signal == SIGKILL && (uint64_t)c->cpu_ms / 1000 >= lim->cpu_seconds))
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "git %s used more than %llu s of CPU (the CPU bound of host git on a sandbox's "
		                    "bytes); it was stopped",
		                    verb, (unsigned long long)lim->cpu_seconds);
	if (c->signal == SIGXFSZ)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "git %s tried to write a file larger than %s (the file bound of host git: twice "
		                    "CHAT2SBX_MAX_EXPORT_BYTES and 256 MiB); it was stopped",
		                    verb, file);
	if (c->exited && c->code == 0)
		return 0;
	int code = c->exited ? c->code : 128 + c->signal;
	if (out_of_memory(c->err_tail) || c->signal == SIGSEGV || c->signal == SIGBUS)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "git %s needed more than its memory ceiling of %s (CHAT2SBX_SAVE_MEMORY_BYTES, the "
		                    "bound on host git working on a sandbox's bytes) and was stopped; a hostile bundle "
		                    "(a delta bomb) ends here, a very large repository may need a higher ceiling",
		                    verb, mem);
	if (ret_status) {
		*ret_status = code;
		return 1;
	}
	/* The last lines of git's own message say what was wrong. */
	const char *tail = c->err_tail;
	size_t tl = c->err_len;
	while (tl && (tail[tl - 1] == '\n' || tail[tl - 1] == ' '))
		tl--;
	size_t from = tl > 600 ? tl - 600 : 0;
	char shown[1400];
	policy_text_escape(tail + from, tl - from, shown, sizeof(shown));
	return cp_error_set(err, CP_ERR_INTERNAL, "git %s failed (exit code %d): %s", verb, code,
	                    tl ? shown : "no message");
}

static int run(const char *cwd, const char *home, const char *const *args, const char *in, size_t in_len, int in_fd,
               int out_fd, size_t out_max, long timeout_ms, const struct child_limits *limits, char **ret_out,
               size_t *ret_len, int *ret_status, struct cp_error **err)
{
	const char *git = git_binary();
	char verb[64];
	verb_of(args, verb, sizeof(verb));
	if (!git)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "git is not installed on this machine (looked for /usr/bin/git); install it "
		                    "('apt-get install git') to save or apply the work of clone sandboxes");
	size_t n_args = 0, n_cfg = 0;
	while (args[n_args])
		n_args++;
	while (fixed_config[n_cfg])
		n_cfg++;
	_cleanup_free_ const char **argv = xcalloc(2 + 2 * n_cfg + n_args + 1, sizeof(*argv));
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
	                      "MALLOC_ARENA_MAX=2", /* each glibc arena reserves address space */
	                      NULL};
	struct child_limits lim = limits ? *limits : export_git_limits(timeout_ms);
	struct child_spec spec = {.path = git,
	                          .argv = argv,
	                          .envp = envp,
	                          .cwd = cwd,
	                          .in = in,
	                          .in_len = in_len,
	                          .in_fd = in_fd,
	                          .out_fd = out_fd,
	                          .out_max = out_max,
	                          .limits = lim};
	struct child_result c = {0};
	if (child_run(&spec, &c, err) < 0)
		return cp_error_prefix(err, "git %s could not start", verb);
	usage.runs++;
	usage.cpu_ms += c.cpu_ms;
	if (c.peak_rss_kib > usage.peak_rss_kib)
		usage.peak_rss_kib = c.peak_rss_kib;
	log_debug("lifecycle", "git %s: %s %d in %ld ms, cpu %ld ms, peak rss %ld KiB", verb,
	          c.exited ? "exit" : "signal", c.exited ? c.code : c.signal, c.wall_ms, c.cpu_ms, c.peak_rss_kib);
	int r = judge(verb, &c, &lim, timeout_ms, ret_status, err);
	if (r < 0 && (*err)->code != CP_ERR_INTERNAL)
		log_info("lifecycle", "host git %s stopped at a bound (peak rss %ld KiB, cpu %ld ms): %s", verb,
		         c.peak_rss_kib, c.cpu_ms, (*err)->message);
	if (r == 0 && c.out_over) {
		r = cp_error_set(err, CP_ERR_LIMIT, "git %s printed more than %zu bytes", verb, out_max);
	}
	if (r == 0 || r == 1) {
		if (ret_len)
			*ret_len = c.out_len;
		if (ret_out)
			*ret_out = TAKE_PTR(c.out);
	}
	if (r == 0 && ret_status)
		*ret_status = 0;
	child_result_clear(&c);
	return r;
}

struct child_limits export_git_limits(long timeout_ms)
{
	/* CPU: git runs one thread here (pack.threads=1), so the wall budget
	 * is also the most CPU it can honestly use. Files: index-pack writes
	 * the pack it reads, plus the bases --fix-thin appends. */
	return (struct child_limits){.memory_bytes = bounds.memory_bytes,
	                             .cpu_seconds = (uint64_t)(timeout_ms + 999) / 1000,
	                             .file_bytes = 2 * bounds.max_input_bytes + (256ull << 20),
	                             .open_files = 1024,
	                             .wall_ms = timeout_ms};
}

int export_git_run(const char *cwd, const char *home, const char *const *args, const char *in, size_t in_len,
                   size_t out_max, long timeout_ms, char **ret_out, size_t *ret_len, int *ret_status,
                   struct cp_error **err)
{
	return run(cwd, home, args, in, in_len, -1, 0, out_max, timeout_ms, NULL, ret_out, ret_len, ret_status, err);
}

int export_git_run_fd(const char *cwd, const char *home, const char *const *args, int in_fd, size_t out_max,
                      long timeout_ms, char **ret_out, size_t *ret_len, struct cp_error **err)
{
	return run(cwd, home, args, NULL, 0, in_fd, 0, out_max, timeout_ms, NULL, ret_out, ret_len, NULL, err);
}

int export_git_run_fd_limited(const char *cwd, const char *home, const char *const *args, int in_fd,
                              const struct child_limits *limits, struct cp_error **err)
{
	return run(cwd, home, args, NULL, 0, in_fd, 0, 65536, limits->wall_ms, limits, NULL, NULL, NULL, err);
}

int export_git_run_to_fd(const char *cwd, const char *const *args, int out_fd, const struct child_limits *limits,
                         struct cp_error **err)
{
	if (out_fd <= 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "run git: no file for its output");
	return run(cwd, NULL, args, NULL, 0, -1, out_fd, 65536, limits->wall_ms, limits, NULL, NULL, NULL, err);
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
		char *nl = out ? strchr(out, '\n') : NULL; /* out is set on every success */
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
