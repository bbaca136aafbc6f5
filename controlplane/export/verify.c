/* export_verify.c: judging a bundle that came out of a sandbox, on the
 * host, before it is kept. First what needs no git: the header and every
 * ref name (export_bundle.c), the bundle's refs against the sandbox's
 * list, the count of new or moved refs, and the pack's declared sizes and
 * delta chains (export_pack_check.c). Then, one of EXPORT_VERIFY_AT_ONCE
 * at a time and every git bounded (export_git.c), in a scratch bare
 * repository inside the export's own directory (its object store
 * borrowing the approved repository's objects read-only through
 * objects/info/alternates, for a thin bundle): the prerequisites must be
 * commits the approved repository has, every object goes through
 * index-pack --strict (bad trees, .gitmodules attacks, ...), `git bundle
 * verify` must pass. Then the manifest's details come from one git log
 * over all refs (export_details.c) and the snapshot's files. The approved
 * repository itself is never written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "export.h"

#define GIT_OUT_MAX (16u * 1024 * 1024)
#define WALK_OUT_MAX (64u * 1024 * 1024)

struct scratch {
	char dir[4200];  /* the bare repository */
	char home[4200]; /* HOME for git: the export directory (nothing in it is read as config) */
	int64_t deadline_ms;
};

/* Runs git in the scratch repository with what is left of the budget. */
static int sgit_max(const struct scratch *s, const char *cwd, const char *const *args, const char *in, size_t in_len,
                    size_t out_max, char **ret_out, size_t *ret_len, struct cp_error **err)
{
	int64_t left = s->deadline_ms - clock_monotonic_ms();
	if (left < 1000)
		return cp_error_set(err, CP_ERR_TIMEOUT,
		                    "the host's checks of the save took longer than their time bound of %d s",
		                    EXPORT_VERIFY_BUDGET_MS / 1000);
	return export_git_run(cwd ? cwd : s->dir, s->home, args, in, in_len, out_max, (long)left, ret_out, ret_len,
	                      NULL, err);
}

static int sgit(const struct scratch *s, const char *const *args, const char *in, size_t in_len, char **ret_out,
                size_t *ret_len, struct cp_error **err)
{
	return sgit_max(s, NULL, args, in, in_len, GIT_OUT_MAX, ret_out, ret_len, err);
}

static int scratch_init(const char *export_dir, const char *host_objects, struct scratch *s, struct cp_error **err)
{
	snprintf(s->dir, sizeof(s->dir), "%s/.scratch", export_dir);
	snprintf(s->home, sizeof(s->home), "%s", export_dir);
	export_dir_remove(s->dir);
	const char *args[] = {"init", "--bare", "--quiet", s->dir, NULL};
	if (sgit_max(s, export_dir, args, NULL, 0, 65536, NULL, NULL, err) < 0)
		return cp_error_prefix(err, "make a scratch repository");
	if (!host_objects)
		return 0;
	char path[4300];
	snprintf(path, sizeof(path), "%s/objects/info/alternates", s->dir);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "write '%s'", path);
	dprintf(fd, "%s\n", host_objects);
	close(fd);
	return 0;
}

/* Which of the oids (n, each "<hex>") the scratch repository has as
 * objects: have[i] = 1/0. One cat-file --batch-check. */
static int objects_present(const struct scratch *s, char (*oids)[65], size_t n, unsigned char *have,
                           struct cp_error **err)
{
	if (n == 0)
		return 0;
	size_t in_len = 0;
	char *in = xmalloc(n * 66 + 1);
	in[0] = '\0';
	for (size_t i = 0; i < n; i++)
		in_len += (size_t)sprintf(in + in_len, "%s\n", oids[i]);
	const char *args[] = {"cat-file", "--batch-check=%(objectname) %(objecttype)", NULL};
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	int r = sgit(s, args, in, in_len, &out, &len, err);
	free(in);
	if (r < 0)
		return -1;
	/* One line per input, in order: "<oid> <type>" or "<oid> missing". */
	char *line = out;
	for (size_t i = 0; i < n && line && *line; i++) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		have[i] = !strstr(line, " missing");
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

/* The snapshot's changes against its parent (HEAD): status and path. */
static int snapshot_details(const struct scratch *s, struct export_manifest *m, struct cp_error **err)
{
	const char *args[] = {"diff-tree",     "-r", "-z", "--no-commit-id", "--name-status", "--no-renames", "--root",
	                      m->snapshot_oid, NULL};
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	if (sgit(s, args, NULL, 0, &out, &len, err) < 0)
		return -1;
	m->snapshot_files = xjson_array();
	for (size_t pos = 0; pos < len;) {
		size_t l1 = strnlen(out + pos, len - pos);
		size_t p2 = pos + l1 + 1;
		if (p2 >= len)
			break;
		size_t l2 = strnlen(out + p2, len - p2);
		m->snapshot_file_count++;
		if (json_object_array_length(m->snapshot_files) < EXPORT_MANIFEST_FILES_MAX) {
			struct json_object *f = xjson_object();
			char buf[1200];
			xjson_add(f, "status", xjson_string(policy_text_escape(out + pos, l1, buf, sizeof(buf))));
			xjson_add(f, "path", xjson_string(policy_text_escape(out + p2, l2, buf, sizeof(buf))));
			xjson_append(m->snapshot_files, f);
		}
		pos = p2 + l2 + 1;
	}
	return 0;
}

/* Reads the bundle's header from its file. */
static int read_header(const char *bundle, struct export_bundle_header *h, struct cp_error **err)
{
	int fd = open(bundle, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "open '%s'", bundle);
	char *buf = xmalloc(EXPORT_HEADER_MAX);
	size_t len = 0;
	while (buf && len < EXPORT_HEADER_MAX) {
		ssize_t n = read(fd, buf + len, EXPORT_HEADER_MAX - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	int r = export_bundle_parse(buf, len, h, err);
	free(buf);
	return r;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp((*(const struct export_ref *const *)a)->name, (*(const struct export_ref *const *)b)->name);
}

/* refs (n) sorted by name, for by_name (caller frees). */
static const struct export_ref **sorted_by_name(const struct export_ref *refs, size_t n)
{
	const struct export_ref **v = xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = &refs[i];
	qsort(v, n, sizeof(*v), name_cmp);
	return v;
}

static const struct export_ref *by_name(const struct export_ref **sorted, size_t n, const struct export_ref *key)
{
	const struct export_ref **hit = n ? bsearch(&key, sorted, n, sizeof(*sorted), name_cmp) : NULL;
	return hit ? *hit : NULL;
}

/* What needs no git: the bundle's refs are in the list, and the list has
 * at most EXPORT_REFS_NEW_MAX refs that are not the approved repository's
 * as they were at create (same name, same commit). */
static int refs_judge(const struct export_verify_in *in, const struct export_bundle_header *h, struct cp_error **err)
{
	_cleanup_free_ const struct export_ref **list = sorted_by_name(in->list, in->n_list);
	for (size_t i = 0; i < h->n_refs; i++) {
		const struct export_ref *l = by_name(list, in->n_list, &h->refs[i]);
		if (!l || strcmp(l->oid, h->refs[i].oid)) {
			char shown[300];
			return cp_error_set(
			    err, CP_ERR_DENIED,
			    "the bundle was refused: its ref \"%s\" is not in the sandbox's own list of refs",
			    policy_text_escape(h->refs[i].name, strlen(h->refs[i].name), shown, sizeof(shown)));
		}
	}
	_cleanup_free_ const struct export_ref **base = sorted_by_name(in->base, in->n_base);
	size_t fresh = 0;
	for (size_t j = 0; j < in->n_list; j++) {
		const struct export_ref *b = by_name(base, in->n_base, &in->list[j]);
		fresh += !b || strcmp(b->oid, in->list[j].oid) != 0;
	}
	if (fresh > EXPORT_REFS_NEW_MAX)
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "the save was refused before the host ran git: the sandbox has %zu branches, tags "
		                    "and other refs that are new or moved since it was made, and one save carries at "
		                    "most %d (the ref bound); delete the ones that are not needed (git branch -D, git "
		                    "tag -d) and save again. Nothing was saved; the sandbox keeps its work",
		                    fresh, EXPORT_REFS_NEW_MAX);
	return 0;
}

/* The pack behind the header, judged by what it declares (pack.h).
 * what: whose consequences the refusal names ("nothing was saved ...",
 * "nothing was changed"). */
static int pack_judge(const char *bundle, const struct export_bundle_header *h, int64_t deadline_ms, const char *what,
                      struct cp_error **err)
{
	_cleanup_close_ int fd = open(bundle, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || lseek(fd, (off_t)h->header_len, SEEK_SET) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read '%s'", bundle);
	const struct export_git_bounds *b = export_git_bounds_in_force();
	struct export_pack_limits lim = export_pack_limits_for(b->memory_bytes, b->max_input_bytes, h->oid_hex);
	lim.deadline_ms = deadline_ms;
	struct export_pack_stats st = {0};
	int64_t t0 = clock_monotonic_ms();
	if (export_pack_check_fd(fd, &lim, &st, err) < 0) {
		if ((*err)->code == CP_ERR_LIMIT)
			cp_error_prefix(
			    err,
			    "the bundle was refused before the host ran git (a hostile pack, a delta bomb, "
			    "looks like this; %s. Bounds: one object a quarter of "
			    "CHAT2SBX_SAVE_MEMORY_BYTES, all objects together four times "
			    "CHAT2SBX_MAX_EXPORT_BYTES, delta chains %d deep; raise those settings if this is "
			    "real work)",
			    what, EXPORT_PACK_DEPTH_MAX);
		else
			cp_error_prefix(err, "the bundle was refused before the host ran git (%s)", what);
		return -1;
	}
	log_debug("lifecycle", "pack check: %u objects (%u deltas, depth %u), %llu bytes declared, in %lld ms",
	          st.objects, st.deltas, st.max_depth, (unsigned long long)st.total,
	          (long long)(clock_monotonic_ms() - t0));
	return 0;
}

static int oid_cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* Fills the details of every ref of the list that is not the approved
 * repository's own: one walk over all of them. */
static int refs_details(const struct scratch *s, struct export_manifest *m, char (*base)[65],
                        const unsigned char *have_base, size_t n_base, const unsigned char *in_base,
                        struct cp_error **err)
{
	size_t in_len = 0;
	_cleanup_free_ char *in = NULL;
	FILE *f = xopen_memstream(&in, &in_len);
	size_t tips = 0;
	for (size_t i = 0; i < m->n_refs; i++)
		if (m->refs[i].ref.kind != POLICY_REF_SNAPSHOT && !in_base[i]) {
			fprintf(f, "%s\n", m->refs[i].ref.oid);
			tips++;
		}
	for (size_t b = 0; b < n_base; b++)
		if (have_base[b])
			fprintf(f, "^%s\n", base[b]);
	fclose(f);
	if (!tips)
		return 0;
	size_t n_args = 0;
	while (export_walk_git_args[n_args])
		n_args++;
	const char **args = xcalloc(n_args + 2, sizeof(*args));
	memcpy(args, export_walk_git_args, n_args * sizeof(*args));
	char max_count[48];
	snprintf(max_count, sizeof(max_count), "--max-count=%d", EXPORT_MANIFEST_WALK_MAX + 1);
	args[n_args] = max_count;
	_cleanup_free_ char *out = NULL;
	size_t len = 0;
	int r = sgit_max(s, NULL, args, in, in_len, WALK_OUT_MAX, &out, &len, err);
	free(args);
	if (r < 0)
		return -1;
	struct export_walk *w = NULL;
	if (export_walk_parse(out, len, EXPORT_MANIFEST_WALK_MAX, &w, err) < 0)
		return -1;
	for (size_t i = 0; i < m->n_refs; i++)
		if (m->refs[i].ref.kind != POLICY_REF_SNAPSHOT && !in_base[i])
			export_walk_ref_details(w, &m->refs[i], (uint32_t)i + 1);
	m->commits_partial = export_walk_truncated(w);
	m->commits = (int64_t)export_walk_commits(w);
	export_walk_free(w);
	if (!m->commits_partial)
		return 0;
	/* Past the walk's bound only the total is exact: one count. */
	const char *count[] = {"rev-list", "--count", "--stdin", NULL};
	_cleanup_free_ char *n = NULL;
	if (sgit(s, count, in, in_len, &n, NULL, err) < 0)
		return -1;
	m->commits = strtoll(n ? n : "0", NULL, 10);
	return 0;
}

static int verify_bundle(const struct export_verify_in *in, const struct export_bundle_header *h,
                         const struct scratch *s, struct cp_error **err)
{
	/* Every object through git's object checks (index-pack --strict:
	 * malformed objects, bad trees, the .gitmodules checks of
	 * CVE-2018-11235 and later), into the scratch repository only. A
	 * plain `git fetch` of a bundle does not check objects before git
	 * 2.46 whatever fetch.fsckObjects says (bundle.c unbundle), so the
	 * pack behind the header goes to index-pack directly. */
	_cleanup_close_ int fd = open(in->bundle, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || lseek(fd, (off_t)h->header_len, SEEK_SET) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read '%s'", in->bundle);
	char max_input[64];
	snprintf(max_input, sizeof(max_input), "--max-input-size=%llu",
	         (unsigned long long)export_git_bounds_in_force()->max_input_bytes);
	const char *index_pack[] = {"index-pack", "--stdin", "--fix-thin", "--strict", "--threads=1", max_input, NULL};
	int64_t left = s->deadline_ms - clock_monotonic_ms();
	if (left < 1000 ||
	    export_git_run_fd(s->dir, s->home, index_pack, fd, GIT_OUT_MAX, (long)left, NULL, NULL, err) < 0) {
		if (left < 1000)
			cp_error_set(err, CP_ERR_TIMEOUT,
			             "the host's checks of the save took longer than their time bound");
		return cp_error_prefix(err, "the bundle failed git's object checks");
	}
	/* Its refs, so the objects are reachable for the reads below, and the
	 * bundle as a whole (prerequisites, completeness). */
	size_t ulen = 0;
	_cleanup_free_ char *update = NULL;
	FILE *u = xopen_memstream(&update, &ulen);
	for (size_t i = 0; i < h->n_refs; i++)
		fprintf(u, "update refs/b/%zu %s\n", i, h->refs[i].oid);
	fclose(u);
	const char *update_ref[] = {"update-ref", "--stdin", NULL};
	const char *verify[] = {"bundle", "verify", "--quiet", in->bundle, NULL};
	if (sgit(s, update_ref, update, ulen, NULL, NULL, err) < 0 || sgit(s, verify, NULL, 0, NULL, NULL, err) < 0)
		return cp_error_prefix(err, "the bundle was refused");
	return 0;
}

/* The manifest's refs from the list: each must be in the bundle or name a
 * commit the approved repository has; then their details. */
static int manifest_refs(const struct export_verify_in *in, const struct export_bundle_header *h,
                         const struct scratch *s, struct export_manifest *m, struct cp_error **err)
{
	int r = -1;
	char(*list_oids)[65] = xcalloc(in->n_list + 1, sizeof(*list_oids));
	char(*base_oids)[65] = xcalloc(in->n_base + 1, sizeof(*base_oids));
	unsigned char *have_list = xcalloc(in->n_list + 1, 1), *have_base = xcalloc(in->n_base + 1, 1);
	unsigned char *in_base = xcalloc(in->n_list + 1, 1);
	char(*present)[65] = NULL;
	for (size_t j = 0; j < in->n_list; j++)
		memcpy(list_oids[j], in->list[j].oid, 65);
	for (size_t j = 0; j < in->n_base; j++)
		memcpy(base_oids[j], in->base[j].oid, 65);
	if (objects_present(s, list_oids, in->n_list, have_list, err) < 0 ||
	    objects_present(s, base_oids, in->n_base, have_base, err) < 0)
		goto out;
	/* The base commits the scratch repository has, sorted for lookups. */
	present = xcalloc(in->n_base + 1, sizeof(*present));
	size_t n_present = 0;
	for (size_t b = 0; b < in->n_base; b++)
		if (have_base[b])
			memcpy(present[n_present++], base_oids[b], 65);
	qsort(present, n_present, sizeof(*present), oid_cmp);
	m->refs = xcalloc(in->n_list + 1, sizeof(*m->refs));
	m->n_refs = 0;
	for (size_t j = 0; j < in->n_list; j++) {
		const struct export_ref *l = &in->list[j];
		struct export_manifest_ref *mr = &m->refs[m->n_refs++];
		mr->ref.name = xstrdup(l->name);
		memcpy(mr->ref.oid, l->oid, 65);
		mr->ref.kind = l->kind;
		for (size_t i = 0; i < h->n_refs && !mr->in_bundle; i++)
			mr->in_bundle = !strcmp(h->refs[i].name, l->name);
		if (!mr->in_bundle && !have_list[j]) {
			char shown[300];
			cp_error_set(
			    err, CP_ERR_DENIED,
			    "ref \"%s\" points at %s, which is neither in the bundle nor in the approved repository",
			    policy_text_escape(l->name, strlen(l->name), shown, sizeof(shown)), l->oid);
			goto out;
		}
		char host[2048];
		struct cp_error *e = NULL;
		if (policy_ref_map(l->name, in->sandbox_id, host, sizeof(host), &e) == 0)
			mr->host_ref = xstrdup(host);
		cp_error_free(e);
		in_base[j] = bsearch(l->oid, present, n_present, sizeof(*present), oid_cmp) != NULL;
		if (l->kind == POLICY_REF_SNAPSHOT) {
			memcpy(m->snapshot_oid, l->oid, 65);
			if (snapshot_details(s, m, err) < 0)
				goto out;
		}
	}
	r = refs_details(s, m, base_oids, have_base, in->n_base, in_base, err);
out:
	free(present);
	free(list_oids);
	free(base_oids);
	free(have_list);
	free(have_base);
	free(in_base);
	return r;
}

int export_bundle_check(const char *bundle, struct cp_error **err)
{
	struct export_bundle_header h = {0};
	int r = read_header(bundle, &h, err);
	if (r == 0)
		r = pack_judge(bundle, &h, clock_monotonic_ms() + EXPORT_VERIFY_BUDGET_MS, "nothing was changed", err);
	else
		cp_error_prefix(err, "the bundle was refused");
	export_bundle_header_clear(&h);
	return r;
}

int export_index_unchecked(int pack_fd, uint64_t memory_bytes, long *ret_peak_rss_kib, struct cp_error **err)
{
	char dir[] = "/tmp/chat2sbx-doctor-pack-XXXXXX";
	if (!mkdtemp(dir))
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "make a scratch directory");
	struct scratch s = {.deadline_ms = clock_monotonic_ms() + EXPORT_VERIFY_BUDGET_MS};
	struct export_git_usage usage;
	export_git_usage_take(&usage);
	int r = scratch_init(dir, NULL, &s, err);
	if (r == 0) {
		const char *args[] = {"index-pack", "--stdin", "--strict", "--threads=1", NULL};
		struct child_limits lim = export_git_limits(60000);
		lim.memory_bytes = memory_bytes;
		r = export_git_run_fd_limited(s.dir, s.home, args, pack_fd, &lim, err);
	}
	export_git_usage_take(&usage);
	*ret_peak_rss_kib = usage.peak_rss_kib;
	export_dir_remove(dir);
	return r;
}

int export_verify_git(const struct export_verify_in *in, struct export_manifest *m, int *ret_missing_prereqs,
                      struct cp_error **err)
{
	*ret_missing_prereqs = 0;
	struct export_bundle_header h = {0};
	struct scratch s = {.deadline_ms = in->deadline_ms};
	int r = -1, turn = 0;
	if (in->bundle && read_header(in->bundle, &h, err) < 0) {
		cp_error_prefix(err, "the bundle was refused");
		goto out;
	}
	if (refs_judge(in, &h, err) < 0)
		goto out;
	/* One of EXPORT_VERIFY_AT_ONCE: the wait is bounded like the work. */
	if (export_verify_turn_take(clock_monotonic_ms() + EXPORT_VERIFY_BUDGET_MS, err) < 0)
		goto out;
	turn = 1;
	if (!s.deadline_ms)
		s.deadline_ms = clock_monotonic_ms() + EXPORT_VERIFY_BUDGET_MS;
	struct export_git_usage usage;
	export_git_usage_take(&usage); /* count this verification's git alone */
	int64_t t0 = clock_monotonic_ms();
	if (in->bundle &&
	    pack_judge(in->bundle, &h, s.deadline_ms, "nothing was saved and the sandbox keeps its work", err) < 0)
		goto out;
	if (scratch_init(in->dir, in->host_objects, &s, err) < 0)
		goto out;
	if (h.n_prereqs) {
		unsigned char *have = xcalloc(h.n_prereqs, 1);
		int pr = objects_present(&s, h.prereqs, h.n_prereqs, have, err);
		size_t missing = 0;
		for (size_t i = 0; pr == 0 && i < h.n_prereqs; i++)
			missing += !have[i];
		free(have);
		if (pr < 0)
			goto out;
		if (missing) {
			*ret_missing_prereqs = 1;
			cp_error_set(err, CP_ERR_CONFLICT,
			             "the bundle builds on %zu commit(s) the approved repository no longer has",
			             missing);
			goto out;
		}
	}
	if (in->bundle && verify_bundle(in, &h, &s, err) < 0)
		goto out;
	if (manifest_refs(in, &h, &s, m, err) < 0)
		goto out;
	m->thin = h.n_prereqs > 0;
	export_git_usage_take(&usage);
	log_info("lifecycle",
	         "verified the save of %s on the host: %d git process(es), peak rss %ld KiB, cpu %ld ms, %lld ms",
	         in->sandbox_id, usage.runs, usage.peak_rss_kib, usage.cpu_ms, (long long)(clock_monotonic_ms() - t0));
	r = 0;
out:
	if (turn) {
		if (r < 0) {
			struct export_git_usage usage;
			export_git_usage_take(&usage);
			log_info("lifecycle",
			         "the save of %s was refused on the host: %d git process(es), peak rss %ld KiB",
			         in->sandbox_id, usage.runs, usage.peak_rss_kib);
		}
		export_verify_turn_release();
	}
	if (s.dir[0])
		export_dir_remove(s.dir);
	export_bundle_header_clear(&h);
	return r;
}
