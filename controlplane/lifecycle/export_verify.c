/* export_verify.c: judging a bundle that came out of a sandbox, on the
 * host, before it is kept. In a scratch bare repository inside the export's
 * own directory (its object store borrowing the approved repository's
 * objects read-only through objects/info/alternates, for a thin bundle):
 * the header and every ref name are checked (export_bundle.c), the
 * prerequisites must be commits the approved repository has, `git bundle
 * verify` must pass, and every object is fetched with object checks on
 * (transfer.fsckObjects: bad trees, .gitmodules attacks, ...). Then the
 * manifest's details are read from the verified objects: commits per ref
 * and their subjects, the files they touched, the snapshot's files. The
 * approved repository itself is never written. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/xjson.h"
#include "../base/xalloc.h"
#include "../base/cleanup.h"
#include "export_internal.h"

#define GIT_TIMEOUT_MS 120000
#define GIT_OUT_MAX (16u * 1024 * 1024)

struct scratch {
	char dir[4200];  /* the bare repository */
	char home[4200]; /* HOME for git: the export directory (nothing in it is read as config) */
};

static int sgit(const struct scratch *s, const char *const *args, const char *in, size_t in_len, char **ret_out,
                size_t *ret_len, struct cp_error **err)
{
	return export_git_run(s->dir, s->home, args, in, in_len, GIT_OUT_MAX, GIT_TIMEOUT_MS, ret_out, ret_len, NULL,
	                      err);
}

static int scratch_init(const char *export_dir, const char *host_objects, struct scratch *s, struct cp_error **err)
{
	snprintf(s->dir, sizeof(s->dir), "%s/.scratch", export_dir);
	snprintf(s->home, sizeof(s->home), "%s", export_dir);
	export_dir_remove(s->dir);
	const char *args[] = {"init", "--bare", "--quiet", s->dir, NULL};
	if (export_git_run(export_dir, s->home, args, NULL, 0, 65536, GIT_TIMEOUT_MS, NULL, NULL, NULL, err) < 0)
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

/* "<oid>\n" then "^<base>\n" for each base commit present: rev-list's stdin. */
static char *revs_input(const char *oid, char (*base)[65], const unsigned char *have, size_t n_base, size_t *ret_len)
{
	char *in = xmalloc((n_base + 1) * 67 + 1);
	if (!in)
		abort(); /* allocation failure is not an error path (STYLE.md) */
	size_t len = (size_t)sprintf(in, "%s\n", oid);
	for (size_t i = 0; i < n_base; i++)
		if (have[i])
			len += (size_t)sprintf(in + len, "^%s\n", base[i]);
	*ret_len = len;
	return in;
}

/* Commit count, the newest commits with subjects and the files touched by
 * the commits of oid not reachable from the base. */
static int ref_details(const struct scratch *s, struct export_manifest_ref *r, char (*base)[65],
                       const unsigned char *have, size_t n_base, struct cp_error **err)
{
	size_t in_len = 0;
	_cleanup_free_ char *in = revs_input(r->ref.oid, base, have, n_base, &in_len);
	_cleanup_free_ char *count = NULL, *log = NULL, *names = NULL;
	size_t log_len = 0, names_len = 0;
	const char *a_count[] = {"rev-list", "--count", "--stdin", NULL};
	const char *a_log[] = {"log", "--no-decorate", "--format=%H%x1f%s", "--max-count=200", "--stdin", NULL};
	const char *a_names[] = {"log", "--format=", "--name-only", "-z", "--no-renames", "--stdin", NULL};
	if (sgit(s, a_count, in, in_len, &count, NULL, err) < 0 ||
	    sgit(s, a_log, in, in_len, &log, &log_len, err) < 0 ||
	    sgit(s, a_names, in, in_len, &names, &names_len, err) < 0)
		return -1;
	r->new_commits = strtoll(count ? count : "0", NULL, 10);
	r->commits = xjson_array();
	for (char *line = log; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t l = nl ? (size_t)(nl - line) : strlen(line);
		char *sep = memchr(line, 0x1f, l);
		if (sep && sep - line == (ptrdiff_t)strlen(r->ref.oid)) {
			struct json_object *c = xjson_object();
			xjson_add(c, "oid", xjson_string_len(line, (int)(sep - line)));
			char buf[1200];
			xjson_add(
			    c, "subject",
			    xjson_string(policy_text_escape(sep + 1, l - (size_t)(sep - line) - 1, buf, sizeof(buf))));
			xjson_append(r->commits, c);
		}
		line = nl ? nl + 1 : NULL;
	}
	r->files = xjson_array();
	/* NUL-separated names, commits apart by empty entries; distinct only. */
	for (size_t pos = 0; pos < names_len && json_object_array_length(r->files) < EXPORT_MANIFEST_FILES_MAX;) {
		size_t l = strnlen(names + pos, names_len - pos);
		if (l > 0) {
			int seen = 0;
			char buf[1200];
			policy_text_escape(names + pos, l, buf, sizeof(buf));
			for (size_t i = 0; i < json_object_array_length(r->files) && !seen; i++)
				seen = !strcmp(json_object_get_string(json_object_array_get_idx(r->files, i)), buf);
			if (!seen)
				xjson_append(r->files, xjson_string(buf));
		}
		pos += l + 1;
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

int export_verify_git(const struct export_verify_in *in, struct export_manifest *m, int *ret_missing_prereqs,
                      struct cp_error **err)
{
	*ret_missing_prereqs = 0;
	struct export_bundle_header h = {0};
	struct scratch s = {0};
	_cleanup_free_ char *count = NULL; /* before any goto */
	int r = -1;
	unsigned char *have_base = NULL, *have_list = NULL;
	char(*base_oids)[65] = NULL;
	char(*list_oids)[65] = NULL;
	if (in->bundle && read_header(in->bundle, &h, err) < 0) {
		cp_error_prefix(err, "the bundle was refused");
		goto out;
	}
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
	if (in->bundle) {
		/* Every object through git's object checks (index-pack --strict:
		 * malformed objects, bad trees, the .gitmodules checks of
		 * CVE-2018-11235 and later), into the scratch repository only. A
		 * plain `git fetch` of a bundle does not check objects before git
		 * 2.46 whatever fetch.fsckObjects says (bundle.c unbundle), so
		 * the pack behind the header goes to index-pack directly. */
		int fd = open(in->bundle, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || lseek(fd, (off_t)h.header_len, SEEK_SET) < 0) {
			cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read '%s'", in->bundle);
			if (fd >= 0)
				close(fd);
			goto out;
		}
		const char *index_pack[] = {"index-pack", "--stdin", "--fix-thin", "--strict", NULL};
		int ir = export_git_run_fd(s.dir, s.home, index_pack, fd, GIT_OUT_MAX, GIT_TIMEOUT_MS, NULL, NULL, err);
		close(fd);
		if (ir < 0) {
			cp_error_prefix(err, "the bundle failed git's object checks");
			goto out;
		}
		/* Its refs, so the objects are reachable for the reads below, and
		 * the bundle as a whole (prerequisites, completeness). */
		size_t ulen = 0;
		_cleanup_free_ char *update = NULL;
		FILE *u = open_memstream(&update, &ulen);
		for (size_t i = 0; i < h.n_refs; i++)
			fprintf(u, "update refs/b/%zu %s\n", i, h.refs[i].oid);
		fclose(u);
		const char *update_ref[] = {"update-ref", "--stdin", NULL};
		const char *verify[] = {"bundle", "verify", "--quiet", in->bundle, NULL};
		if (sgit(&s, update_ref, update, ulen, NULL, NULL, err) < 0 ||
		    sgit(&s, verify, NULL, 0, NULL, NULL, err) < 0) {
			cp_error_prefix(err, "the bundle was refused");
			goto out;
		}
	}
	/* The ref list is what the export holds: the bundle's refs must agree
	 * with it, and a ref outside the bundle must name a commit the
	 * approved repository has. */
	for (size_t i = 0; i < h.n_refs; i++) {
		int found = 0;
		for (size_t j = 0; j < in->n_list && !found; j++)
			found = !strcmp(in->list[j].name, h.refs[i].name) && !strcmp(in->list[j].oid, h.refs[i].oid);
		if (!found) {
			char shown[300];
			cp_error_set(err, CP_ERR_DENIED,
			             "the bundle was refused: its ref \"%s\" is not in the sandbox's own list of refs",
			             policy_text_escape(h.refs[i].name, strlen(h.refs[i].name), shown, sizeof(shown)));
			goto out;
		}
	}
	list_oids = xcalloc(in->n_list + 1, sizeof(*list_oids));
	have_list = xcalloc(in->n_list + 1, 1);
	for (size_t j = 0; j < in->n_list; j++)
		memcpy(list_oids[j], in->list[j].oid, 65);
	if (objects_present(&s, list_oids, in->n_list, have_list, err) < 0)
		goto out;
	base_oids = xcalloc(in->n_base + 1, sizeof(*base_oids));
	have_base = xcalloc(in->n_base + 1, 1);
	for (size_t j = 0; j < in->n_base; j++)
		memcpy(base_oids[j], in->base[j].oid, 65);
	if (objects_present(&s, base_oids, in->n_base, have_base, err) < 0)
		goto out;
	m->refs = xcalloc(in->n_list + 1, sizeof(*m->refs));
	m->n_refs = 0;
	size_t all_len = 0;
	char *all = xmalloc((in->n_list + in->n_base + 1) * 67 + 1);
	all[0] = '\0';
	for (size_t j = 0; j < in->n_list; j++) {
		const struct export_ref *l = &in->list[j];
		struct export_manifest_ref *mr = &m->refs[m->n_refs++];
		mr->ref.name = xstrdup(l->name);
		memcpy(mr->ref.oid, l->oid, 65);
		mr->ref.kind = l->kind;
		for (size_t i = 0; i < h.n_refs && !mr->in_bundle; i++)
			mr->in_bundle = !strcmp(h.refs[i].name, l->name);
		if (!mr->in_bundle && !have_list[j]) {
			char shown[300];
			free(all);
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
		int in_base = 0;
		for (size_t b = 0; b < in->n_base && !in_base; b++)
			in_base = have_base[b] && !strcmp(base_oids[b], l->oid);
		if (l->kind == POLICY_REF_SNAPSHOT) {
			memcpy(m->snapshot_oid, l->oid, 65);
			if (snapshot_details(&s, m, err) < 0) {
				free(all);
				goto out;
			}
		} else if (!in_base && ref_details(&s, mr, base_oids, have_base, in->n_base, err) < 0) {
			free(all);
			goto out;
		}
		if (l->kind != POLICY_REF_SNAPSHOT)
			all_len += (size_t)sprintf(all + all_len, "%s\n", l->oid);
	}
	for (size_t b = 0; b < in->n_base; b++)
		if (have_base[b])
			all_len += (size_t)sprintf(all + all_len, "^%s\n", base_oids[b]);
	const char *a_count[] = {"rev-list", "--count", "--stdin", NULL};
	int cr = all_len ? sgit(&s, a_count, all, all_len, &count, NULL, err) : 0;
	free(all);
	if (cr < 0)
		goto out;
	m->commits = count ? strtoll(count, NULL, 10) : 0;
	m->thin = h.n_prereqs > 0;
	r = 0;
out:
	if (s.dir[0])
		export_dir_remove(s.dir);
	free(have_base);
	free(have_list);
	free(base_oids);
	free(list_oids);
	export_bundle_header_clear(&h);
	return r;
}
