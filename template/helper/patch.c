/* patch.c: file.apply_patch, applying a parsed patch (patch_parse.c).
 * A hunk is located by its old lines (context and removed lines) at or after
 * the end of the previous hunk of the same file, trying an exact match, then
 * one ignoring trailing whitespace, then one ignoring leading and trailing
 * whitespace, as the reference apply_patch does; nothing fuzzier. Every file
 * is computed in memory first (a small virtual file system, so several
 * sections on one file see each other's result); only when everything
 * applies are files written, each atomically through files_write_atomic
 * with the hash read as its precondition, deletions last. */
#include "patch_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "edit.h"
#include "proto.h"
#include "files.h"
#include "paths.h"
#include "sha256.h"
#include "utf8.h"
#include "xalloc.h"
#include "xjson.h"

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

/* Give f new content: data (owned from here on, NULL with len 0 for a
 * deleted file) replaces what it held; exists says whether the file is there
 * after the patch. Marks f for the commit. */
static void vfile_replace(struct vfile *f, char *data, size_t len, bool exists)
{
	free(f->data);
	f->data = data;
	f->len = len;
	f->exists = exists;
	f->dirty = true;
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
		fs->cap = fs->cap ? fs->cap * 2 : 8;
		fs->v = xrealloc(fs->v, fs->cap * sizeof *fs->v);
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
	f.abs = xstrdup(abs);
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
		if (!patch_line_eq(L->v[pos + k], pat[k], tier))
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
			if (patch_line_eq(L->v[pos], a, tier))
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
		while (j < m && pos + j < L->n && patch_line_eq(L->v[pos + j], pat[j], 2))
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
	char *first = patch_quote(pat[0]), *detail = NULL;
	if (best_k == m) {
		detail = xasprintf(
		    ": they are at line %zu, but the hunk is marked '*** End of File' and they do not end the file",
		    best_pos + 1);
	} else if (best_k > 0 && best_pos + best_k < L->n) {
		char *want = patch_quote(pat[best_k]), *got = patch_quote(L->v[best_pos + best_k]);
		detail = xasprintf(
		    ": the closest match starts at line %zu, but line %zu is '%s' where the patch expects '%s'",
		    best_pos + 1, best_pos + best_k + 1, got, want);
		free(want);
		free(got);
	} else if (best_k > 0) {
		char *want = patch_quote(pat[best_k]);
		detail =
		    xasprintf(": the closest match starts at line %zu, but the file ends where the patch expects '%s'",
		              best_pos + 1, want);
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
	struct repl *R = xcalloc(op->nhunks ? op->nhunks : 1, sizeof *R);
	int r = -1;
	patch_split(data, len, crlf, &L);
	size_t idx = 0;
	for (size_t k = 0; k < op->nhunks; k++) {
		const struct hunk *h = &op->hunks[k];
		for (size_t a = 0; a < h->anchors.n; a++) {
			long pos = find_anchor(&L, h->anchors.v[a], idx);
			if (pos < 0) {
				char *q = patch_quote(h->anchors.v[a]);
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
		char *out = pass == 1 ? xmalloc(total + 1) : NULL;
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
		} else if (out) { /* pass 1 always has its buffer */
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
	char *out = xmalloc(total + 1);
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
	char *joined = xasprintf("%s/%s", cwd, p);
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
		struct vfile *f = NULL, *t = NULL;
		if (resolve(cwd, op->path, &abs, err) < 0)
			return -1;
		if (vfs_get(fs, abs, op->path, &f, err) < 0 || !f) /* f is set on every success */
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
		json_object *o = xjson_object();
		xjson_append(files, o);
		xjson_add(o, "path", xjson_string(abs));
		xjson_add(o, "action", xjson_string(action_name(op)));
		if (op->kind == OP_ADD) {
			if (f->exists) {
				rpc_fail(
				    err, "CONFLICT",
				    "apply_patch: cannot add '%s': it already exists; update it instead (or delete it "
				    "first)%s",
				    op->path, nothing_changed);
				goto fail;
			}
			size_t len;
			char *data = added_content(op, &len);
			vfile_replace(f, data, len, true);
			f->set_mode = false;
		} else if (op->kind == OP_DELETE) {
			if (!f->exists) {
				rpc_fail(err, "NOT_FOUND", "apply_patch: cannot delete '%s': it does not exist%s",
				         op->path, nothing_changed);
				goto fail;
			}
			vfile_replace(f, NULL, 0, false);
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
				xjson_add(o, "to", xjson_string(to_abs));
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
				vfile_replace(t, data, len, true);
				t->set_mode = f->loaded || f->set_mode;
				t->mode = f->set_mode ? f->mode : f->st.st_mode;
				vfile_replace(f, NULL, 0, false);
			} else {
				vfile_replace(f, data, len, true); /* f->exists: checked above */
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
	char *line = xasprintf(fmt, a, b);
	size_t n = strlen(line);
	*s = xrealloc(*s, *len + n + 1);
	memcpy(*s + *len, line, n + 1);
	*len += n;
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
	if (text_len > PROTO_PATCH_TEXT_MAX) {
		free(cwd);
		return rpc_fail(err, "LIMIT",
		                "the patch is %zu bytes; at most %u bytes per apply_patch call: split it into "
		                "smaller patches%s",
		                text_len, PROTO_PATCH_TEXT_MAX, nothing_changed);
	}
	struct patch P = {0};
	struct vfs fs = {0};
	json_object *files = xjson_array();
	int r = -1;
	if (patch_parse(text, text_len, &P, err) < 0)
		goto out;
	if (P.n > PROTO_PATCH_FILES_MAX) {
		rpc_fail(err, "LIMIT",
		         "the patch touches %zu files; at most %d per apply_patch call: split it into smaller patches "
		         "(or write generated files with bash)%s",
		         P.n, PROTO_PATCH_FILES_MAX, nothing_changed);
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
	json_object *o = xjson_object();
	xjson_add(o, "files", json_object_get(files));
	xjson_add(o, "summary", xjson_string(summary));
	free(summary);
	*ret_result = o;
	r = 0;
out:
	json_object_put(files);
	vfs_free(&fs);
	patch_free(&P);
	free(cwd);
	return r;
}
