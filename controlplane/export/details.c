/* export_details.c: the manifest's per-ref details (new commits, their
 * subjects, the files they touched) from ONE git log over every ref of a
 * save (issue 23: three processes per ref cost 72 s of host git for 5 000
 * branches). The walk's output is parsed here, in place, and each ref's
 * share is found by following parents from its tip inside the walk.
 * Pure; the text came from git over a sandbox's objects, so every subject
 * and path is escaped (policy_text_escape) before it is kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "export.h"

/* --date-order: no parent before all its children, so each ref's share,
 * in the walk's order, reads newest first as its own git log would. */
const char *const export_walk_git_args[] = {
    "log",
    "--stdin",
    "--date-order",
    "--no-decorate",
    "--no-renames",
    "--no-ext-diff",
    "--no-textconv",
    "--raw",
    "-z",
    "--format=%x01%H %P%x1f%s",
    NULL,
};

struct walk_commit {
	const char *oid;     /* NUL-terminated inside the output */
	const char *parents; /* "<hex> <hex>", NUL-terminated */
	const char *subject;
	size_t *parent_idx; /* resolved: parents inside the walk */
	size_t n_parents;
	size_t first_file, n_files; /* into files */
	uint32_t stamp;
};

struct export_walk {
	struct walk_commit *c;
	size_t n, cap;
	const char **files;
	size_t n_files, cap_files;
	size_t *table; /* open addressing: index + 1, 0 = empty */
	size_t table_size;
	int truncated;
	size_t *stack;
};

/* File entries looked at per ref for its distinct names, and the size of
 * the set that keeps them apart (a power of two, twice the most kept). */
#define FILES_SCAN_MAX 20000
#define FILES_SET 1024
_Static_assert(FILES_SET >= 2 * EXPORT_MANIFEST_FILES_MAX, "the set must stay half empty");

static size_t str_hash(const char *s)
{
	size_t h = 5381;
	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static size_t hash_hex(const char *s)
{
	size_t h = 0;
	for (int i = 0; i < 12 && s[i]; i++)
		h = h * 16 + (size_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
	return h;
}

static int is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return n == 40 || n == 64;
}

static size_t find(const struct export_walk *w, const char *oid, size_t len)
{
	if (!w->table_size)
		return (size_t)-1;
	for (size_t i = hash_hex(oid) & (w->table_size - 1);; i = (i + 1) & (w->table_size - 1)) {
		size_t v = w->table[i];
		if (!v)
			return (size_t)-1;
		if (strlen(w->c[v - 1].oid) == len && !memcmp(w->c[v - 1].oid, oid, len))
			return v - 1;
	}
}

static int add_commit(struct export_walk *w, char *tok, struct cp_error **err)
{
	char *us = strchr(tok, 0x1f);
	char *sp = strchr(tok, ' ');
	if (!us || !sp || sp > us || !is_hex(tok + 1, (size_t)(sp - tok - 1)))
		return cp_error_set(err, CP_ERR_INTERNAL, "git log printed a commit line chat2sbx does not understand");
	*sp = '\0';
	*us = '\0';
	if (w->n == w->cap) {
		w->cap = w->cap ? 2 * w->cap : 256;
		w->c = xrealloc(w->c, w->cap * sizeof(*w->c));
	}
	w->c[w->n++] =
	    (struct walk_commit){.oid = tok + 1, .parents = sp + 1, .subject = us + 1, .first_file = w->n_files};
	return 0;
}

int export_walk_parse(char *out, size_t len, size_t max_commits, struct export_walk **ret, struct cp_error **err)
{
	struct export_walk *w = xcalloc(1, sizeof(*w));
	/* Tokens end in NUL: a commit "\x01<oid> <parents>\x1f<subject>",
	 * then per file a raw line ("\n:" first, then ":") and its path. */
	enum { HEADER_OR_RAW, PATH } state = HEADER_OR_RAW;
	size_t pos = 0;
	while (pos < len) {
		char *tok = out + pos;
		size_t l = strnlen(tok, len - pos);
		if (pos + l == len) /* no NUL: the output ended inside a token */
			break;
		pos += l + 1;
		if (state == PATH) {
			if (w->n && w->n <= max_commits) {
				if (w->n_files == w->cap_files) {
					w->cap_files = w->cap_files ? 2 * w->cap_files : 256;
					w->files = xrealloc(w->files, w->cap_files * sizeof(*w->files));
				}
				w->files[w->n_files++] = tok;
				w->c[w->n - 1].n_files++;
			}
			state = HEADER_OR_RAW;
		} else if (tok[0] == ':' || (tok[0] == '\n' && tok[1] == ':')) {
			state = PATH;
		} else if (tok[0] == '\x01') {
			if (w->n == max_commits) {
				w->truncated = 1;
				break;
			}
			if (add_commit(w, tok, err) < 0)
				goto fail;
		} else if (l) {
			cp_error_set(err, CP_ERR_INTERNAL, "git log printed something chat2sbx does not understand");
			goto fail;
		}
	}
	w->table_size = 16;
	while (w->table_size < 2 * w->n)
		w->table_size *= 2;
	w->table = xcalloc(w->table_size, sizeof(*w->table));
	for (size_t i = 0; i < w->n; i++) {
		size_t k = hash_hex(w->c[i].oid) & (w->table_size - 1);
		while (w->table[k])
			k = (k + 1) & (w->table_size - 1);
		w->table[k] = i + 1;
	}
	for (size_t i = 0; i < w->n; i++) {
		struct walk_commit *c = &w->c[i];
		for (const char *p = c->parents; *p;) {
			size_t pl = strcspn(p, " ");
			size_t at = find(w, p, pl);
			if (at != (size_t)-1) {
				c->parent_idx = xrealloc(c->parent_idx, (c->n_parents + 1) * sizeof(*c->parent_idx));
				c->parent_idx[c->n_parents++] = at;
			}
			p += pl + (p[pl] == ' ');
		}
	}
	w->stack = xcalloc(w->n + 1, sizeof(*w->stack));
	*ret = w;
	return 0;
fail:
	export_walk_free(w);
	return -1;
}

size_t export_walk_commits(const struct export_walk *w)
{
	return w->n;
}

int export_walk_truncated(const struct export_walk *w)
{
	return w->truncated;
}

void export_walk_ref_details(struct export_walk *w, struct export_manifest_ref *r, uint32_t stamp)
{
	r->new_commits = 0;
	r->commits = xjson_array();
	r->files = xjson_array();
	size_t tip = find(w, r->ref.oid, strlen(r->ref.oid));
	if (tip == (size_t)-1)
		return; /* reachable from the approved repository: nothing new */
	/* Every commit of the walk reachable from the tip gets the stamp. */
	size_t top = 0;
	w->stack[top++] = tip;
	w->c[tip].stamp = stamp;
	while (top) {
		struct walk_commit *c = &w->c[w->stack[--top]];
		r->new_commits++;
		for (size_t k = 0; k < c->n_parents; k++) {
			struct walk_commit *p = &w->c[c->parent_idx[k]];
			if (p->stamp != stamp) {
				p->stamp = stamp;
				w->stack[top++] = c->parent_idx[k];
			}
		}
	}
	/* In the walk's order (newest first). Files: distinct names (a set
	 * of EXPORT_MANIFEST_FILES_MAX at most), looking at no more than
	 * FILES_SCAN_MAX entries per ref. */
	const char *set[FILES_SET] = {0};
	size_t scanned = 0;
	for (size_t i = 0; i < w->n; i++) {
		const struct walk_commit *c = &w->c[i];
		if (c->stamp != stamp)
			continue;
		char buf[1200];
		if (json_object_array_length(r->commits) < EXPORT_MANIFEST_COMMITS_MAX) {
			struct json_object *o = xjson_object();
			xjson_add(o, "oid", xjson_string(c->oid));
			xjson_add(o, "subject",
			          xjson_string(policy_text_escape(c->subject, strlen(c->subject), buf, sizeof(buf))));
			xjson_append(r->commits, o);
		}
		for (size_t f = 0; f < c->n_files && scanned < FILES_SCAN_MAX &&
		                   json_object_array_length(r->files) < EXPORT_MANIFEST_FILES_MAX;
		     f++, scanned++) {
			const char *name = w->files[c->first_file + f];
			size_t k = str_hash(name) & (FILES_SET - 1);
			while (set[k] && strcmp(set[k], name))
				k = (k + 1) & (FILES_SET - 1);
			if (set[k])
				continue;
			set[k] = name;
			xjson_append(r->files, xjson_string(policy_text_escape(name, strlen(name), buf, sizeof(buf))));
		}
	}
}

void export_walk_free(struct export_walk *w)
{
	if (!w)
		return;
	for (size_t i = 0; i < w->n; i++)
		free(w->c[i].parent_idx);
	free(w->c);
	free(w->files);
	free(w->table);
	free(w->stack);
	free(w);
}
