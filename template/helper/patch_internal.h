/* patch_internal.h: what the two halves of file.apply_patch share:
 * patch_parse.c turns patch text into a struct patch (no file system),
 * patch.c locates the hunks in the files and writes them. Included by
 * patch*.c and the tests only. */
#ifndef CHAT2SBX_HELPER_PATCH_INTERNAL_H
#define CHAT2SBX_HELPER_PATCH_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "patch.h"
#include "rpc.h"

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

/* Parse text[0..len) (borrowed; the result's lines point into it, so it
 * must outlive *P): a V4A patch when its first non-blank line is "*** Begin
 * Patch", else a unified diff. Returns 0 with *P filled (the caller frees
 * it with patch_free), or -1 with err set (INVALID_ARGUMENT naming the line
 * and what was wrong; *P is left empty). Touches no file. */
int patch_parse(const char *text, size_t len, struct patch *P, struct rpc_error *err);

/* Helpers of patch_parse.c the apply side uses too. */
bool patch_line_eq(struct line a, struct line b, int tier);
/* A line to quote in a message: at most PATCH_QUOTE_MAX bytes, valid
 * UTF-8, "…" after a cut; the caller frees it. */
char *patch_quote(struct line l);
/* Append the lines of p[0..len) to *out, split on "\n" (one "\r" before it
 * dropped when crlf); the lines point into p. A final line without "\n"
 * counts. */
void patch_split(const char *p, size_t len, bool crlf, struct lines *out);
void patch_free(struct patch *P);

#endif
