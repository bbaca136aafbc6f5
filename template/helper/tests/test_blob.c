/* test_blob.c: blob.open/read/close (blob.c): a file read back whole in
 * chunks and decoded equals the file, eof is exact, unlink removes the name
 * but keeps the bytes, a FIFO or a symlink is refused without blocking,
 * the open limit and unknown handles. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../blob.h"
#include "../proto.h"

static json_object *call(int (*fn)(json_object *, json_object *, json_object **, struct rpc_error *), json_object *p,
                         struct rpc_error *err)
{
	json_object *res = NULL;
	int r = fn(NULL, p, &res, err);
	json_object_put(p);
	return r == 0 ? res : NULL;
}

static const char *str(json_object *o, const char *k)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, k, &v), "%s", k);
	return json_object_get_string(v);
}

static int64_t num(json_object *o, const char *k)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, k, &v), "%s", k);
	return json_object_get_int64(v);
}

static size_t b64_decode(const char *in, unsigned char *out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	uint32_t acc = 0;
	int bits = 0;
	for (; *in && *in != '='; in++) {
		const char *p = strchr(tab, *in);
		cr_assert_not_null(p);
		acc = acc << 6 | (uint32_t)(p - tab);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits);
		}
	}
	return o;
}

static json_object *open_params(const char *path, int do_unlink)
{
	json_object *p = json_object_new_object();
	json_object_object_add(p, "path", json_object_new_string(path));
	if (do_unlink)
		json_object_object_add(p, "unlink", json_object_new_boolean(1));
	return p;
}

Test(blob, base64_matches_rfc4648_vectors)
{
	/* RFC 4648, section 10. */
	const char *in[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	const char *want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	char out[16];
	for (size_t i = 0; i < 7; i++) {
		blob_base64_encode((const unsigned char *)in[i], strlen(in[i]), out);
		cr_assert_str_eq(out, want[i]);
	}
}

Test(blob, chunks_reassemble_the_file_and_unlink_keeps_the_bytes)
{
	char path[] = "/tmp/chat2sbx-blob-XXXXXX";
	int fd = mkstemp(path);
	size_t size = 3 * 1000 * 1000 + 7; /* not a multiple of the chunk or of 3 */
	unsigned char *data = malloc(size);
	for (size_t i = 0; i < size; i++)
		data[i] = (unsigned char)(i * 131 + (i >> 9));
	cr_assert_eq(write(fd, data, size), (ssize_t)size);
	close(fd);
	struct rpc_error err = {0};
	json_object *o = call(blob_rpc_open, open_params(path, 1), &err);
	cr_assert_not_null(o, "%s", err.message);
	cr_assert_eq(num(o, "size"), (int64_t)size);
	cr_assert_eq(access(path, F_OK), -1, "unlink removed the name");
	char handle[32];
	snprintf(handle, sizeof handle, "%s", str(o, "handle"));
	json_object_put(o);
	unsigned char *back = malloc(size + PROTO_BLOB_CHUNK_MAX);
	size_t got = 0;
	int eof = 0, calls = 0;
	while (!eof) {
		json_object *p = json_object_new_object();
		json_object_object_add(p, "handle", json_object_new_string(handle));
		json_object_object_add(p, "offset", json_object_new_int64((int64_t)got));
		json_object *r = call(blob_rpc_read, p, &err);
		cr_assert_not_null(r, "%s", err.message);
		size_t n = b64_decode(str(r, "data"), back + got);
		cr_assert_eq((int64_t)n, num(r, "bytes"));
		cr_assert_leq(n, PROTO_BLOB_CHUNK_MAX);
		got += n;
		json_object *v = NULL;
		json_object_object_get_ex(r, "eof", &v);
		eof = json_object_get_boolean(v);
		json_object_put(r);
		calls++;
	}
	cr_assert_eq(got, size);
	cr_assert_eq(calls, 3, "3 MB in 1 MiB chunks: the third one reaches the end");
	cr_assert(memcmp(back, data, size) == 0);
	json_object *p = json_object_new_object();
	json_object_object_add(p, "handle", json_object_new_string(handle));
	json_object *r = call(blob_rpc_close, p, &err);
	cr_assert_not_null(r, "%s", err.message);
	json_object_put(r);
	p = json_object_new_object();
	json_object_object_add(p, "handle", json_object_new_string(handle));
	cr_assert_null(call(blob_rpc_close, p, &err));
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
	free(data);
	free(back);
}

Test(blob, fifo_symlink_and_relative_paths_are_refused)
{
	char dir[] = "/tmp/chat2sbx-blob-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char fifo[64], link[64];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(link, sizeof link, "%s/link", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(symlink("/etc/passwd", link), 0);
	struct rpc_error err = {0};
	cr_assert_null(call(blob_rpc_open, open_params(fifo, 0), &err), "a FIFO never blocks and is refused");
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_null(call(blob_rpc_open, open_params(link, 0), &err), "a final symlink is not followed");
	cr_assert_null(call(blob_rpc_open, open_params("relative", 0), &err));
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	unlink(fifo);
	unlink(link);
	rmdir(dir);
}

Test(blob, open_limit_and_close_all)
{
	struct rpc_error err = {0};
	for (int i = 0; i < BLOB_MAX_OPEN; i++) {
		json_object *o = call(blob_rpc_open, open_params("/etc/hostname", 0), &err);
		if (!o) /* a container without /etc/hostname */
			o = call(blob_rpc_open, open_params("/etc/passwd", 0), &err);
		cr_assert_not_null(o, "%s", err.message);
		json_object_put(o);
	}
	cr_assert_null(call(blob_rpc_open, open_params("/etc/passwd", 0), &err));
	cr_assert_str_eq(err.data_code, "LIMIT");
	cr_assert_eq(blob_close_all(), BLOB_MAX_OPEN);
	json_object *o = call(blob_rpc_open, open_params("/etc/passwd", 0), &err);
	cr_assert_not_null(o, "%s", err.message);
	json_object_put(o);
}
