/* fuzz_export_pack.c: libFuzzer harness over the pack check a save runs
 * before git index-pack (export/pack_check.c). Byte 0 picks the
 * reader's chunk size (1-256 bytes, 0 = as much as asked), byte 1 the
 * hash (odd: SHA-256) and, in its high bits, a smaller per-object bound;
 * the rest is the pack. Read whole and read in chunks, the check must
 * agree on the verdict, the error code and every figure; a pass must have
 * met every bound it was given. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run(const uint8_t *data, size_t size, size_t step, const struct export_pack_limits *l,
               struct export_pack_stats *st)
{
	struct cp_error *err = NULL;
	*st = (struct export_pack_stats){0};
	int r = export_pack_check_buffer(data, size, step, l, st, &err);
	if (r == 0)
		return 0;
	if (!err || !err->message || err->code == CP_ERR_INTERNAL) {
		fprintf(stderr, "fuzz_export_pack: a refusal without a proper error\n");
		abort();
	}
	int code = err->code;
	cp_error_free(err);
	return code;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t step = data[0];
	struct export_pack_limits l = export_pack_limits_for(1ull << 30, 1ull << 30, data[1] & 1 ? 64 : 40);
	if (data[1] & 0x80)
		l.object_max = 4096;
	l.total_max = 1ull << 24; /* keep the harness fast: 16 MiB of inflation at most */
	data += 2;
	size -= 2;
	l.pack_bytes = (data[-1] & 0x40) ? 0 : size;
	/* An exact-size copy, so a read past the input is an ASan report. */
	uint8_t *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	if (size)
		memcpy(copy, data, size);
	struct export_pack_stats a, b;
	int ra = run(copy, size, 0, &l, &a);
	int rb = run(copy, size, step, &l, &b);
	if (ra != rb || (ra == 0 && memcmp(&a, &b, sizeof(a)) != 0)) {
		fprintf(stderr, "fuzz_export_pack: whole and chunked reads disagree (%d/%d)\n", ra, rb);
		abort();
	}
	if (ra == 0 && (a.total > l.total_max || a.largest > l.object_max || a.max_depth > l.depth_max ||
	                a.objects > l.objects_max || a.inflated > a.total)) {
		fprintf(stderr, "fuzz_export_pack: a pass broke a bound\n");
		abort();
	}
	free(copy);
	return 0;
}
