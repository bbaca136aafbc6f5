/* fuzz_patch_parse.c: libFuzzer harness over the helper's patch parser
 * (template/helper/patch_parse.c, patch_parse), which reads the model's
 * file.apply_patch text: V4A ("*** Begin Patch") or a unified diff. The
 * input is the patch text, bounded by PROTO_PATCH_TEXT_MAX as the helper
 * bounds it. On success every file operation must name a path and every
 * line of every hunk must lie inside the input (the lines point into it);
 * on failure the message must be set. Each line is then quoted as the
 * error messages quote it (patch_quote), which cuts at a UTF-8 boundary. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "patch_internal.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_lines(const struct lines *l, const char *text, size_t len)
{
	for (size_t i = 0; i < l->n; i++) {
		const struct line *x = &l->v[i];
		if (x->n && (x->p < text || x->p + x->n > text + len)) {
			fprintf(stderr, "fuzz_patch_parse: a line points outside the patch text\n");
			abort();
		}
		free(patch_quote(*x));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > PROTO_PATCH_TEXT_MAX)
		return 0;
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char *text = malloc(size ? size : 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	struct patch P = {0};
	struct rpc_error err = {0};
	if (patch_parse(text, size, &P, &err) == 0) {
		for (size_t i = 0; i < P.n; i++) {
			const struct fileop *op = &P.ops[i];
			if (!op->path || !*op->path) {
				fprintf(stderr, "fuzz_patch_parse: a file operation without a path\n");
				abort();
			}
			for (size_t h = 0; h < op->nhunks; h++) {
				check_lines(&op->hunks[h].anchors, text, size);
				check_lines(&op->hunks[h].old, text, size);
				check_lines(&op->hunks[h].new, text, size);
			}
		}
		patch_free(&P);
	} else if (!err.message[0]) {
		fprintf(stderr, "fuzz_patch_parse: failure without a message\n");
		abort();
	}
	free(text);
	return 0;
}
