/* mcp_test.h: what the MCP unit tests share: reading a reply by a dotted
 * path, and running the stdio transport over a pipe. Header-only (static
 * inline) so each test file stays one translation unit. */
#ifndef CP_MCP_TEST_H
#define CP_MCP_TEST_H

#include <criterion/criterion.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "mcp/mcp.h"

/* The member at a dotted path of o (numeric parts index arrays), borrowed;
 * NULL when absent. */
static inline struct json_object *get(struct json_object *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *save = NULL, *part = strtok_r(buf, ".", &save); part; part = strtok_r(NULL, ".", &save)) {
		if (json_object_is_type(o, json_type_array))
			o = json_object_array_get_idx(o, (size_t)atoi(part));
		else if (!json_object_object_get_ex(o, part, &o))
			return NULL;
		if (!o)
			return NULL;
	}
	return o;
}

static inline const char *gets(struct json_object *o, const char *path)
{
	struct json_object *v = get(o, path);
	return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static inline int geti(struct json_object *o, const char *path)
{
	struct json_object *v = get(o, path);
	cr_assert_not_null(v, "missing %s in %s", path, json_object_to_json_string(o));
	return json_object_get_int(v);
}

struct mcp_test_stdio_run {
	struct mcp_server *server;
	int in_fd, out_fd;
	int rc;
};

static inline void *mcp_test_stdio_main(void *arg)
{
	struct mcp_test_stdio_run *run = arg;
	struct cp_error *err = NULL;
	run->rc = mcp_server_serve_stdio(run->server, run->in_fd, run->out_fd, &err);
	cp_error_free(err);
	return NULL;
}

/* Serves stdio for server on a pipe: writes first, waits pause_ms, writes
 * rest (may be NULL), closes the input and waits for the end. Returns
 * everything written to stdout (caller frees) and the elapsed time. */
static inline char *mcp_test_stdio_exchange(struct mcp_server *server, const char *first, const char *rest,
                                            int pause_ms, long *ret_ms)
{
	int in[2];
	cr_assert_eq(pipe(in), 0);
	FILE *out = tmpfile();
	cr_assert_not_null(out);
	struct mcp_test_stdio_run run = {server, in[0], fileno(out), -1};
	int64_t start = clock_monotonic_ms();
	pthread_t th;
	pthread_create(&th, NULL, mcp_test_stdio_main, &run);
	cr_assert_eq(write(in[1], first, strlen(first)), (ssize_t)strlen(first));
	if (pause_ms)
		usleep((useconds_t)pause_ms * 1000);
	if (rest)
		cr_assert_eq(write(in[1], rest, strlen(rest)), (ssize_t)strlen(rest));
	close(in[1]);
	pthread_join(th, NULL);
	if (ret_ms)
		*ret_ms = (long)(clock_monotonic_ms() - start);
	close(in[0]);
	cr_assert_eq(run.rc, 0);
	fflush(out);
	rewind(out);
	char *buf = calloc(1, 65536);
	size_t n = fread(buf, 1, 65535, out);
	buf[n] = '\0';
	fclose(out);
	return buf;
}

#endif
