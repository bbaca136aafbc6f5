/* fuzz_rpc_params.c: libFuzzer harness over the helper's request reading
 * (template/helper/rpc.c): rpc_request_parse on one request line, then the
 * parameter readers every helper method calls (rpc_param_string, _int,
 * _bool) for each name and bound the methods use (the table below mirrors
 * the calls in bash*.c, files.c, edit.c, list.c, search.c, blob.c, patch.c),
 * and rpc_id_scan on the raw line, as the loop does for a frame it cannot
 * parse. A reader must return -1 with a message, 0 with the default, or 1
 * with a value inside its bounds; a string's length must be its bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "rpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct {
	const char *name;
	int64_t def, min, max;
	bool clamp;
} ints[] = {
    {"cols", 80, 1, 1000, false},
    {"rows", 24, 1, 1000, false},
    {"depth", 3, 1, 16, true},
    {"length", PROTO_BLOB_CHUNK_MAX, 1, PROTO_BLOB_CHUNK_MAX, false},
    {"limit", 2000, 1, 100000, true},
    {"max_bytes", 30000, 1, 1 << 20, true},
    {"max_entries", 1000, 1, 100000, true},
    {"max_output_bytes", 30000, 0, 1 << 20, true},
    {"offset", 0, 0, INT64_MAX, false},
    {"offset", 1, 1, INT64_MAX, false},
    {"start", 0, 0, INT64_MAX, false},
    {"end", 0, 0, INT64_MAX, false},
    {"timeout_ms", 0, 0, INT64_MAX / 4, true},
    {"yield_time_ms", PROTO_DEFAULT_YIELD_MS, 0, 300000, true},
};
static const char *const strings[] = {"attach_id",  "command",    "content", "cwd",  "data",    "glob",      "handle",
                                      "new_string", "old_string", "patch",   "path", "pattern", "session_id"};
static const char *const bools[] = {"case_insensitive", "close",       "create_dirs", "hidden", "interactive",
                                    "numbered",         "replace_all", "tail",        "tty",    "unlink"};

static void fail(const char *what, const char *name)
{
	fprintf(stderr, "fuzz_rpc_params: %s '%s'\n", what, name);
	abort();
}

static void read_params(json_object *params)
{
	struct rpc_error err;
	for (size_t i = 0; i < sizeof strings / sizeof *strings; i++) {
		for (int required = 0; required < 2; required++) {
			memset(&err, 0, sizeof err);
			const char *s = NULL;
			size_t len = 0;
			int r = rpc_param_string(params, strings[i], required, &s, &len, &err);
			if (r < 0 && !err.message[0])
				fail("refused without a message", strings[i]);
			/* json-c ends every string with a NUL after its len bytes */
			if (r > 0 && (!s || s[len] != '\0'))
				fail("a string whose length is not its bytes", strings[i]);
		}
	}
	for (size_t i = 0; i < sizeof ints / sizeof *ints; i++) {
		memset(&err, 0, sizeof err);
		int64_t v = -1;
		int r =
		    rpc_param_int(params, ints[i].name, ints[i].def, ints[i].min, ints[i].max, ints[i].clamp, &v, &err);
		if (r < 0 && !err.message[0])
			fail("refused without a message", ints[i].name);
		if (r == 0 && v != ints[i].def)
			fail("absent but not the default", ints[i].name);
		if (r > 0 && (v < ints[i].min || v > ints[i].max))
			fail("a value outside its bounds", ints[i].name);
	}
	for (size_t i = 0; i < sizeof bools / sizeof *bools; i++) {
		memset(&err, 0, sizeof err);
		bool b = true;
		int r = rpc_param_bool(params, bools[i], false, &b, &err);
		if (r < 0 && !err.message[0])
			fail("refused without a message", bools[i]);
		if (r == 0 && b)
			fail("absent but not the default", bools[i]);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 20)
		return 0;
	/* A copy of exactly size bytes, so ASan sees any read past the end. */
	char *line = malloc(size ? size : 1);
	if (!line)
		abort();
	memcpy(line, data, size);
	int64_t scanned;
	(void)rpc_id_scan(line, size, &scanned);
	json_object *root = NULL, *id = NULL, *params = NULL;
	const char *method = NULL;
	struct rpc_error err = {0};
	int r = rpc_request_parse(line, size, &root, &id, &method, &params, &err);
	if (r == 0) {
		if (!method || !json_object_is_type(params, json_type_object))
			fail("parsed without a method or params object", method ? method : "(none)");
		read_params(params);
	} else if (r < 0 && !err.message[0]) {
		fail("refused without a message", "request");
	}
	json_object_put(root);
	free(line);
	return 0;
}
