/* patch.c: file.apply_patch. Two input formats:
 *   V4A ("*** Begin Patch" … "*** End Patch", OpenAI codex's apply-patch),
 *   unified diffs (diff -u, git diff; /dev/null marks an added or deleted
 *   file, a/ and b/ prefixes are stripped, the line numbers of "@@ -l,n
 *   +l,n @@" are only a hint for where to look first).
 * A hunk is located by its old lines (context and removed lines) at or after
 * the end of the previous hunk of the same file, trying an exact match, then
 * one ignoring trailing whitespace, then one ignoring leading and trailing
 * whitespace, as the reference apply_patch does; nothing fuzzier. Every file
 * is computed in memory first (a small virtual file system, so several
 * sections on one file see each other's result); only when everything
 * applies are files written, each atomically through files_write_atomic
 * with the hash read as its precondition, deletions last. */
#include "patch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edit.h"
#include "files.h"
#include "paths.h"
#include "sha256.h"
#include "utf8.h"

struct line {
	const char *p;
	size_t n;
	size_t ctx; /* a hunk's new line that is context: 1 + its index in the old lines; else 0 */
};

struct lines {
	struct line *v;
	size_t n, cap;
};

struct hunk {
	struct lines anchors; /* V4A "@@ text" lines, searched in order */
	struct lines old, new;
	bool eof;       /* V4A "*** End of File": the old lines end the file */
	long hint;      /* unified: 0-based line of the old start; -1 for V4A */
	bool old_no_nl; /* unified "\ No newline at end of file" after an old line */
	bool new_no_nl; /* … after a new line */
};

enum op_kind { OP_ADD, OP_UPDATE, OP_DELETE };

struct fileop {
	enum op_kind kind;
	char *path, *to, *alt; /* as written; to: move target; alt: unified old name */
	struct hunk *hunks;
	size_t nhunks, cap;
	size_t line; /* of its header in the patch */
};

struct patch {
	struct fileop *ops;
	size_t n, cap;
};

static const char nothing_changed[] = "; nothing was changed";

/* ---- small helpers ---- */

static bool push(struct lines *l, const char *p, size_t n)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		struct line *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return false;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = (struct line){.p = p, .n = n};
	return true;
}

/* A context line: in both the old and the new lines of h. */
static bool push_context(struct lines *old, struct lines *new, const char *p, size_t n)
{
	if (!push(old, p, n) || !push(new, p, n))
		return false;
	new->v[new->n - 1].ctx = old->n;
	return true;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f' || c == '\n';
}

static struct line rstrip(struct line l)
{
	while (l.n > 0 && is_space(l.p[l.n - 1]))
		l.n--;
	return l;
}

static struct line strip(struct line l)
{
	l = rstrip(l);
	while (l.n > 0 && is_space(l.p[0])) {
		l.p++;
		l.n--;
	}
	return l;
}

static bool eq(struct line a, struct line b)
{
	return a.n == b.n && memcmp(a.p, b.p, a.n) == 0;
}

/* Tier 0: exact; 1: trailing whitespace ignored; 2: leading and trailing. */
static bool line_eq(struct line a, struct line b, int tier)
{
	if (tier == 1)
		return eq(rstrip(a), rstrip(b));
	if (tier == 2)
		return eq(strip(a), strip(b));
	return eq(a, b);
}

static bool starts(struct line l, const char *prefix)
{
	size_t n = strlen(prefix);
	return l.n >= n && memcmp(l.p, prefix, n) == 0;
}

static bool is(struct line l, const char *s)
{
	return eq(strip(l), (struct line){.p = s, .n = strlen(s)});
}

static char *dup_line(struct line l)
{
	return strndup(l.p, l.n);
}

/* A line to quote in a message: at most PATCH_QUOTE_MAX bytes, valid UTF-8
 * (malloc'd; "" when memory runs out). */
static char *quote(struct line l)
{
	size_t n = l.n > PATCH_QUOTE_MAX ? PATCH_QUOTE_MAX : l.n, len;
	char *s = utf8_sanitize((const unsigned char *)l.p, n, &len);
	if (s && n < l.n) {
		char *t = NULL;
		if (asprintf(&t, "%s…", s) < 0)
			t = NULL;
		free(s);
		s = t;
	}
	return s ? s : strdup("");
}

/* Split text into lines on "\n", dropping one "\r" before it when crlf (or
 * always, for patch text); a final line without "\n" counts. */
static bool split(const char *p, size_t len, bool crlf, struct lines *out)
{
	const char *end = p + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (crlf && nl && n > 0 && p[n - 1] == '\r')
			n--;
		if (!push(out, p, n))
			return false;
		p = nl ? nl + 1 : end;
	}
	return true;
}

static void hunk_free(struct hunk *h)
{
	free(h->anchors.v);
	free(h->old.v);
	free(h->new.v);
}

static void patch_free(struct patch *P)
{
	for (size_t i = 0; i < P->n; i++) {
		struct fileop *op = &P->ops[i];
		for (size_t k = 0; k < op->nhunks; k++)
			hunk_free(&op->hunks[k]);
		free(op->hunks);
		free(op->path);
		free(op->to);
		free(op->alt);
	}
	free(P->ops);
}

static struct fileop *new_op(struct patch *P, enum op_kind kind, size_t line)
{
	if (P->n == P->cap) {
		size_t cap = P->cap ? P->cap * 2 : 8;
		struct fileop *v = realloc(P->ops, cap * sizeof *v);
		if (!v)
			return NULL;
		P->ops = v;
		P->cap = cap;
	}
	struct fileop *op = &P->ops[P->n++];
	memset(op, 0, sizeof *op);
	op->kind = kind;
	op->line = line;
	return op;
}

static struct hunk *new_hunk(struct fileop *op)
{
	if (op->nhunks == op->cap) {
		size_t cap = op->cap ? op->cap * 2 : 4;
		struct hunk *v = realloc(op->hunks, cap * sizeof *v);
		if (!v)
			return NULL;
		op->hunks = v;
		op->cap = cap;
	}
	struct hunk *h = &op->hunks[op->nhunks++];
	memset(h, 0, sizeof *h);
	h->hint = -1;
	return h;
}

static int oom(struct rpc_error *err)
{
	return rpc_fail(err, "INTERNAL", "apply_patch: out of memory");
}

static int malformed(struct rpc_error *err, size_t lineno, struct line l, const char *why)
{
	char *q = quote(l);
	rpc_fail(err, "INVALID_ARGUMENT", "apply_patch: malformed patch at line %zu ('%s'): %s%s", lineno + 1, q, why,
	         nothing_changed);
	free(q);
	return -1;
}

/* ---- V4A ---- */

/* One hunk of an Update File section starting at L[*i]; lines before last. */
static int v4a_chunk(const struct line *L, size_t *i, size_t last, struct fileop *op, struct rpc_error *err)
{
	struct hunk *h = new_hunk(op);
	if (!h)
		return oom(err);
	size_t start = *i;
	bool header = false;
	while (*i < last && (eq(rstrip(L[*i]), (struct line){.p = "@@", .n = 2}) || starts(L[*i], "@@ "))) {
		struct line a = strip((struct line){.p = L[*i].p + 2, .n = L[*i].n - 2});
		if (a.n > 0 && !push(&h->anchors, a.p, a.n))
			return oom(err);
		header = true;
		(*i)++;
	}
	if (!header && op->nhunks > 1)
		return malformed(err, start, L[start],
		                 "expected a hunk starting with '@@' (optionally followed by an anchor line)");
	size_t count = 0;
	for (; *i < last; (*i)++) {
		struct line l = L[*i];
		if (is(l, "*** End of File")) {
			if (count == 0)
				break;
			h->eof = true;
			(*i)++;
			break;
		}
		bool ok = true;
		if (l.n == 0)
			ok = push_context(&h->old, &h->new, l.p, 0);
		else if (l.p[0] == ' ')
			ok = push_context(&h->old, &h->new, l.p + 1, l.n - 1);
		else if (l.p[0] == '-')
			ok = push(&h->old, l.p + 1, l.n - 1);
		else if (l.p[0] == '+')
			ok = push(&h->new, l.p + 1, l.n - 1);
		else if (count == 0)
			return malformed(
			    err, *i, l, "every line of a hunk starts with ' ' (context), '-' (removed) or '+' (added)");
		else
			break;
		if (!ok)
			return oom(err);
		count++;
	}
	if (count == 0)
		return malformed(err, *i < last ? *i : start, L[*i < last ? *i : start], "the hunk has no lines");
	return 0;
}

static int parse_v4a(const struct line *L, size_t n, struct patch *P, struct rpc_error *err)
{
	size_t first = 0, last = n;
	while (first < n && strip(L[first]).n == 0)
		first++;
	while (last > first && strip(L[last - 1]).n == 0)
		last--;
	if (first == last || !is(L[first], "*** Begin Patch"))
		return rpc_fail(err, "INVALID_ARGUMENT", "apply_patch: the patch must start with '*** Begin Patch'%s",
		                nothing_changed);
	last--;
	if (last == first || !is(L[last], "*** End Patch"))
		return malformed(err, last, L[last], "the last line of the patch must be '*** End Patch'");
	size_t i = first + 1;
	while (i < last) {
		struct line t = strip(L[i]);
		struct fileop *op = NULL;
		if (t.n == 0) {
			i++;
			continue;
		}
		static const char add[] = "*** Add File: ", del[] = "*** Delete File: ", upd[] = "*** Update File: ",
		                  mov[] = "*** Move to: ";
		if (starts(t, add) || starts(t, del) || starts(t, upd)) {
			enum op_kind kind = starts(t, add) ? OP_ADD : starts(t, del) ? OP_DELETE : OP_UPDATE;
			size_t skip = kind == OP_ADD ? strlen(add) : kind == OP_DELETE ? strlen(del) : strlen(upd);
			struct line p = strip((struct line){.p = t.p + skip, .n = t.n - skip});
			if (p.n == 0)
				return malformed(err, i, L[i], "the file path is missing");
			if (!(op = new_op(P, kind, i)) || !(op->path = dup_line(p)))
				return oom(err);
		} else {
			return malformed(err, i, L[i],
			                 "expected '*** Add File: PATH', '*** Update File: PATH', '*** Delete File: "
			                 "PATH' or '*** End Patch'");
		}
		i++;
		if (op->kind == OP_ADD) {
			struct hunk *h = new_hunk(op);
			if (!h)
				return oom(err);
			for (; i < last && L[i].n > 0 && L[i].p[0] == '+'; i++)
				if (!push(&h->new, L[i].p + 1, L[i].n - 1))
					return oom(err);
		} else if (op->kind == OP_UPDATE) {
			if (i < last && starts(strip(L[i]), mov)) {
				struct line p = strip(L[i]);
				p = strip((struct line){.p = p.p + strlen(mov), .n = p.n - strlen(mov)});
				if (p.n == 0)
					return malformed(err, i, L[i], "the path to move to is missing");
				if (!(op->to = dup_line(p)))
					return oom(err);
				i++;
			}
			while (i < last) {
				if (strip(L[i]).n == 0) {
					i++;
					continue;
				}
				if (starts(L[i], "***"))
					break;
				if (v4a_chunk(L, &i, last, op, err) < 0)
					return -1;
			}
			if (op->nhunks == 0 && !op->to)
				return malformed(err, op->line, L[op->line], "the Update File section has no hunks");
		}
	}
	return 0;
}

/* ---- unified diffs ---- */

/* A path from a "---"/"+++" line or a git header: unquoted, without a tab
 * and timestamp, without the a/ or b/ prefix. */
static char *diff_path(struct line l, char prefix)
{
	l = strip(l);
	char *out = malloc(l.n + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	if (l.n >= 2 && l.p[0] == '"') {
		for (size_t i = 1; i < l.n && l.p[i] != '"'; i++) {
			char c = l.p[i];
			if (c == '\\' && i + 1 < l.n) {
				c = l.p[++i];
				if (c >= '0' && c <= '7') {
					int v = 0;
					for (int k = 0; k < 3 && i < l.n && l.p[i] >= '0' && l.p[i] <= '7'; k++, i++)
						v = v * 8 + (l.p[i] - '0');
					i--;
					c = (char)v;
				} else if (c == 't') {
					c = '\t';
				} else if (c == 'n') {
					c = '\n';
				}
			}
			out[o++] = c;
		}
	} else {
		const char *tab = memchr(l.p, '\t', l.n);
		size_t n = tab ? (size_t)(tab - l.p) : l.n;
		while (n > 0 && is_space(l.p[n - 1]))
			n--;
		memcpy(out, l.p, n);
		o = n;
	}
	out[o] = '\0';
	if (prefix && o > 2 && out[0] == prefix && out[1] == '/')
		memmove(out, out + 2, o - 1);
	return out;
}

/* "diff --git a/X b/X": X (only when both names are the same). */
static char *git_header_path(struct line l)
{
	struct line rest = {.p = l.p + 11, .n = l.n - 11};
	rest = strip(rest);
	if (rest.n < 7 || memcmp(rest.p, "a/", 2) != 0)
		return NULL;
	size_t name = (rest.n - 5) / 2;
	if (rest.n != 2 * name + 5 || memcmp(rest.p + 2 + name, " b/", 3) != 0 ||
	    memcmp(rest.p + 2, rest.p + 5 + name, name) != 0)
		return NULL;
	return strndup(rest.p + 2, name);
}

static bool parse_count(const char **s, const char *end, long *ret)
{
	if (*s >= end || **s < '0' || **s > '9')
		return false;
	long v = 0;
	while (*s < end && **s >= '0' && **s <= '9' && v < 100000000)
		v = v * 10 + (*(*s)++ - '0');
	*ret = v;
	return true;
}

/* "@@ -a[,b] +c[,d] @@": a, b, d (b and d default to 1). */
static bool parse_range(struct line l, long *a, long *b, long *d)
{
	const char *s = l.p + 2, *end = l.p + l.n;
	long c;
	*b = *d = 1;
	while (s < end && *s == ' ')
		s++;
	if (s >= end || *s++ != '-' || !parse_count(&s, end, a))
		return false;
	if (s < end && *s == ',' && (s++, !parse_count(&s, end, b)))
		return false;
	while (s < end && *s == ' ')
		s++;
	if (s >= end || *s++ != '+' || !parse_count(&s, end, &c))
		return false;
	if (s < end && *s == ',' && (s++, !parse_count(&s, end, d)))
		return false;
	return true;
}

static bool file_header_at(const struct line *L, size_t n, size_t i)
{
	return i + 1 < n && starts(L[i], "--- ") && starts(L[i + 1], "+++ ");
}

/* Hunks of one file after its "---"/"+++" lines, from L[*i]. Counts from
 * the "@@" line end a hunk; wrong counts are tolerated: a hunk also ends at
 * a line that cannot belong to it, and continues past its counts while
 * lines start with ' ', '-' or '+' (but not at a "-- " mail signature or
 * the next file's header). */
static int unified_hunks(const struct line *L, size_t n, size_t *i, struct fileop *op, struct rpc_error *err)
{
	while (*i < n && starts(L[*i], "@@")) {
		long a, b, d;
		if (!parse_range(L[*i], &a, &b, &d))
			return malformed(err, *i, L[*i], "expected a hunk header '@@ -LINE,COUNT +LINE,COUNT @@'");
		struct hunk *h = new_hunk(op);
		if (!h)
			return oom(err);
		h->hint = b == 0 ? a : a > 0 ? a - 1 : 0;
		long old_left = b, new_left = d;
		char last = 0;
		for ((*i)++; *i < n; (*i)++) {
			struct line l = L[*i];
			bool counted = old_left > 0 || new_left > 0;
			char c = l.n ? l.p[0] : 0;
			if (c == '\\') {
				if (last == '-' || last == ' ')
					h->old_no_nl = true;
				if (last == '+' || last == ' ')
					h->new_no_nl = true;
				continue;
			}
			if (!counted &&
			    (l.n == 0 || (c != ' ' && c != '-' && c != '+') ||
			     eq(l, (struct line){.p = "-- ", .n = 3}) || eq(l, (struct line){.p = "--", .n = 2})))
				break;
			if (c == '-' && file_header_at(L, n, *i))
				break;
			bool ok;
			if (l.n == 0 || c == ' ') {
				size_t skip = l.n ? 1 : 0;
				ok = push_context(&h->old, &h->new, l.p + skip, l.n - skip);
				old_left--;
				new_left--;
				last = ' ';
			} else if (c == '-') {
				ok = push(&h->old, l.p + 1, l.n - 1);
				old_left--;
				last = '-';
			} else if (c == '+') {
				ok = push(&h->new, l.p + 1, l.n - 1);
				new_left--;
				last = '+';
			} else {
				break;
			}
			if (!ok)
				return oom(err);
		}
	}
	return 0;
}

static int parse_unified(const struct line *L, size_t n, struct patch *P, struct rpc_error *err)
{
	/* State of the current "diff --git" header. */
	bool git = false, git_new = false, git_deleted = false;
	char *git_path = NULL, *rename_from = NULL, *rename_to = NULL;
	size_t git_line = 0;
	int r = -1;
#define FLUSH_GIT()                                                                                                    \
	do {                                                                                                           \
		if (git && (git_new || git_deleted || (rename_from && rename_to))) {                                   \
			struct fileop *op = new_op(P,                                                                  \
			                           git_new       ? OP_ADD                                              \
			                           : git_deleted ? OP_DELETE                                           \
			                                         : OP_UPDATE,                                          \
			                           git_line);                                                          \
			if (!op)                                                                                       \
				goto oom;                                                                              \
			if (git_new || git_deleted) {                                                                  \
				if (!git_path) {                                                                       \
					malformed(err, git_line, L[git_line], "cannot tell the file name");            \
					goto out;                                                                      \
				}                                                                                      \
				op->path = git_path;                                                                   \
				git_path = NULL;                                                                       \
				if (git_new && !new_hunk(op))                                                          \
					goto oom;                                                                      \
			} else {                                                                                       \
				op->path = rename_from;                                                                \
				op->to = rename_to;                                                                    \
				rename_from = rename_to = NULL;                                                        \
			}                                                                                              \
		}                                                                                                      \
		git = git_new = git_deleted = false;                                                                   \
		free(git_path);                                                                                        \
		free(rename_from);                                                                                     \
		free(rename_to);                                                                                       \
		git_path = rename_from = rename_to = NULL;                                                             \
	} while (0)
	size_t i = 0;
	while (i < n) {
		struct line l = L[i];
		if (starts(l, "diff --git ")) {
			FLUSH_GIT();
			git = true;
			git_line = i;
			git_path = git_header_path(l);
			i++;
		} else if (git && (starts(l, "new file mode") || starts(l, "deleted file mode"))) {
			git_new = git_new || starts(l, "new file mode");
			git_deleted = git_deleted || starts(l, "deleted file mode");
			i++;
		} else if (git && (starts(l, "rename from ") || starts(l, "rename to "))) {
			bool from = starts(l, "rename from ");
			size_t skip = from ? 12 : 10;
			char *p = diff_path((struct line){.p = l.p + skip, .n = l.n - skip}, 0);
			if (!p)
				goto oom;
			free(from ? rename_from : rename_to);
			*(from ? &rename_from : &rename_to) = p;
			i++;
		} else if (starts(l, "GIT binary patch") || (starts(l, "Binary files ") && l.n > 7)) {
			malformed(err, i, l, "binary patches are not supported; write the file with file.write");
			goto out;
		} else if (git && (starts(l, "copy from ") || starts(l, "copy to "))) {
			malformed(err, i, l, "copies are not supported; add the new file instead");
			goto out;
		} else if (file_header_at(L, n, i)) {
			char *old = diff_path((struct line){.p = l.p + 4, .n = l.n - 4}, 'a');
			char *new = diff_path((struct line){.p = L[i + 1].p + 4, .n = L[i + 1].n - 4}, 'b');
			bool old_null = old && strcmp(old, "/dev/null") == 0,
			     new_null = new &&strcmp(new, "/dev/null") == 0;
			struct fileop *op = NULL;
			if (old && new && !(old_null && new_null))
				op = new_op(P, old_null ? OP_ADD : new_null ? OP_DELETE : OP_UPDATE, i);
			if (!op) {
				free(old);
				free(new);
				if (old_null && new_null) {
					malformed(err, i, l, "both file names are /dev/null");
					goto out;
				}
				goto oom;
			}
			if (old_null) {
				op->path = new;
				free(old);
			} else if (new_null) {
				op->path = old;
				free(new);
			} else if (git && rename_from && rename_to) {
				op->path = rename_from;
				op->to = rename_to;
				rename_from = rename_to = NULL;
				free(old);
				free(new);
			} else if (strcmp(old, new) != 0) {
				op->path = new; /* patched in place: the new name, else the old one */
				op->alt = old;
			} else {
				op->path = new;
				free(old);
			}
			/* This header is consumed by the op. */
			git = git_new = git_deleted = false;
			free(git_path);
			free(rename_from);
			free(rename_to);
			git_path = rename_from = rename_to = NULL;
			i += 2;
			if (unified_hunks(L, n, &i, op, err) < 0)
				goto out;
			if (op->kind != OP_DELETE && op->nhunks == 0) {
				malformed(err, op->line, L[op->line], "the file header is not followed by a '@@' hunk");
				goto out;
			}
		} else if (starts(l, "@@ ")) {
			malformed(err, i, l, "a hunk must follow a '--- OLD' / '+++ NEW' file header");
			goto out;
		} else {
			i++; /* preamble, "index …", mode lines, mail headers */
		}
	}
	FLUSH_GIT();
	if (P->n == 0)
		return rpc_fail(err, "INVALID_ARGUMENT", "apply_patch: the diff changes no file%s", nothing_changed);
	return 0;
oom:
	oom(err);
out:
	free(git_path);
	free(rename_from);
	free(rename_to);
	return r;
#undef FLUSH_GIT
}

/* ---- the files the patch touches, in memory ---- */

struct vfile {
	char *abs;
	bool orig_exists, loaded, binary;
	char orig_sha[65];
	struct stat st;
	char *data; /* current content (owned) when exists and loaded or created */
	size_t len;
	bool exists, dirty;
	bool set_mode; /* a move target: give it mode */
	mode_t mode;
};

struct vfs {
	struct vfile *v;
	size_t n, cap;
	unsigned long long loaded_bytes;
};

static void vfs_free(struct vfs *fs)
{
	for (size_t i = 0; i < fs->n; i++) {
		free(fs->v[i].abs);
		free(fs->v[i].data);
	}
	free(fs->v);
}

/* The file at abs, probed on first use (stat follows symlinks). */
static int vfs_get(struct vfs *fs, const char *abs, const char *shown, struct vfile **ret, struct rpc_error *err)
{
	for (size_t i = 0; i < fs->n; i++)
		if (strcmp(fs->v[i].abs, abs) == 0) {
			*ret = &fs->v[i];
			return 0;
		}
	if (fs->n == fs->cap) {
		size_t cap = fs->cap ? fs->cap * 2 : 8;
		struct vfile *v = realloc(fs->v, cap * sizeof *v);
		if (!v)
			return oom(err);
		fs->v = v;
		fs->cap = cap;
	}
	struct vfile f = {0};
	if (stat(abs, &f.st) == 0) {
		if (!S_ISREG(f.st.st_mode))
			return rpc_fail(err, "INVALID_ARGUMENT", "apply_patch: '%s' is %s, not a regular file%s", shown,
			                S_ISDIR(f.st.st_mode) ? "a directory" : "a device, FIFO or socket",
			                nothing_changed);
		f.orig_exists = f.exists = true;
	} else if (errno != ENOENT) {
		rpc_fail_errno(err, errno, "apply_patch: stat", shown);
		return -1;
	}
	if (!(f.abs = strdup(abs)))
		return oom(err);
	fs->v[fs->n] = f;
	*ret = &fs->v[fs->n++];
	return 0;
}

/* Read an existing file's content (once). */
static int vfs_load(struct vfs *fs, struct vfile *f, const char *shown, struct rpc_error *err)
{
	if (f->loaded || !f->orig_exists)
		return 0;
	struct edit_text t;
	if (edit_read_text(f->abs, shown, "apply_patch", &t, err) < 0)
		return -1;
	fs->loaded_bytes += t.len;
	if (fs->loaded_bytes > PATCH_TOTAL_MAX) {
		free(t.data);
		return rpc_fail(err, "LIMIT",
		                "apply_patch: the files this patch changes hold more than %llu bytes; split it into "
		                "smaller patches%s",
		                PATCH_TOTAL_MAX, nothing_changed);
	}
	f->loaded = true;
	f->binary = t.binary;
	memcpy(f->orig_sha, t.sha256, sizeof f->orig_sha);
	f->st = t.st;
	f->data = t.data;
	f->len = t.len;
	return 0;
}

/* ---- applying hunks ---- */

struct repl {
	size_t start, del;
	const struct line *ins;
	size_t nins;
	bool no_nl;     /* unified "\ No newline at end of file" after its last new line */
	bool old_no_nl; /* … after its last old line */
};

/* Whether the patched file ends with a newline (issue 18). A patch that
 * does not reach the file's end keeps its end as it was. A unified diff's
 * "\ No newline at end of file" is honoured exactly: after the new last
 * line it means none, after only the old one it means the patch adds one.
 * Otherwise lines appended at the end (more new lines than old ones in the
 * last hunk) end with a newline, as does the line left last when lines up
 * to the end were deleted (it had one in the file); a last line replaced
 * one for one keeps the file's end as it was. R holds n replacements in
 * file order. Pure. */
static bool end_newline(const struct lines *L, const struct repl *R, size_t n, bool was)
{
	if (n == 0 || R[n - 1].start + R[n - 1].del != L->n)
		return was;
	const struct repl *last = &R[n - 1];
	if (last->no_nl)
		return false;
	if (last->old_no_nl)
		return true;
	if (last->nins != last->del)
		return last->nins > 0 || last->start > 0 ? true : was;
	return was;
}

static bool match_at(const struct lines *L, size_t pos, const struct line *pat, size_t m, int tier)
{
	for (size_t k = 0; k < m; k++)
		if (!line_eq(L->v[pos + k], pat[k], tier))
			return false;
	return true;
}

/* First position >= start (or, with a hint, the one nearest to it) where
 * pat matches, trying the tiers in order; -1 when none. eof: only at the
 * end. */
static long seek(const struct lines *L, const struct line *pat, size_t m, size_t start, bool eof, long hint)
{
	if (m > L->n)
		return -1;
	size_t lo = start, hi = L->n - m;
	if (eof && lo < hi)
		lo = hi;
	if (lo > hi)
		return -1;
	for (int tier = 0; tier < 3; tier++) {
		long best = -1;
		for (size_t pos = lo; pos <= hi; pos++) {
			if (best >= 0 && (long)pos - hint > hint - best)
				break;
			if (!match_at(L, pos, pat, m, tier))
				continue;
			if (hint < 0)
				return (long)pos;
			if (best < 0 || labs((long)pos - hint) < labs(best - hint))
				best = (long)pos;
		}
		if (best >= 0)
			return best;
	}
	return -1;
}

static long find_anchor(const struct lines *L, struct line a, size_t start)
{
	for (int tier = 0; tier < 3; tier++)
		for (size_t pos = start; pos < L->n; pos++)
			if (line_eq(L->v[pos], a, tier))
				return (long)pos;
	for (size_t pos = start; pos < L->n; pos++) /* a line containing it */
		if (a.n <= L->v[pos].n && memmem(L->v[pos].p, L->v[pos].n, a.p, a.n))
			return (long)pos;
	return -1;
}

static int hunk_fails(const char *shown, size_t k, size_t nh, const struct lines *L, const struct line *pat, size_t m,
                      size_t start, bool eof, struct rpc_error *err)
{
	/* The longest prefix of the old lines found anywhere after start. */
	size_t best_k = 0, best_pos = 0;
	for (size_t pos = start; pos < L->n && best_k < m; pos++) {
		size_t j = 0;
		while (j < m && pos + j < L->n && line_eq(L->v[pos + j], pat[j], 2))
			j++;
		if (j > best_k) {
			best_k = j;
			best_pos = pos;
		}
	}
	char where[64];
	if (start > 0)
		snprintf(where, sizeof where, "after line %zu", start);
	else
		snprintf(where, sizeof where, "searched from line 1");
	char *first = quote(pat[0]), *detail = NULL;
	if (best_k == m) {
		if (asprintf(
		        &detail,
		        ": they are at line %zu, but the hunk is marked '*** End of File' and they do not end the file",
		        best_pos + 1) < 0)
			detail = NULL;
	} else if (best_k > 0 && best_pos + best_k < L->n) {
		char *want = quote(pat[best_k]), *got = quote(L->v[best_pos + best_k]);
		if (asprintf(
		        &detail,
		        ": the closest match starts at line %zu, but line %zu is '%s' where the patch expects '%s'",
		        best_pos + 1, best_pos + best_k + 1, got, want) < 0)
			detail = NULL;
		free(want);
		free(got);
	} else if (best_k > 0) {
		char *want = quote(pat[best_k]);
		if (asprintf(&detail,
		             ": the closest match starts at line %zu, but the file ends where the patch expects '%s'",
		             best_pos + 1, want) < 0)
			detail = NULL;
		free(want);
	}
	(void)eof;
	rpc_fail(
	    err, "CONFLICT",
	    "apply_patch: '%s' hunk %zu of %zu does not apply: could not find the lines starting with '%s' (%s)%s; "
	    "read the file again%s",
	    shown, k + 1, nh, first, where, detail ? detail : "", nothing_changed);
	free(first);
	free(detail);
	return -1;
}

/* New content of a file: op's hunks applied to data (len bytes). */
static int apply_hunks(const struct fileop *op, const char *shown, const char *data, size_t len, char **ret,
                       size_t *ret_len, struct rpc_error *err)
{
	bool crlf = edit_is_crlf(data, len);
	bool final_nl = len == 0 || data[len - 1] == '\n';
	struct lines L = {0};
	struct repl *R = calloc(op->nhunks ? op->nhunks : 1, sizeof *R);
	int r = -1;
	if (!R || !split(data, len, crlf, &L)) {
		oom(err);
		goto out;
	}
	size_t idx = 0;
	for (size_t k = 0; k < op->nhunks; k++) {
		const struct hunk *h = &op->hunks[k];
		for (size_t a = 0; a < h->anchors.n; a++) {
			long pos = find_anchor(&L, h->anchors.v[a], idx);
			if (pos < 0) {
				char *q = quote(h->anchors.v[a]);
				rpc_fail(
				    err, "CONFLICT",
				    "apply_patch: '%s' hunk %zu of %zu does not apply: could not find the @@ line '%s' "
				    "(after line %zu); read the file again%s",
				    shown, k + 1, op->nhunks, q, idx, nothing_changed);
				free(q);
				goto out;
			}
			idx = (size_t)pos + 1;
		}
		if (h->old.n == 0) { /* only added lines */
			size_t at = h->hint >= 0 ? (size_t)h->hint : h->anchors.n ? idx : L.n;
			at = at < idx ? idx : at > L.n ? L.n : at;
			R[k] = (struct repl){at, 0, h->new.v, h->new.n, h->new_no_nl, false};
			idx = at;
			continue;
		}
		size_t m = h->old.n, nn = h->new.n;
		long pos = seek(&L, h->old.v, m, idx, h->eof, h->hint);
		if (pos < 0 && h->old.v[m - 1].n == 0 && m > 1) {
			/* A trailing empty line is often an artefact: retry without it. */
			m--;
			if (nn > 0 && h->new.v[nn - 1].n == 0)
				nn--;
			pos = seek(&L, h->old.v, m, idx, h->eof, h->hint);
		}
		if (pos < 0) {
			hunk_fails(shown, k, op->nhunks, &L, h->old.v, h->old.n, idx, h->eof, err);
			goto out;
		}
		R[k] = (struct repl){(size_t)pos, m, h->new.v, nn, h->new_no_nl, h->old_no_nl};
		idx = (size_t)pos + m;
	}
	final_nl = end_newline(&L, R, op->nhunks, final_nl);
	/* Join: the file's line ending; a final newline as before (or as the
	 * unified diff's "\ No newline at end of file" markers say). */
	const char *eol = crlf ? "\r\n" : "\n";
	size_t eol_n = crlf ? 2 : 1, total = 0, nlines = 0, cur = 0;
	for (int pass = 0; pass < 2; pass++) {
		char *out = NULL;
		if (pass == 1 && !(out = malloc(total + 1))) {
			oom(err);
			goto out;
		}
		size_t o = 0, emitted = 0;
		cur = 0;
#define EMIT(l)                                                                                                        \
	do {                                                                                                           \
		if (pass == 1) {                                                                                       \
			if (emitted > 0) {                                                                             \
				memcpy(out + o, eol, eol_n);                                                           \
				o += eol_n;                                                                            \
			}                                                                                              \
			memcpy(out + o, (l).p, (l).n);                                                                 \
			o += (l).n;                                                                                    \
		} else {                                                                                               \
			total += (l).n + (emitted > 0 ? eol_n : 0);                                                    \
		}                                                                                                      \
		emitted++;                                                                                             \
	} while (0)
		for (size_t k = 0; k < op->nhunks; k++) {
			for (; cur < R[k].start; cur++)
				EMIT(L.v[cur]);
			for (size_t j = 0; j < R[k].nins; j++) {
				/* Context lines keep the file's bytes (they may differ in whitespace). */
				size_t c = R[k].ins[j].ctx;
				EMIT(c > 0 && c <= R[k].del ? L.v[R[k].start + c - 1] : R[k].ins[j]);
			}
			cur = R[k].start + R[k].del;
		}
		for (; cur < L.n; cur++)
			EMIT(L.v[cur]);
#undef EMIT
		nlines = emitted;
		if (pass == 0) {
			if (nlines > 0 && final_nl)
				total += eol_n;
		} else {
			if (nlines > 0 && final_nl) {
				memcpy(out + o, eol, eol_n);
				o += eol_n;
			}
			out[o] = '\0';
			*ret = out;
			*ret_len = o;
		}
	}
	r = 0;
out:
	free(R);
	free(L.v);
	return r;
}

/* Content of an added file: its lines, each ending with "\n" (no final one
 * after a unified "\ No newline at end of file"). */
static char *added_content(const struct fileop *op, size_t *ret_len)
{
	size_t total = 0;
	const struct hunk *h = op->nhunks ? &op->hunks[0] : NULL;
	for (size_t k = 0; k < op->nhunks; k++)
		for (size_t j = 0; j < op->hunks[k].new.n; j++)
			total += op->hunks[k].new.v[j].n + 1;
	char *out = malloc(total + 1);
	if (!out)
		return NULL;
	size_t o = 0;
	for (size_t k = 0; k < op->nhunks; k++) {
		h = &op->hunks[k];
		for (size_t j = 0; j < h->new.n; j++) {
			memcpy(out + o, h->new.v[j].p, h->new.v[j].n);
			o += h->new.v[j].n;
			out[o++] = '\n';
		}
	}
	if (o > 0 && h && h->new_no_nl)
		o--;
	out[o] = '\0';
	*ret_len = o;
	return out;
}

/* The absolute path of p (as written in the patch) against cwd. */
static int resolve(const char *cwd, const char *p, char **ret, struct rpc_error *err)
{
	if (p[0] == '/')
		return paths_resolve(p, strlen(p), "a path in the patch", ret, err);
	char *joined = NULL;
	if (asprintf(&joined, "%s/%s", cwd, p) < 0)
		return oom(err);
	int r = paths_resolve(joined, strlen(joined), "a path in the patch", ret, err);
	free(joined);
	return r;
}

static const char *action_name(const struct fileop *op)
{
	return op->kind == OP_ADD ? "add" : op->kind == OP_DELETE ? "delete" : op->to ? "move" : "update";
}

/* Compute every op in memory. results gets one object per op. */
static int compute(struct patch *P, const char *cwd, struct vfs *fs, json_object *files, struct rpc_error *err)
{
	for (size_t i = 0; i < P->n; i++) {
		struct fileop *op = &P->ops[i];
		char *abs = NULL, *to_abs = NULL;
		struct vfile *f, *t = NULL;
		if (resolve(cwd, op->path, &abs, err) < 0)
			return -1;
		if (vfs_get(fs, abs, op->path, &f, err) < 0)
			goto fail;
		if (op->kind == OP_UPDATE && !f->exists && op->alt) {
			char *alt_abs = NULL;
			struct vfile *g;
			if (resolve(cwd, op->alt, &alt_abs, err) < 0)
				goto fail;
			if (vfs_get(fs, alt_abs, op->alt, &g, err) < 0) {
				free(alt_abs);
				goto fail;
			}
			if (g->exists) {
				free(abs);
				abs = alt_abs;
				f = g;
			} else {
				free(alt_abs);
			}
		}
		json_object *o = json_object_new_object();
		json_object_array_add(files, o);
		json_object_object_add(o, "path", json_object_new_string(abs));
		json_object_object_add(o, "action", json_object_new_string(action_name(op)));
		if (op->kind == OP_ADD) {
			if (f->exists) {
				rpc_fail(
				    err, "CONFLICT",
				    "apply_patch: cannot add '%s': it already exists; update it instead (or delete it "
				    "first)%s",
				    op->path, nothing_changed);
				goto fail;
			}
			free(f->data);
			if (!(f->data = added_content(op, &f->len))) {
				oom(err);
				goto fail;
			}
			f->exists = f->dirty = true;
			f->set_mode = false;
		} else if (op->kind == OP_DELETE) {
			if (!f->exists) {
				rpc_fail(err, "NOT_FOUND", "apply_patch: cannot delete '%s': it does not exist%s",
				         op->path, nothing_changed);
				goto fail;
			}
			free(f->data);
			f->data = NULL;
			f->len = 0;
			f->exists = false;
			f->dirty = true;
		} else {
			if (!f->exists) {
				rpc_fail(err, "NOT_FOUND",
				         "apply_patch: cannot update '%s': it does not exist; check the path (relative "
				         "paths start at %s) or add it as a new file%s",
				         op->path, cwd, nothing_changed);
				goto fail;
			}
			if (vfs_load(fs, f, op->path, err) < 0)
				goto fail;
			if (f->binary) {
				rpc_fail(
				    err, "INVALID_ARGUMENT",
				    "apply_patch: '%s' is a binary file (a NUL byte in its first %d bytes); patches "
				    "change text files only%s",
				    op->path, FILES_BINARY_PROBE, nothing_changed);
				goto fail;
			}
			char *data;
			size_t len;
			if (apply_hunks(op, op->path, f->data ? f->data : "", f->len, &data, &len, err) < 0)
				goto fail;
			if (op->to) {
				if (resolve(cwd, op->to, &to_abs, err) < 0 ||
				    vfs_get(fs, to_abs, op->to, &t, err) < 0) {
					free(data);
					goto fail;
				}
				json_object_object_add(o, "to", json_object_new_string(to_abs));
			}
			if (t && t != f) {
				if (t->exists) {
					free(data);
					rpc_fail(
					    err, "CONFLICT",
					    "apply_patch: cannot move '%s' to '%s': '%s' already exists; delete it in "
					    "the patch first%s",
					    op->path, op->to, op->to, nothing_changed);
					goto fail;
				}
				free(t->data);
				t->data = data;
				t->len = len;
				t->exists = t->dirty = true;
				t->set_mode = f->loaded || f->set_mode;
				t->mode = f->set_mode ? f->mode : f->st.st_mode;
				free(f->data);
				f->data = NULL;
				f->len = 0;
				f->exists = false;
				f->dirty = true;
			} else {
				free(f->data);
				f->data = data;
				f->len = len;
				f->dirty = true;
			}
		}
		free(abs);
		free(to_abs);
		continue;
	fail:
		free(abs);
		free(to_abs);
		return -1;
	}
	return 0;
}

static bool unchanged(const struct vfile *f)
{
	if (!f->loaded || !f->orig_exists || !f->exists || f->set_mode)
		return false;
	char hex[65];
	struct sha256_ctx h;
	sha256_init(&h);
	sha256_update(&h, f->len, (const uint8_t *)(f->data ? f->data : ""));
	sha256_final_hex(&h, hex);
	return strcmp(hex, f->orig_sha) == 0;
}

/* Write phase: new and changed files, then deletions. */
static int commit(struct vfs *fs, struct rpc_error *err)
{
	char done[768];
	size_t done_len = 0, ndone = 0;
	done[0] = '\0';
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < fs->n; i++) {
			struct vfile *f = &fs->v[i];
			if (!f->dirty || (pass == 0) != f->exists || (pass == 1 && !f->orig_exists) || unchanged(f))
				continue;
			struct rpc_error e;
			int r;
			if (pass == 0) {
				bool created; /* a move target gets the mode of the moved file */
				char sha[65];
				r = files_write_atomic(f->abs, f->data ? f->data : "", f->len, true,
				                       f->loaded ? f->orig_sha : NULL, &created, sha, &e);
				if (r == 0 && f->set_mode)
					chmod(f->abs, f->mode & 07777);
			} else {
				r = unlink(f->abs) < 0 && errno != ENOENT ? rpc_fail_errno(&e, errno, "delete", f->abs)
				                                          : 0;
			}
			if (r < 0) {
				if (ndone == 0)
					return rpc_fail(err, e.data_code, "apply_patch: %s%s", e.message,
					                nothing_changed);
				return rpc_fail(
				    err, "INTERNAL",
				    "apply_patch: %s; the patch was applied only in part: already changed: %s; "
				    "read these files again",
				    e.message, done);
			}
			ndone++;
			if (done_len < sizeof done - 1) {
				int w = snprintf(done + done_len, sizeof done - done_len, "%s'%s'",
				                 ndone > 1 ? ", " : "", f->abs);
				done_len += w > 0 ? (size_t)w : 0;
				if (done_len >= sizeof done)
					done_len = sizeof done - 1;
			}
		}
	}
	return 0;
}

static void summary_add(char **s, size_t *len, const char *fmt, const char *a, const char *b)
{
	char *line = NULL;
	if (asprintf(&line, fmt, a, b) < 0)
		return;
	size_t n = strlen(line);
	char *t = realloc(*s, *len + n + 1);
	if (t) {
		memcpy(t + *len, line, n + 1);
		*s = t;
		*len += n;
	}
	free(line);
}

/* The model's preconditions: every file named in expected (an object of path
 * → sha256 of the content it read, paths as in the patch) must still have that
 * content, or nothing is written (the "changed since read" rule of
 * file.write). Runs after compute(), so the files are loaded once. */
static int check_expected(json_object *expected, const char *cwd, struct vfs *fs, struct rpc_error *err)
{
	if (!expected)
		return 0;
	if (!json_object_is_type(expected, json_type_object))
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "expected_sha256 must be an object mapping each path to the sha256 read returned");
	json_object_object_foreach(expected, path, want)
	{
		if (!json_object_is_type(want, json_type_string) || json_object_get_string_len(want) != 64)
			return rpc_fail(err, "INVALID_ARGUMENT",
			                "expected_sha256['%s'] must be the 64-hex-digit sha256 read returned", path);
		char *abs = NULL;
		if (resolve(cwd, path, &abs, err) < 0)
			return -1;
		struct vfile *f = NULL;
		int r = vfs_get(fs, abs, path, &f, err);
		free(abs);
		if (r < 0 || vfs_load(fs, f, path, err) < 0)
			return -1;
		if (!f->orig_exists)
			return rpc_fail(
			    err, "CONFLICT",
			    "apply_patch: '%s' no longer exists but expected_sha256 names it; read it again%s", path,
			    nothing_changed);
		if (strcasecmp(f->orig_sha, json_object_get_string(want)) != 0)
			return rpc_fail(
			    err, "CONFLICT",
			    "apply_patch: '%s' changed since it was read (sha256 is now %s); read it again and "
			    "rebuild the patch%s",
			    path, f->orig_sha, nothing_changed);
	}
	return 0;
}

int patch_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *text, *cwd_in;
	size_t text_len, cwd_len;
	if (rpc_param_string(params, "patch", true, &text, &text_len, err) < 0)
		return -1;
	int has_cwd = rpc_param_string(params, "cwd", false, &cwd_in, &cwd_len, err);
	if (has_cwd < 0)
		return -1;
	char *cwd;
	if (has_cwd ? paths_resolve(cwd_in, cwd_len, "cwd", &cwd, err) < 0
	            : paths_resolve(paths_workspace(), strlen(paths_workspace()), "cwd", &cwd, err) < 0)
		return -1;
	struct stat st;
	if (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		rpc_fail(err, "INVALID_ARGUMENT", "cwd '%s' is not an existing directory", cwd);
		free(cwd);
		return -1;
	}
	if (strlen(text) != text_len) {
		free(cwd);
		return rpc_fail(err, "INVALID_ARGUMENT", "patch contains a NUL character");
	}
	struct lines L = {0};
	struct patch P = {0};
	struct vfs fs = {0};
	json_object *files = json_object_new_array();
	int r = -1;
	if (!split(text, text_len, true, &L)) {
		oom(err);
		goto out;
	}
	size_t first = 0;
	while (first < L.n && strip(L.v[first]).n == 0)
		first++;
	if (first < L.n && is(L.v[first], "*** Begin Patch")) {
		if (parse_v4a(L.v, L.n, &P, err) < 0)
			goto out;
	} else {
		bool unified = false;
		for (size_t i = 0; i < L.n && !unified; i++)
			unified = file_header_at(L.v, L.n, i) || starts(L.v[i], "diff --git ");
		if (!unified) {
			rpc_fail(err, "INVALID_ARGUMENT",
			         "apply_patch: not a patch: expected '*** Begin Patch' … '*** End Patch' (V4A) or a "
			         "unified diff ('--- a/PATH', '+++ b/PATH', '@@ -L,N +L,N @@' hunks)%s",
			         nothing_changed);
			goto out;
		}
		if (parse_unified(L.v, L.n, &P, err) < 0)
			goto out;
	}
	if (P.n == 0) {
		rpc_fail(err, "INVALID_ARGUMENT", "apply_patch: the patch changes no file%s", nothing_changed);
		goto out;
	}
	json_object *expected = NULL;
	json_object_object_get_ex(params, "expected_sha256", &expected);
	if (compute(&P, cwd, &fs, files, err) < 0 || check_expected(expected, cwd, &fs, err) < 0 ||
	    commit(&fs, err) < 0)
		goto out;
	char *summary = NULL;
	size_t slen = 0;
	char head[64];
	snprintf(head, sizeof head, "applied the patch to %zu file%s:", P.n, P.n == 1 ? "" : "s");
	summary_add(&summary, &slen, "%s%s", head, "");
	for (size_t i = 0; i < P.n; i++) {
		const struct fileop *op = &P.ops[i];
		const char *code = op->kind == OP_ADD ? "\nA %s%s" : op->kind == OP_DELETE ? "\nD %s%s" : "\nM %s%s";
		if (op->to)
			summary_add(&summary, &slen, "\nR %s -> %s", op->path, op->to);
		else
			summary_add(&summary, &slen, code, op->path, "");
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "files", json_object_get(files));
	json_object_object_add(o, "summary", json_object_new_string(summary ? summary : ""));
	free(summary);
	*ret_result = o;
	r = 0;
out:
	json_object_put(files);
	vfs_free(&fs);
	patch_free(&P);
	free(L.v);
	free(cwd);
	return r;
}
