/* export_apply.c: bringing saved work home, decided by the person
 * (`chat2sbx export apply`). A git export is fetched into the approved
 * repository under refs/remotes/chat2sbx/<sandbox_id>/ only: explicit
 * refspecs built from the manifest's refs (each judged again), --no-tags
 * so no tag is followed into refs/tags, object checks on, one atomic ref
 * transaction; git's environment is export_git.c's, so no hook, no
 * fsmonitor and no setting of the person's runs a program. The working
 * tree, the index, local branches, HEAD and the config are never touched.
 * A plain-copy export is extracted into a new directory (export_extract.c).
 * Also here: what a person reads afterwards (export_apply_summary, for the
 * CLI and the page alike), and recording the approved repository's refs at
 * create. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/text.h"
#include "export.h"

#define APPLY_TIMEOUT_MS 300000
#define APPLY_OUT_MAX (16u * 1024 * 1024)

void export_apply_result_clear(struct export_apply_result *r)
{
	if (!r)
		return;
	free(r->target);
	free(r->kind);
	free(r->next_steps);
	for (char **p = r->skipped; p && *p; p++)
		free(*p);
	free(r->skipped);
	for (char **p = r->refs; p && *p; p++)
		free(*p);
	free(r->refs);
	*r = (struct export_apply_result){0};
}

void export_source_record(struct store *store, const char *sandbox_id, const struct workspace_record *w)
{
	const char *args[] = {"for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags", NULL};
	_cleanup_free_ char *objects = NULL, *out = NULL;
	_cleanup_error_ struct cp_error *e = NULL;
	if (export_git_objects_dir(w->path, NULL, &objects, &e) < 0) {
		log_debug("lifecycle", "sandbox %s: no refs recorded: %s", sandbox_id, e->message);
		return;
	}
	if (export_git_run(w->path, NULL, args, NULL, 0, EXPORT_REFLIST_MAX, 30000, &out, NULL, NULL, &e) < 0 ||
	    store_sandbox_set_source_refs(store, sandbox_id, out ? out : "", &e) < 0)
		log_warn("lifecycle", "sandbox %s: record the refs of '%s': %s (its saves will be full bundles)",
		         sandbox_id, w->path, e->message);
}

static void audit_apply(struct store *store, const char *actor, const struct export_record *x, const char *target,
                        const struct cp_error *e, const char *message)
{
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = actor,
	                         .action = "export.apply",
	                         .sandbox_id = x->sandbox_id,
	                         .target = target ? target : x->id,
	                         .status = e ? cp_error_code_name(e->code) : "ok",
	                         .message = e ? e->message : message};
	_cleanup_error_ struct cp_error *ae = NULL;
	if (store_audit_insert(store, &a, &ae) < 0)
		fprintf(stderr, "chat2sbx: warning: %s\n", ae->message);
}

/* "<oid> <refname>\n" of refs/remotes/chat2sbx/<sandbox>/ in repo. */
static int ours(const char *repo, const char *home, const char *sandbox_id, char **ret, struct cp_error **err)
{
	char prefix[200];
	snprintf(prefix, sizeof(prefix), "refs/remotes/chat2sbx/%s/", sandbox_id);
	const char *args[] = {"for-each-ref", "--format=%(objectname) %(refname)", prefix, NULL};
	return export_git_run(repo, home, args, NULL, 0, APPLY_OUT_MAX, 60000, ret, NULL, NULL, err);
}

static char **strv_add(char **v, size_t *n, char *s)
{
	char **g = xrealloc(v, (*n + 2) * sizeof(*g));
	if (!g)
		abort();
	g[(*n)++] = s;
	g[*n] = NULL;
	return g;
}

static int apply_git(const struct export_record *x, const struct export_manifest *m, const char *repo,
                     struct export_apply_result *ret, struct cp_error **err)
{
	_cleanup_free_ char *objects = NULL, *before = NULL, *after = NULL;
	struct cp_error *e = NULL;
	if (export_git_objects_dir(repo, x->path, &objects, &e) < 0) {
		cp_error_set(err, CP_ERR_CONFLICT,
		             "the approved repository '%s' is gone or no longer a git repository (%s); nothing was "
		             "changed. Put it back, or fetch the bundle '%s/bundle' into another repository yourself",
		             repo, e->message, x->path);
		cp_error_free(e);
		return -1;
	}
	if (ours(repo, x->path, x->sandbox_id, &before, err) < 0)
		return -1;
	char bundle[4300];
	snprintf(bundle, sizeof(bundle), "%s/bundle", x->path);
	const char **fetch = xcalloc(m->n_refs + 16, sizeof(*fetch));
	char **specs = xcalloc(m->n_refs + 1, sizeof(*specs));
	size_t nf = 0, ns = 0, n_skipped = 0, n_refs_out = 0;
	_cleanup_free_ char *update = NULL;
	size_t ulen = 0;
	FILE *u = xopen_memstream(&update, &ulen);
	fputs("start\n", u);
	int n_update = 0;
	fetch[nf++] = "fetch";
	fetch[nf++] = "--quiet";
	fetch[nf++] = "--no-tags";
	fetch[nf++] = "--no-write-fetch-head";
	fetch[nf++] = "--no-recurse-submodules";
	fetch[nf++] = "--no-prune";
	fetch[nf++] = "--atomic";
	fetch[nf++] = "--no-auto-gc";
	fetch[nf++] = "--no-auto-maintenance";
	fetch[nf++] = "--";
	fetch[nf++] = bundle;
	size_t first_spec = nf;
	for (size_t i = 0; i < m->n_refs; i++) {
		const struct export_manifest_ref *r = &m->refs[i];
		/* A shared bundle (export_dedup.c) carries the object under the
		 * earlier export's name. */
		const char *src = r->bundle_ref ? r->bundle_ref : r->ref.name;
		if (!r->host_ref) {
			/* Every word from the sandbox quoted: the person pastes this. */
			_cleanup_free_ char *spec =
			    xasprintf("%s:refs/remotes/chat2sbx/%s/branches/%s", src, x->sandbox_id, r->ref.name + 11);
			_cleanup_free_ char *qname = text_shell_quote(r->ref.name + 11, strlen(r->ref.name + 11));
			_cleanup_free_ char *qspec = text_shell_quote(spec, strlen(spec));
			_cleanup_free_ char *qbundle = text_shell_quote(bundle, strlen(bundle));
			char *msg = xasprintf("branch %s was not applied (its name collides with chat2sbx's own under "
			                      "refs/remotes/chat2sbx/%s/); fetch it yourself: git fetch %s %s",
			                      qname, x->sandbox_id, qbundle, qspec);
			ret->skipped = strv_add(ret->skipped, &n_skipped, msg);
			continue;
		}
		char *line = xasprintf("%s %s", r->host_ref, r->ref.oid);
		ret->refs = strv_add(ret->refs, &n_refs_out, line);
		if (r->in_bundle) {
			specs[ns] = xasprintf("+%s:%s", src, r->host_ref);
			fetch[nf++] = specs[ns++];
		} else {
			fprintf(u, "update %s %s\n", r->host_ref, r->ref.oid);
			n_update++;
		}
	}
	fputs("commit\n", u);
	fclose(u);
	fetch[nf] = NULL;
	int r = 0;
	if (nf > first_spec && !strcmp(x->kind, "git")) {
		struct stat st;
		if (stat(bundle, &st) < 0)
			r = cp_error_set(err, CP_ERR_NOT_FOUND, "the bundle '%s' is missing; nothing was changed",
			                 bundle);
		else if (export_bundle_check(bundle, err) < 0) /* before git inflates any of it (issue 23) */
			r = -1;
		else
			r = export_git_run(repo, x->path, fetch, NULL, 0, APPLY_OUT_MAX, APPLY_TIMEOUT_MS, NULL, NULL,
			                   NULL, err);
		if (r < 0)
			cp_error_prefix(err, "fetch export '%s' into '%s'", x->id, repo);
	}
	if (r == 0 && n_update) {
		const char *args[] = {"update-ref", "--stdin", NULL};
		r = export_git_run(repo, x->path, args, update, ulen, APPLY_OUT_MAX, 60000, NULL, NULL, NULL, err);
		if (r < 0)
			cp_error_prefix(err, "set the refs of export '%s' in '%s'", x->id, repo);
	}
	for (size_t i = 0; i < ns; i++)
		free(specs[i]);
	free(specs);
	free(fetch);
	if (r < 0)
		return -1;
	if (ours(repo, x->path, x->sandbox_id, &after, err) < 0)
		return -1;
	/* What moved: each applied "<ref> <oid>" already in before counts as same. */
	for (char **p = ret->refs; p && *p; p++) {
		const char *sp = strchr(*p, ' ');
		char want[2200];
		snprintf(want, sizeof(want), "%s %.*s\n", sp + 1, (int)(sp - *p), *p);
		if (before && strstr(before, want))
			ret->refs_same++;
		else
			ret->refs_updated++;
	}
	return 0;
}

/* The commands a person runs next, for the refs applied. Every word that
 * came from the sandbox is one shell word (text_shell_quote: quoted, and
 * $'\xNN' for what a terminal would not show), so pasting the lines runs
 * git and nothing else (issue 23). */
static char *next_steps_git(const struct export_record *x, const struct export_manifest *m, const char *repo)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = xopen_memstream(&out, &len);
	_cleanup_free_ char *qrepo = text_shell_quote(repo, strlen(repo));
	fprintf(f, "In %s:\n", qrepo);
	fprintf(f, "  git branch -r --list 'chat2sbx/%s/*'        # what arrived\n", x->sandbox_id);
	for (size_t i = 0; i < m->n_refs; i++) {
		const struct export_manifest_ref *r = &m->refs[i];
		if (!r->host_ref || r->new_commits == 0 || r->ref.kind != POLICY_REF_BRANCH)
			continue;
		const char *short_ref = r->host_ref + strlen("refs/remotes/");
		_cleanup_free_ char *range = xasprintf("HEAD..%s", short_ref);
		_cleanup_free_ char *qrange = text_shell_quote(range, strlen(range));
		_cleanup_free_ char *qref = text_shell_quote(short_ref, strlen(short_ref));
		fprintf(f, "  git log --oneline %s   # %lld%s new commit(s)\n", qrange, (long long)r->new_commits,
		        m->commits_partial ? " or more" : "");
		fprintf(f, "  git merge %s\n", qref);
	}
	if (m->snapshot_oid[0])
		fprintf(f,
		        "  git diff HEAD chat2sbx/%s/uncommitted --stat   # the uncommitted and untracked changes\n"
		        "  git cherry-pick --no-commit chat2sbx/%s/uncommitted   # put them in your working tree\n",
		        x->sandbox_id, x->sandbox_id);
	fprintf(f, "  # the refs stay until you drop them: git update-ref -d refs/remotes/chat2sbx/%s/NAME\n",
	        x->sandbox_id);
	fclose(f);
	return out;
}

/* A plain copy into to_dir (export_extract.c); FIFOs, sockets and devices
 * it held go to ret->skipped. */
static int apply_tar(const struct export_record *x, const struct workspace_record *w, const char *to_dir,
                     struct export_apply_result *ret, struct cp_error **err)
{
	char tar[4300];
	snprintf(tar, sizeof(tar), "%s/workspace.tar", x->path);
	struct export_extract_result res = {0};
	if (export_archive_extract(tar, to_dir, &res, err) < 0)
		return -1;
	ret->target = realpath(to_dir, NULL);
	ret->refs_updated = (int)res.entries;
	ret->skipped = TAKE_PTR(res.skipped);
	_cleanup_free_ char *more =
	    res.n_skipped ? xasprintf("%zu FIFO(s), socket(s) or device(s) were not made%s; the archive keeps them: "
	                              "tar -tvf %s\n",
	                              res.n_skipped,
	                              res.n_skipped > res.n_listed ? " (the first ones are listed)" : " (listed)", tar)
	                  : xstrdup("");
	ret->next_steps = xasprintf("The plain copy is in %s (%lld entries); compare it with: diff -r %s %s\n%s",
	                            ret->target ? ret->target : to_dir, (long long)res.entries, w->path, to_dir, more);
	export_extract_result_clear(&res);
	return 0;
}

int export_apply(const struct config *cfg, struct store *store, const char *export_id, const char *to_dir,
                 struct export_apply_result *ret, struct cp_error **err)
{
	return export_apply_as(cfg, store, "cli", export_id, to_dir, ret, err);
}

char *export_apply_summary(const char *export_id, const struct export_apply_result *res)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = xopen_memstream(&out, &len);
	if (res->kind && !strcmp(res->kind, "git")) {
		if (res->refs_updated == 0)
			fprintf(f, "nothing changed: %s already holds export %s (%d ref(s))\n", res->target, export_id,
			        res->refs_same);
		else
			fprintf(f, "applied export %s to %s: %d ref(s) created or moved, %d already there\n", export_id,
			        res->target, res->refs_updated, res->refs_same);
		for (char **p = res->refs; p && *p; p++) { /* "<host ref> <oid>" */
			const char *sp = strrchr(*p, ' ');
			size_t n = sp ? (size_t)(sp - *p) : strlen(*p);
			_cleanup_free_ char *q = text_shell_quote(*p, n);
			fprintf(f, "  %s%s\n", q, sp ? sp : "");
		}
		for (char **p = res->skipped; p && *p; p++)
			fprintf(f, "  skipped: %s\n", *p);
		fprintf(f, "Your working tree, index, branches, HEAD and config were not touched.\n");
	} else {
		for (char **p = res->skipped; p && *p; p++)
			fprintf(f, "skipped: %s\n", *p);
	}
	fclose(f);
	return out;
}

int export_apply_as(const struct config *cfg, struct store *store, const char *actor, const char *export_id,
                    const char *to_dir, struct export_apply_result *ret, struct cp_error **err)
{
	export_git_configure((uint64_t)cfg->save_memory_bytes, (uint64_t)cfg->max_export_bytes);
	*ret = (struct export_apply_result){0};
	struct export_record x = {0};
	struct workspace_record w = {0};
	struct export_manifest m = {0};
	int r = -1;
	if (store_export_get(store, export_id, &x, err) < 0)
		return -1;
	if (store_workspace_get(store, x.workspace_id, &w, err) < 0 || export_manifest_load(x.path, &m, err) < 0)
		goto out;
	if (strcmp(m.export_id, x.id) || strcmp(m.sandbox_id, x.sandbox_id)) {
		cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest in '%s' is not the one of export '%s'", x.path,
		             x.id);
		goto out;
	}
	ret->kind = xstrdup(x.kind);
	if (!strcmp(x.kind, "none")) {
		cp_error_set(err, CP_ERR_CONFLICT,
		             "export '%s' holds nothing: sandbox '%s' had no new commit, branch or change since it was "
		             "made",
		             x.id, x.sandbox_id);
		goto out;
	}
	if (!strcmp(x.kind, "tar")) {
		if (!to_dir) {
			cp_error_set(
			    err, CP_ERR_INVALID_ARGUMENT,
			    "export '%s' is a plain copy (its source '%s' was not a git repository); write it to a "
			    "new directory with: chat2sbx export apply %s --to DIR",
			    x.id, w.host_path ? w.host_path : w.path, x.id);
			goto out;
		}
		r = apply_tar(&x, &w, to_dir, ret, err);
		goto out;
	}
	if (to_dir) {
		cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		             "export '%s' is a git bundle: apply it to the approved repository (without --to), or "
		             "fetch '%s/bundle' into a repository of your choice with git fetch",
		             x.id, x.path);
		goto out;
	}
	if (apply_git(&x, &m, w.path, ret, err) < 0)
		goto out;
	ret->target = xstrdup(w.path);
	ret->next_steps = next_steps_git(&x, &m, w.path);
	r = 0;
out:;
	char msg[200];
	snprintf(msg, sizeof(msg), "%s: %d ref(s) updated, %d already there", ret->kind ? ret->kind : "?",
	         ret->refs_updated, ret->refs_same);
	audit_apply(store, actor, &x, to_dir ? to_dir : w.path, r < 0 ? *err : NULL, msg);
	if (r == 0) {
		_cleanup_error_ struct cp_error *e = NULL;
		if (store_export_set_applied(store, x.id, clock_now_ms(), &e) < 0)
			fprintf(stderr, "chat2sbx: warning: %s\n", e->message);
	}
	export_manifest_clear(&m);
	workspace_record_clear(&w);
	export_record_clear(&x);
	return r;
}
