/* git_plant_probe.c: the doctor's second direct-mode git attack (issue 23),
 * on the throwaway repository git_probe.c made: from inside a probe sandbox,
 * one plant at a time where git on the host writes through a symlink (the
 * reflogs, COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD, ORIG_HEAD, a symlinked
 * logs/ directory), each pointing at a canary outside the repository; then,
 * on the host, the plant must be gone from .git and the sandbox stopped and
 * failed, naming it, and the canary unchanged. Never runs git on the host
 * (a plant that got through would write there). Owns the canary and the
 * quarantine directories of its probes, and removes them. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../lifecycle/lifecycle.h"
#include "ops_internal.h"

#define ATTACK                                                                                                         \
	"in a direct workspace, plant a symbolic link to a file outside at .git/logs/HEAD, .git/logs/refs/stash, "     \
	"COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD and ORIG_HEAD, and link .git/logs to a directory outside, one "         \
	"sandbox each"
/* How long chat2sbx gets to stop a sandbox after its plant (ms). */
#define PLANT_WAIT_MS 10000

/* Each plant, run in /workspace/.git with $T a host file and $D a host
 * directory outside the repository. */
static const struct {
	const char *rel; /* below .git */
	const char *command;
} plants[] = {
    {"logs/HEAD", "mkdir -p logs && rm -f logs/HEAD && ln -s \"$T\" logs/HEAD"},
    {"logs/refs/stash", "mkdir -p logs/refs && ln -s \"$T\" logs/refs/stash"},
    {"COMMIT_EDITMSG", "rm -f COMMIT_EDITMSG && ln -s \"$T\" COMMIT_EDITMSG"},
    {"MERGE_MSG", "ln -s \"$T\" MERGE_MSG"},
    {"FETCH_HEAD", "rm -f FETCH_HEAD && ln -s \"$T\" FETCH_HEAD"},
    {"ORIG_HEAD", "rm -f ORIG_HEAD && ln -s \"$T\" ORIG_HEAD"},
    {"logs", "mkdir -p logs && mv logs logs.real && ln -s \"$D\" logs"},
};

void ops_git_plant_judge(const struct ops_git_plant_outcome *o, size_t n, int canary_changed,
                         struct ops_probe_report *r)
{
	char bad[600] = "";
	size_t b = 0;
	long worst = 0;
	for (size_t i = 0; i < n; i++) {
		const char *why = !o[i].planted && !o[i].stopped ? "could not be planted (the probe proves nothing)"
		                  : !o[i].stopped                ? "the sandbox kept running"
		                  : o[i].still_there             ? "it is still in .git"
		                                                 : NULL;
		if (why && b < sizeof(bad))
			b += (size_t)snprintf(bad + b, sizeof(bad) - b, "%s.git/%s: %s", b ? "; " : "", o[i].rel, why);
		if (o[i].ms > worst)
			worst = o[i].ms;
	}
	if (b || canary_changed || n == 0)
		ops_probe_report_add(r, "direct_git_links", ATTACK, OPS_CHECK_FAILED, "%s%s%s",
		                     n == 0 ? "no plant was tried" : bad, b && canary_changed ? "; " : "",
		                     canary_changed
		                         ? "the canary outside the repository changed: the owner's git would "
		                           "have written through a plant"
		                         : "");
	else
		ops_probe_report_add(r, "direct_git_links", ATTACK, OPS_CHECK_PASSED,
		                     "each of the %zu plants was moved out of .git and its sandbox stopped and marked "
		                     "failed within %ld ms; the canary outside is unchanged",
		                     n, worst);
}

/* Removes what the quarantine kept of sandbox_id's plants. */
static void remove_quarantine(const struct config *cfg, const char *sandbox_id)
{
	_cleanup_free_ char *pattern = xasprintf("%s/quarantine/%s-*", cfg->data_root, sandbox_id);
	glob_t g = {0};
	if (glob(pattern, GLOB_NOSORT, NULL, &g) == 0)
		for (size_t i = 0; i < g.gl_pathc; i++)
			ops_remove_tree(g.gl_pathv[i]);
	globfree(&g);
}

/* The row of sandbox_id once it is failed, or after PLANT_WAIT_MS; 1 when
 * failed with a reason naming rel. */
static int wait_failed(struct store *store, const char *sandbox_id, const char *rel, int64_t since_ms, long *ret_ms)
{
	_cleanup_free_ char *needle = xasprintf(".git/%s'", rel);
	for (;;) {
		struct sandbox_record s = {0};
		_cleanup_error_ struct cp_error *e = NULL;
		int failed = store_sandbox_get(store, sandbox_id, &s, &e) == 0 && s.status == SANDBOX_FAILED;
		int named = failed && s.failure_reason && strstr(s.failure_reason, needle);
		sandbox_record_clear(&s);
		*ret_ms = (long)(clock_monotonic_ms() - since_ms);
		if (failed || *ret_ms > PLANT_WAIT_MS)
			return named;
		usleep(20 * 1000);
	}
}

/* 1 when the directory path exists and holds nothing. */
static int dir_empty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int n = 0;
	for (struct dirent *e; (e = readdir(d));)
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n == 0;
}

/* One plant in a sandbox of its own on workspace_id; its outcome in *o. */
static void plant_one(struct lifecycle *lc, const char *dir, const char *workspace_id, const char *canary,
                      const char *canary_dir, size_t i, struct ops_git_plant_outcome *o)
{
	*o = (struct ops_git_plant_outcome){.rel = plants[i].rel};
	struct lifecycle_create_options opts = {.workspace_id = workspace_id};
	struct lifecycle_create_result res = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	if (lifecycle_sandbox_create(lc, &opts, &res, &e) < 0) {
		log_warn("doctor", "create the probe for .git/%s: %s", plants[i].rel, e->message);
		return;
	}
	_cleanup_free_ char *cmd = xasprintf("T='%s'; D='%s'; cd /workspace/.git && %s && echo PLANTED; sleep 5; "
	                                     "echo STILL-RUNNING",
	                                     canary, canary_dir, plants[i].command);
	_cleanup_free_ char *out = NULL;
	int64_t t0 = clock_monotonic_ms();
	if (ops_probe_run(lc, res.sandbox.id, cmd, &out, &e) < 0)
		cp_error_freep(&e); /* stopped under the command: what the attack wants to see */
	o->planted = out && strstr(out, "PLANTED");
	o->stopped = wait_failed(lifecycle_store(lc), res.sandbox.id, plants[i].rel, t0, &o->ms) &&
	             !(out && strstr(out, "STILL-RUNNING"));
	_cleanup_free_ char *path = xasprintf("%s/.git/%s", dir, plants[i].rel);
	struct stat st;
	o->still_there = lstat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
	if (lifecycle_sandbox_destroy(lc, res.sandbox.id, NULL, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "remove the git plant probe %s", res.sandbox.id);
	remove_quarantine(lifecycle_config(lc), res.sandbox.id);
	lifecycle_create_result_clear(&res);
}

/* A plant whose probe could not even run it (a running serve's maintenance
 * pass may fail a doctor's probe for its own reasons, as with the test-only
 * engine socket) is tried once more in a new probe. */
static void plant(struct lifecycle *lc, const char *dir, const char *workspace_id, const char *canary,
                  const char *canary_dir, size_t i, struct ops_git_plant_outcome *o)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		plant_one(lc, dir, workspace_id, canary, canary_dir, i, o);
		if (o->planted || o->stopped)
			return;
	}
}

void ops_git_plant_probe(struct lifecycle *lc, const char *dir, const char *workspace_id, struct ops_probe_report *r)
{
	char canary_dir[] = "/tmp/chat2sbx-doctor-canary-XXXXXX";
	if (!mkdtemp(canary_dir)) {
		ops_probe_report_add(r, "direct_git_links", ATTACK, OPS_CHECK_FAILED, "make a canary directory: %s",
		                     strerror(errno));
		return;
	}
	_cleanup_free_ char *canary = xasprintf("%s/canary", canary_dir);
	_cleanup_free_ char *inside = xasprintf("%s/dir", canary_dir);
	_cleanup_free_ char *word = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (id_new("canary-", &word, &e) < 0) {
		ops_probe_report_add(r, "direct_git_links", ATTACK, OPS_CHECK_FAILED, "%s", e->message);
		ops_remove_tree(canary_dir);
		return;
	}
	FILE *f = fopen(canary, "we");
	if (f) {
		fprintf(f, "%s\n", word);
		fclose(f);
	}
	mkdir(inside, 0755);
	size_t n = sizeof(plants) / sizeof(plants[0]);
	struct ops_git_plant_outcome o[sizeof(plants) / sizeof(plants[0])];
	for (size_t i = 0; i < n; i++)
		plant(lc, dir, workspace_id, canary, inside, i, &o[i]);
	/* Unchanged: the canary's bytes, and nothing created in the directory. */
	char buf[128] = "";
	f = fopen(canary, "re");
	size_t got = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
	if (f)
		fclose(f);
	buf[got] = '\0';
	_cleanup_free_ char *want = xasprintf("%s\n", word);
	int changed = strcmp(buf, want) != 0 || !dir_empty(inside);
	ops_git_plant_judge(o, n, changed, r);
	ops_remove_tree(canary_dir);
}
