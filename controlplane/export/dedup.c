/* export_dedup.c: a save that brings no new object keeps no new copy
 * (issue 23 point 4). When every ref the sandbox lists points at an object
 * the previous export of the same sandbox holds (a branch renamed, HEAD
 * moved to another saved branch, a tag added on a saved commit), the bundle
 * is not streamed at all: the new export's directory gets a hard link to
 * the previous export's bundle file, and its manifest maps each ref to the
 * name the shared file's header gives that object. The decision is pure
 * (export_dedup_plan) and made from the shared file's own header, read
 * again; the details of each ref (commits, subjects, files) are the earlier
 * manifest's for the same object. Never fails: anything doubtful keeps the
 * ordinary save. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "export.h"

/* The earlier ref for oid: not the snapshot when want is not (its details
 * are the snapshot's, not a branch's), in_bundle ones first. */
static const struct export_manifest_ref *prev_ref_of(const struct export_manifest *prev, const char *oid,
                                                     enum policy_ref_kind want)
{
	const struct export_manifest_ref *best = NULL;
	for (size_t i = 0; i < prev->n_refs; i++) {
		const struct export_manifest_ref *p = &prev->refs[i];
		if (strcmp(p->ref.oid, oid) || ((p->ref.kind == POLICY_REF_SNAPSHOT) != (want == POLICY_REF_SNAPSHOT)))
			continue;
		if (!best || (p->in_bundle && !best->in_bundle))
			best = p;
	}
	return best;
}

/* The name the shared file's header gives oid, the earlier ref's own name
 * (or bundle name) first. NULL when the header does not carry it. */
static const char *header_name_of(const struct export_bundle_header *h, const struct export_manifest_ref *p)
{
	const char *pref = p->bundle_ref ? p->bundle_ref : p->ref.name;
	const char *any = NULL;
	for (size_t i = 0; i < h->n_refs; i++) {
		if (strcmp(h->refs[i].oid, p->ref.oid))
			continue;
		if (!strcmp(h->refs[i].name, pref))
			return h->refs[i].name;
		if (!any)
			any = h->refs[i].name;
	}
	return any;
}

/* Distinct commit oids over the refs' commit lists, or -1 when a list was
 * cut (EXPORT_MANIFEST_COMMITS_MAX) and the union is not known. */
static int64_t commits_union(const struct export_manifest *m)
{
	size_t cap = 0, n = 0;
	const char **seen = NULL;
	int64_t r = 0;
	for (size_t i = 0; i < m->n_refs && r >= 0; i++) {
		const struct export_manifest_ref *x = &m->refs[i];
		if (x->ref.kind == POLICY_REF_SNAPSHOT)
			continue;
		size_t len = x->commits ? json_object_array_length(x->commits) : 0;
		if ((int64_t)len != x->new_commits) {
			r = -1;
			break;
		}
		for (size_t j = 0; j < len; j++) {
			struct json_object *c = json_object_array_get_idx(x->commits, j), *v = NULL;
			const char *oid = json_object_object_get_ex(c, "oid", &v) ? json_object_get_string(v) : NULL;
			if (!oid) {
				r = -1;
				break;
			}
			int dup = 0;
			for (size_t k = 0; k < n && !dup; k++)
				dup = !strcmp(seen[k], oid);
			if (dup)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				seen = xrealloc(seen, cap * sizeof(*seen));
			}
			seen[n++] = oid;
		}
	}
	free(seen);
	return r < 0 ? -1 : (int64_t)n;
}

/* Whether the non-snapshot oids of list and of prev are the same set. */
static int same_tips(const struct export_manifest *prev, const struct export_ref *list, size_t n_list)
{
	for (size_t i = 0; i < n_list; i++)
		if (list[i].kind != POLICY_REF_SNAPSHOT && !prev_ref_of(prev, list[i].oid, list[i].kind))
			return 0;
	for (size_t i = 0; i < prev->n_refs; i++) {
		if (prev->refs[i].ref.kind == POLICY_REF_SNAPSHOT)
			continue;
		int found = 0;
		for (size_t j = 0; j < n_list && !found; j++)
			found = list[j].kind != POLICY_REF_SNAPSHOT && !strcmp(list[j].oid, prev->refs[i].ref.oid);
		if (!found)
			return 0;
	}
	return 1;
}

int export_dedup_plan(const struct export_manifest *prev, const struct export_bundle_header *shared,
                      const struct export_ref *list, size_t n_list, const char *sandbox_id, struct export_manifest *ret,
                      const char **ret_why)
{
	*ret_why = NULL;
	if (!prev->kind || strcmp(prev->kind, "git")) {
		*ret_why = "the previous export is not a git bundle";
		return 0;
	}
	if (n_list == 0) {
		*ret_why = "the sandbox lists no ref";
		return 0;
	}
	struct export_manifest m = {0};
	m.refs = xcalloc(n_list, sizeof(*m.refs));
	for (size_t i = 0; i < n_list; i++) {
		const struct export_ref *l = &list[i];
		const struct export_manifest_ref *p = prev_ref_of(prev, l->oid, l->kind);
		if (!p || (l->kind == POLICY_REF_SNAPSHOT && strcmp(prev->snapshot_oid, l->oid))) {
			*ret_why = "a ref points at an object the previous export does not hold";
			goto no;
		}
		struct export_manifest_ref *mr = &m.refs[m.n_refs++];
		mr->ref.name = xstrdup(l->name);
		memcpy(mr->ref.oid, l->oid, sizeof(mr->ref.oid));
		mr->ref.kind = l->kind;
		if (p->in_bundle) {
			const char *hn = header_name_of(shared, p);
			if (!hn) {
				*ret_why = "the shared bundle's header does not carry a ref's object";
				goto no;
			}
			mr->in_bundle = 1;
			if (strcmp(hn, l->name))
				mr->bundle_ref = xstrdup(hn);
		}
		char host[2048];
		struct cp_error *e = NULL;
		if (policy_ref_map(l->name, sandbox_id, host, sizeof(host), &e) == 0)
			mr->host_ref = xstrdup(host);
		cp_error_free(e);
		mr->new_commits = p->new_commits;
		mr->commits = p->commits ? json_object_get(p->commits) : NULL;
		mr->files = p->files ? json_object_get(p->files) : NULL;
		if (l->kind == POLICY_REF_SNAPSHOT) {
			memcpy(m.snapshot_oid, prev->snapshot_oid, sizeof(m.snapshot_oid));
			m.snapshot_file_count = prev->snapshot_file_count;
			m.snapshot_files = prev->snapshot_files ? json_object_get(prev->snapshot_files) : NULL;
		}
	}
	m.commits = commits_union(&m);
	if (m.commits < 0 && same_tips(prev, list, n_list))
		m.commits = prev->commits;
	if (m.commits < 0) {
		*ret_why = "the number of new commits is not known without the objects";
		goto no;
	}
	m.kind = xstrdup("git");
	m.thin = prev->thin;
	m.bytes = prev->bytes;
	m.shares_bundle_of = xstrdup(prev->shares_bundle_of ? prev->shares_bundle_of : prev->export_id);
	*ret = m;
	return 1;
no:
	export_manifest_clear(&m);
	return 0;
}

int export_bundle_header_read(int fd, struct export_bundle_header *ret, struct cp_error **err)
{
	char *buf = xmalloc(EXPORT_HEADER_MAX);
	size_t len = 0;
	while (len < EXPORT_HEADER_MAX) {
		ssize_t n = pread(fd, buf + len, EXPORT_HEADER_MAX - len, (off_t)len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	int r = export_bundle_parse(buf, len, ret, err);
	free(buf);
	return r;
}

int export_dedup_try(const struct export_record *last, int host_reachable, const struct export_ref *list, size_t n_list,
                     const char *sandbox_id, int dirfd, struct export_manifest *m)
{
	if (!last || !last->id || !last->kind || strcmp(last->kind, "git") || !last->path)
		return 0;
	struct export_manifest prev = {0};
	struct export_bundle_header h = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	const char *why = NULL;
	int r = 0;
	char path[4300];
	snprintf(path, sizeof(path), "%s/bundle", last->path);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (export_manifest_load(last->path, &prev, &e) < 0 || strcmp(prev.export_id, last->id))
		why = e ? e->message : "its manifest is another export's";
	else if (prev.thin && !host_reachable)
		why = "its bundle builds on the approved repository, which is not reachable now";
	else if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	         st.st_size != prev.bytes)
		why = "its bundle file is missing or not the one it saved";
	else if (export_bundle_header_read(fd, &h, &e) < 0)
		why = e->message;
	else if (export_dedup_plan(&prev, &h, list, n_list, sandbox_id, m, &why) == 1) {
		/* The very file whose header was read: its descriptor, not its
		 * name, is linked (a link through /proc needs no privilege). */
		char self[64];
		snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
		if (linkat(AT_FDCWD, self, dirfd, "bundle", AT_SYMLINK_FOLLOW) == 0) {
			r = 1;
		} else {
			why = strerror(errno);
			export_manifest_clear(m);
		}
	}
	if (r)
		log_info("lifecycle",
		         "save of %s: every ref points at an object export %s holds; its bundle is shared "
		         "(a hard link), not copied",
		         sandbox_id, m->shares_bundle_of);
	else
		log_debug("lifecycle", "save of %s: the bundle of export %s is not shared: %s", sandbox_id, last->id,
		          why ? why : "?");
	export_bundle_header_clear(&h);
	export_manifest_clear(&prev);
	return r;
}
