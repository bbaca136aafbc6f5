/* export_manifest.c: manifest.json, what one export holds: where it came
 * from (sandbox, workspace, host path), when and why, the refs with their
 * commits and the files those touched, the snapshot of uncommitted and
 * untracked changes, sizes. Written by the host from what it verified; text
 * that came from the sandbox (subjects, paths) is stored escaped
 * (policy_text_escape), so no reader ever prints raw control bytes. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/xjson.h"
#include "../base/xalloc.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "export.h"

void export_manifest_clear(struct export_manifest *m)
{
	if (!m)
		return;
	free(m->export_id);
	free(m->sandbox_id);
	free(m->workspace_id);
	free(m->host_path);
	free(m->kind);
	free(m->reason);
	free(m->message);
	free(m->fingerprint);
	for (size_t i = 0; i < m->n_refs; i++) {
		free(m->refs[i].ref.name);
		free(m->refs[i].host_ref);
		free(m->refs[i].bundle_ref);
		json_object_put(m->refs[i].commits);
		json_object_put(m->refs[i].files);
	}
	free(m->refs);
	json_object_put(m->snapshot_files);
	free(m->shares_bundle_of);
	*m = (struct export_manifest){0};
}

static const char *kind_word(enum policy_ref_kind k)
{
	switch (k) {
	case POLICY_REF_BRANCH: return "branch";
	case POLICY_REF_TAG: return "tag";
	case POLICY_REF_SNAPSHOT: return "snapshot";
	case POLICY_REF_HEAD: return "head";
	}
	return "?";
}

static void put_str(struct json_object *o, const char *k, const char *v)
{
	if (v)
		xjson_add(o, k, xjson_string(v));
}

static struct json_object *array_or_empty(struct json_object *a)
{
	return a ? json_object_get(a) : xjson_array();
}

struct json_object *export_manifest_to_json(const struct export_manifest *m)
{
	struct json_object *o = xjson_object();
	xjson_add(o, "version", xjson_int64(EXPORT_MANIFEST_VERSION));
	put_str(o, "export_id", m->export_id);
	put_str(o, "sandbox_id", m->sandbox_id);
	put_str(o, "workspace_id", m->workspace_id);
	put_str(o, "host_path", m->host_path);
	put_str(o, "kind", m->kind);
	put_str(o, "reason", m->reason);
	put_str(o, "message", m->message);
	put_str(o, "fingerprint", m->fingerprint);
	char when[40];
	put_str(o, "created_at", clock_format_rfc3339(m->created_at_ms, when, sizeof(when)));
	xjson_add(o, "created_at_ms", xjson_int64(m->created_at_ms));
	xjson_add(o, "bytes", xjson_int64(m->bytes));
	xjson_add(o, "thin", xjson_bool(m->thin));
	xjson_add(o, "nothing_new", xjson_bool(m->nothing_new));
	xjson_add(o, "commits", xjson_int64(m->commits));
	struct json_object *refs = xjson_array();
	for (size_t i = 0; i < m->n_refs; i++) {
		const struct export_manifest_ref *r = &m->refs[i];
		struct json_object *x = xjson_object();
		put_str(x, "name", r->ref.name);
		put_str(x, "kind", kind_word(r->ref.kind));
		put_str(x, "oid", r->ref.oid);
		put_str(x, "host_ref", r->host_ref);
		xjson_add(x, "in_bundle", xjson_bool(r->in_bundle));
		put_str(x, "bundle_ref", r->bundle_ref);
		xjson_add(x, "new_commits", xjson_int64(r->new_commits));
		xjson_add(x, "commits", array_or_empty(r->commits));
		xjson_add(x, "files", array_or_empty(r->files));
		xjson_append(refs, x);
	}
	xjson_add(o, "refs", refs);
	struct json_object *snap = xjson_object();
	if (m->snapshot_oid[0])
		put_str(snap, "oid", m->snapshot_oid);
	xjson_add(snap, "file_count", xjson_int64(m->snapshot_file_count));
	xjson_add(snap, "files", array_or_empty(m->snapshot_files));
	xjson_add(o, "snapshot", snap);
	if (m->archive_entries)
		xjson_add(o, "archive_entries", xjson_int64(m->archive_entries));
	put_str(o, "shares_bundle_of", m->shares_bundle_of);
	if (m->commits_partial)
		xjson_add(o, "commits_partial", xjson_bool(1));
	return o;
}

static int field_str(struct json_object *o, const char *k, int required, char **ret, struct cp_error **err)
{
	struct json_object *v = NULL;
	if (!json_object_object_get_ex(o, k, &v) || json_object_is_type(v, json_type_null)) {
		if (required)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest has no '%s'", k);
		*ret = NULL;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest's '%s' is not a string", k);
	*ret = xstrdup(json_object_get_string(v));
	return 0;
}

static int64_t field_int(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) ? json_object_get_int64(v) : 0;
}

static int field_bool(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) && json_object_get_boolean(v);
}

static struct json_object *field_array(struct json_object *o, const char *k)
{
	struct json_object *v = NULL;
	return json_object_object_get_ex(o, k, &v) && json_object_is_type(v, json_type_array) ? json_object_get(v)
	                                                                                      : xjson_array();
}

static int oid_field(struct json_object *o, const char *k, int required, char out[65], struct cp_error **err)
{
	char *s = NULL;
	if (field_str(o, k, required, &s, err) < 0)
		return -1;
	out[0] = '\0';
	if (!s)
		return 0;
	size_t n = strlen(s);
	int ok = n == 40 || n == 64;
	for (size_t i = 0; ok && i < n; i++)
		ok = (s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f');
	if (ok)
		memcpy(out, s, n + 1);
	free(s);
	return ok ? 0 : cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest's '%s' is not an object id", k);
}

static int read_ref(struct json_object *x, const char *sandbox_id, struct export_manifest_ref *r, struct cp_error **err)
{
	if (field_str(x, "name", 1, &r->ref.name, err) < 0 || oid_field(x, "oid", 1, r->ref.oid, err) < 0 ||
	    policy_ref_name_check(r->ref.name, strlen(r->ref.name), &r->ref.kind, err) < 0 ||
	    field_str(x, "host_ref", 0, &r->host_ref, err) < 0)
		return -1;
	if (r->host_ref) {
		/* It must be exactly what the mapping gives: a manifest can never
		 * aim a fetch outside refs/remotes/chat2sbx/<sandbox_id>/. */
		char want[2048];
		struct cp_error *e = NULL;
		if (policy_ref_map(r->ref.name, sandbox_id, want, sizeof(want), &e) < 0 || strcmp(want, r->host_ref)) {
			cp_error_free(e);
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "the manifest maps ref '%s' somewhere else than chat2sbx would",
			                    r->ref.name);
		}
	}
	if (field_str(x, "bundle_ref", 0, &r->bundle_ref, err) < 0 ||
	    (r->bundle_ref && policy_ref_name_check(r->bundle_ref, strlen(r->bundle_ref), NULL, err) < 0))
		return cp_error_prefix(err, "the manifest's bundle_ref of '%s'", r->ref.name);
	r->in_bundle = field_bool(x, "in_bundle");
	r->new_commits = field_int(x, "new_commits");
	r->commits = field_array(x, "commits");
	r->files = field_array(x, "files");
	return 0;
}

int export_manifest_from_json(struct json_object *o, struct export_manifest *ret, struct cp_error **err)
{
	struct export_manifest m = {0};
	if (!json_object_is_type(o, json_type_object))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest is not a JSON object");
	if (field_int(o, "version") != EXPORT_MANIFEST_VERSION)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "the manifest has version %lld; this chat2sbx reads version %d",
		                    (long long)field_int(o, "version"), EXPORT_MANIFEST_VERSION);
	if (field_str(o, "export_id", 1, &m.export_id, err) < 0 ||
	    field_str(o, "sandbox_id", 1, &m.sandbox_id, err) < 0 ||
	    field_str(o, "workspace_id", 1, &m.workspace_id, err) < 0 ||
	    field_str(o, "host_path", 0, &m.host_path, err) < 0 || field_str(o, "kind", 1, &m.kind, err) < 0 ||
	    field_str(o, "reason", 1, &m.reason, err) < 0 || field_str(o, "message", 0, &m.message, err) < 0 ||
	    field_str(o, "fingerprint", 0, &m.fingerprint, err) < 0 ||
	    field_str(o, "shares_bundle_of", 0, &m.shares_bundle_of, err) < 0)
		goto fail;
	if (m.shares_bundle_of && !id_valid(m.shares_bundle_of, "exp_")) {
		cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest's shares_bundle_of is not an export id");
		goto fail;
	}
	if (strcmp(m.kind, "git") && strcmp(m.kind, "tar") && strcmp(m.kind, "none")) {
		cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest's kind '%.20s' is not git, tar or none",
		             m.kind);
		goto fail;
	}
	m.created_at_ms = field_int(o, "created_at_ms");
	m.bytes = field_int(o, "bytes");
	m.thin = field_bool(o, "thin");
	m.nothing_new = field_bool(o, "nothing_new");
	m.commits = field_int(o, "commits");
	m.archive_entries = field_int(o, "archive_entries");
	m.commits_partial = field_bool(o, "commits_partial");
	struct json_object *refs = NULL;
	if (json_object_object_get_ex(o, "refs", &refs) && json_object_is_type(refs, json_type_array)) {
		size_t n = json_object_array_length(refs);
		if (n > EXPORT_REFS_MAX) {
			cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest lists more than %d refs",
			             EXPORT_REFS_MAX);
			goto fail;
		}
		m.refs = xcalloc(n ? n : 1, sizeof(*m.refs));
		for (size_t i = 0; i < n; i++) {
			m.n_refs = i + 1;
			if (read_ref(json_object_array_get_idx(refs, i), m.sandbox_id, &m.refs[i], err) < 0)
				goto fail;
		}
	}
	struct json_object *snap = NULL;
	if (json_object_object_get_ex(o, "snapshot", &snap) && json_object_is_type(snap, json_type_object)) {
		if (oid_field(snap, "oid", 0, m.snapshot_oid, err) < 0)
			goto fail;
		m.snapshot_file_count = field_int(snap, "file_count");
		m.snapshot_files = field_array(snap, "files");
	}
	*ret = m;
	return 0;
fail:
	export_manifest_clear(&m);
	return -1;
}

int export_manifest_load(const char *dir, struct export_manifest *ret, struct cp_error **err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/manifest.json", dir);
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cp_error_set_errno(err, errno == ENOENT ? CP_ERR_NOT_FOUND : CP_ERR_UNAVAILABLE, errno,
		                          "read the manifest '%s'", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > 64 * 1024 * 1024) {
		close(fd);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "'%s' is not a manifest file", path);
	}
	char *text = xmalloc((size_t)st.st_size + 1);
	ssize_t n = text ? read(fd, text, (size_t)st.st_size) : -1;
	close(fd);
	if (n != st.st_size) {
		free(text);
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "read the manifest '%s': short read", path);
	}
	text[n] = '\0';
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o = json_tokener_parse_ex(tok, text, (int)n);
	int parsed = json_tokener_get_error(tok) == json_tokener_success;
	json_tokener_free(tok);
	free(text);
	if (!parsed || !o) {
		json_object_put(o);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "'%s' is not valid JSON", path);
	}
	int r = export_manifest_from_json(o, ret, err);
	json_object_put(o);
	if (r < 0)
		cp_error_prefix(err, "read '%s'", path);
	return r;
}

int export_manifest_json(const struct export_record *x, struct json_object **ret, struct cp_error **err)
{
	struct export_manifest m = {0};
	if (export_manifest_load(x->path, &m, err) < 0)
		return -1;
	if (strcmp(m.export_id, x->id) != 0) {
		export_manifest_clear(&m);
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the manifest in '%s' is not the one of export '%s'",
		                    x->path, x->id);
	}
	*ret = export_manifest_to_json(&m);
	export_manifest_clear(&m);
	return 0;
}
