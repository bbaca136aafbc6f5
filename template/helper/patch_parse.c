/* patch_parse.c: the parsers of file.apply_patch (patch_internal.h):
 *   V4A ("*** Begin Patch" … "*** End Patch", OpenAI codex's apply-patch),
 *   unified diffs (diff -u, git diff; /dev/null marks an added or deleted
 *   file, a/ and b/ prefixes are stripped, the line numbers of "@@ -l,n
 *   +l,n @@" are only a hint for where to look first).
 * Text in, a struct patch out; never touches the file system. */
#include "patch_internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "utf8.h"
#include "xalloc.h"

/* ---- small helpers ---- */

static void push(struct lines *l, const char *p, size_t n)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 16;
		l->v = xrealloc(l->v, l->cap * sizeof *l->v);
	}
	l->v[l->n++] = (struct line){.p = p, .n = n};
}

/* A context line: in both the old and the new lines of h. */
static void push_context(struct lines *old, struct lines *new, const char *p, size_t n)
{
	push(old, p, n);
	push(new, p, n);
	new->v[new->n - 1].ctx = old->n;
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
bool patch_line_eq(struct line a, struct line b, int tier)
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

/* A file name from the patch (the caller frees it), or NULL when it is
 * empty or holds a NUL: as a C string it would name another file ("b/x\0y"
 * is "x"), and the patch text may hold NULs (file content). */
static char *name_dup(const char *p, size_t n)
{
	if (n == 0 || memchr(p, '\0', n))
		return NULL;
	return xstrndup(p, n);
}

/* A line to quote in a message: at most PATCH_QUOTE_MAX bytes, valid UTF-8,
 * "…" after a cut (the caller frees it). */
char *patch_quote(struct line l)
{
	size_t n = l.n > PATCH_QUOTE_MAX ? PATCH_QUOTE_MAX : l.n, len;
	char *s = utf8_sanitize((const unsigned char *)l.p, n, &len);
	if (n < l.n) {
		char *t = xasprintf("%s…", s);
		free(s);
		s = t;
	}
	return s;
}

/* Split text into lines on "\n", dropping one "\r" before it when crlf (or
 * always, for patch text); a final line without "\n" counts. */
void patch_split(const char *p, size_t len, bool crlf, struct lines *out)
{
	const char *end = p + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (crlf && nl && n > 0 && p[n - 1] == '\r')
			n--;
		push(out, p, n);
		p = nl ? nl + 1 : end;
	}
}

static void hunk_free(struct hunk *h)
{
	free(h->anchors.v);
	free(h->old.v);
	free(h->new.v);
}

void patch_free(struct patch *P)
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
		P->cap = P->cap ? P->cap * 2 : 8;
		P->ops = xrealloc(P->ops, P->cap * sizeof *P->ops);
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
		op->cap = op->cap ? op->cap * 2 : 4;
		op->hunks = xrealloc(op->hunks, op->cap * sizeof *op->hunks);
	}
	struct hunk *h = &op->hunks[op->nhunks++];
	memset(h, 0, sizeof *h);
	h->hint = -1;
	return h;
}

static int malformed(struct rpc_error *err, size_t lineno, struct line l, const char *why)
{
	char *q = patch_quote(l);
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
	size_t start = *i;
	bool header = false;
	while (*i < last && (eq(rstrip(L[*i]), (struct line){.p = "@@", .n = 2}) || starts(L[*i], "@@ "))) {
		struct line a = strip((struct line){.p = L[*i].p + 2, .n = L[*i].n - 2});
		if (a.n > 0)
			push(&h->anchors, a.p, a.n);
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
		if (l.n == 0)
			push_context(&h->old, &h->new, l.p, 0);
		else if (l.p[0] == ' ')
			push_context(&h->old, &h->new, l.p + 1, l.n - 1);
		else if (l.p[0] == '-')
			push(&h->old, l.p + 1, l.n - 1);
		else if (l.p[0] == '+')
			push(&h->new, l.p + 1, l.n - 1);
		else if (count == 0)
			return malformed(
			    err, *i, l, "every line of a hunk starts with ' ' (context), '-' (removed) or '+' (added)");
		else
			break;
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
			op = new_op(P, kind, i);
			op->path = name_dup(p.p, p.n);
			if (!op->path)
				return malformed(err, i, L[i], "the file path holds a NUL character");
		} else {
			return malformed(err, i, L[i],
			                 "expected '*** Add File: PATH', '*** Update File: PATH', '*** Delete File: "
			                 "PATH' or '*** End Patch'");
		}
		i++;
		if (op->kind == OP_ADD) {
			struct hunk *h = new_hunk(op);
			for (; i < last && L[i].n > 0 && L[i].p[0] == '+'; i++)
				push(&h->new, L[i].p + 1, L[i].n - 1);
		} else if (op->kind == OP_UPDATE) {
			if (i < last && starts(strip(L[i]), mov)) {
				struct line p = strip(L[i]);
				p = strip((struct line){.p = p.p + strlen(mov), .n = p.n - strlen(mov)});
				if (p.n == 0)
					return malformed(err, i, L[i], "the path to move to is missing");
				op->to = name_dup(p.p, p.n);
				if (!op->to)
					return malformed(err, i, L[i], "the path to move to holds a NUL character");
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
 * and timestamp, without the a/ or b/ prefix; NULL when that leaves nothing
 * or a NUL (see name_dup). */
static char *diff_path(struct line l, char prefix)
{
	l = strip(l);
	char *out = xmalloc(l.n + 1);
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
	if (prefix && o > 2 && out[0] == prefix && out[1] == '/') {
		memmove(out, out + 2, o - 1);
		o -= 2;
	}
	char *name = name_dup(out, o);
	free(out);
	return name;
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
	return name_dup(rest.p + 2, name);
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
			if (l.n == 0 || c == ' ') {
				size_t skip = l.n ? 1 : 0;
				push_context(&h->old, &h->new, l.p + skip, l.n - skip);
				old_left--;
				new_left--;
				last = ' ';
			} else if (c == '-') {
				push(&h->old, l.p + 1, l.n - 1);
				old_left--;
				last = '-';
			} else if (c == '+') {
				push(&h->new, l.p + 1, l.n - 1);
				new_left--;
				last = '+';
			} else {
				break;
			}
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
			if (git_new || git_deleted) {                                                                  \
				if (!git_path) {                                                                       \
					malformed(err, git_line, L[git_line], "cannot tell the file name");            \
					goto out;                                                                      \
				}                                                                                      \
				op->path = git_path;                                                                   \
				git_path = NULL;                                                                       \
				if (git_new)                                                                           \
					new_hunk(op);                                                                  \
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
			if (!p) {
				malformed(err, i, l, "cannot tell the file name");
				goto out;
			}
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
			if (!old || !new) {
				free(old);
				free(new);
				malformed(err, i, l, "cannot tell the file name");
				goto out;
			}
			bool old_null = strcmp(old, "/dev/null") == 0, new_null = strcmp(new, "/dev/null") == 0;
			if (old_null && new_null) {
				free(old);
				free(new);
				malformed(err, i, l, "both file names are /dev/null");
				goto out;
			}
			struct fileop *op = new_op(P, old_null ? OP_ADD : new_null ? OP_DELETE : OP_UPDATE, i);
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
out:
	free(git_path);
	free(rename_from);
	free(rename_to);
	return r;
#undef FLUSH_GIT
}

int patch_parse(const char *text, size_t len, struct patch *P, struct rpc_error *err)
{
	struct lines L = {0};
	int r = -1;
	patch_split(text, len, true, &L);
	size_t first = 0;
	while (first < L.n && strip(L.v[first]).n == 0)
		first++;
	if (first < L.n && is(L.v[first], "*** Begin Patch")) {
		if (parse_v4a(L.v, L.n, P, err) < 0)
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
		if (parse_unified(L.v, L.n, P, err) < 0)
			goto out;
	}
	if (P->n == 0) {
		rpc_fail(err, "INVALID_ARGUMENT", "apply_patch: the patch changes no file%s", nothing_changed);
		goto out;
	}
	r = 0;
out:
	free(L.v);
	if (r < 0) {
		patch_free(P);
		*P = (struct patch){0};
	}
	return r;
}
