/* test_rpc.c: request parsing, parameter checks and the id scan used for
 * requests that cannot be parsed (rpc.c), and line framing (frame.c). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../frame.h"
#include "../proto.h"
#include "../rpc.h"

Test(rpc, parses_a_request_and_defaults_params)
{
	json_object *root, *id, *params;
	const char *method;
	struct rpc_error err;
	const char *line = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"hello\"}  ";
	cr_assert_eq(rpc_request_parse(line, strlen(line), &root, &id, &method, &params, &err), 0);
	cr_assert_eq(json_object_get_int(id), 7);
	cr_assert_str_eq(method, "hello");
	cr_assert(json_object_is_type(params, json_type_object));
	json_object_put(root);
}

Test(rpc, notification_and_errors)
{
	json_object *root, *id, *params;
	const char *method;
	struct rpc_error err;
	const char *note = "{\"jsonrpc\":\"2.0\",\"method\":\"hello\"}";
	cr_assert_eq(rpc_request_parse(note, strlen(note), &root, &id, &method, &params, &err), 1);
	json_object_put(root);

	const char *bad = "{\"jsonrpc\":\"2.0\",\"id\":3,";
	cr_assert_eq(rpc_request_parse(bad, strlen(bad), &root, &id, &method, &params, &err), -1);
	cr_assert_eq(err.code, PROTO_ERR_PARSE);
	cr_assert_null(id);
	json_object_put(root);

	const char *nomethod = "{\"jsonrpc\":\"2.0\",\"id\":4}";
	cr_assert_eq(rpc_request_parse(nomethod, strlen(nomethod), &root, &id, &method, &params, &err), -1);
	cr_assert_eq(err.code, PROTO_ERR_INVALID_REQUEST);
	cr_assert_eq(json_object_get_int(id), 4);
	json_object_put(root);

	const char *badparams = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"x\",\"params\":[1]}";
	cr_assert_eq(rpc_request_parse(badparams, strlen(badparams), &root, &id, &method, &params, &err), -1);
	cr_assert_eq(err.code, PROTO_ERR_INVALID_PARAMS);
	json_object_put(root);
}

Test(rpc, typed_params)
{
	json_object *p = json_tokener_parse("{\"s\":\"x\",\"n\":-1,\"big\":99999,\"b\":true,\"f\":1.5}");
	struct rpc_error err;
	const char *s;
	int64_t n;
	bool b;
	cr_assert_eq(rpc_param_string(p, "s", true, &s, NULL, &err), 1);
	cr_assert_eq(rpc_param_string(p, "missing", false, &s, NULL, &err), 0);
	cr_assert_eq(rpc_param_string(p, "missing", true, &s, NULL, &err), -1);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_eq(err.code, PROTO_ERR_INVALID_PARAMS);
	cr_assert(strstr(err.message, "'missing'"));
	cr_assert_eq(rpc_param_string(p, "n", true, &s, NULL, &err), -1);
	cr_assert_eq(rpc_param_int(p, "n", 0, 0, 10, true, &n, &err), -1);
	cr_assert_eq(rpc_param_int(p, "big", 0, 0, 10, true, &n, &err), 1);
	cr_assert_eq(n, 10);
	cr_assert_eq(rpc_param_int(p, "big", 0, 0, 10, false, &n, &err), -1);
	cr_assert_eq(rpc_param_int(p, "f", 0, 0, 10, true, &n, &err), -1);
	cr_assert_eq(rpc_param_int(p, "none", 42, 0, 100, true, &n, &err), 0);
	cr_assert_eq(n, 42);
	cr_assert_eq(rpc_param_bool(p, "b", false, &b, &err), 1);
	cr_assert(b);
	cr_assert_eq(rpc_param_bool(p, "s", false, &b, &err), -1);
	json_object_put(p);
}

Test(rpc, id_scan)
{
	int64_t id;
	const char *a = "{\"jsonrpc\":\"2.0\", \"id\" : 12345, \"method\":\"file.write\", \"params\":{\"co";
	cr_assert(rpc_id_scan(a, strlen(a), &id));
	cr_assert_eq(id, 12345);
	const char *b = "{\"params\":{\"content\":\"\\\"id\\\": 9\"}, \"id\":-3}";
	cr_assert(rpc_id_scan(b, strlen(b), &id));
	cr_assert_eq(id, -3);
	cr_assert_not(rpc_id_scan("{\"method\":\"x\"", 13, &id));
	cr_assert_not(rpc_id_scan("{\"id\":\"str\"}", 12, &id));
}

struct lines {
	int n, overlong;
	char got[8][64];
	int64_t overlong_id;
};

static void on_line(char *line, size_t len, void *data)
{
	struct lines *l = data;
	if (l->n < 8)
		snprintf(l->got[l->n], sizeof l->got[0], "%.*s", (int)len, line);
	l->n++;
}

static void on_overlong(char *line, size_t len, void *data)
{
	struct lines *l = data;
	l->overlong++;
	rpc_id_scan(line, len, &l->overlong_id);
}

Test(frame, lines_split_across_reads_and_crlf)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	struct frame_reader r;
	frame_reader_init(&r);
	struct lines l = {0};
	const char *parts[] = {"{\"a\"", ":1}\r\n{\"b\":2}\n\n{\"c\"", ":3}\n"};
	for (size_t i = 0; i < 3; i++) {
		cr_assert_eq(write(p[1], parts[i], strlen(parts[i])), (ssize_t)strlen(parts[i]));
		cr_assert_eq(frame_reader_read(&r, p[0], on_line, on_overlong, &l), 1);
	}
	cr_assert_eq(l.n, 3);
	cr_assert_str_eq(l.got[0], "{\"a\":1}");
	cr_assert_str_eq(l.got[1], "{\"b\":2}");
	cr_assert_str_eq(l.got[2], "{\"c\":3}");
	close(p[1]);
	cr_assert_eq(frame_reader_read(&r, p[0], on_line, on_overlong, &l), 0);
	close(p[0]);
	frame_reader_free(&r);
}

Test(frame, overlong_line_is_skipped_and_reported_once)
{
	int p[2];
	cr_assert_eq(pipe2(p, O_NONBLOCK), 0);
	struct frame_reader r;
	frame_reader_init(&r);
	struct lines l = {0};
	const char *head = "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"file.write\",\"params\":{\"content\":\"";
	size_t total = PROTO_MAX_FRAME + 100000;
	char *chunk = malloc(65536);
	memset(chunk, 'a', 65536);
	const char *tail = "\"}}\n{\"after\":1}\n";
	size_t sent = 0, tail_sent = 0;
	cr_assert_eq(write(p[1], head, strlen(head)), (ssize_t)strlen(head));
	while (tail_sent < strlen(tail)) {
		ssize_t w;
		if (sent < total) {
			w = write(p[1], chunk, total - sent < 65536 ? total - sent : 65536);
			if (w > 0)
				sent += (size_t)w;
		} else {
			w = write(p[1], tail + tail_sent, strlen(tail) - tail_sent);
			if (w > 0)
				tail_sent += (size_t)w;
		}
		cr_assert_eq(frame_reader_read(&r, p[0], on_line, on_overlong, &l), 1);
	}
	for (int i = 0; i < 8; i++)
		cr_assert_eq(frame_reader_read(&r, p[0], on_line, on_overlong, &l), 1);
	cr_assert_eq(l.overlong, 1);
	cr_assert_eq(l.overlong_id, 77);
	cr_assert_eq(l.n, 1);
	cr_assert_str_eq(l.got[0], "{\"after\":1}");
	cr_assert_leq(r.cap, 1024 * 1024, "buffer shrinks after the long line (cap %zu)", r.cap);
	free(chunk);
	close(p[0]);
	close(p[1]);
	frame_reader_free(&r);
}
