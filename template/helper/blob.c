/* blob.c: blob.open/read/close (blob.h, proto.h). A handful of open file
 * descriptors, each read by offset, so the control plane pulls a file of
 * any size in frames far below PROTO_MAX_FRAME. Nothing here trusts the
 * file: the host counts, caps and verifies what it receives. */
#include "blob.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "proto.h"
#include "xalloc.h"
#include "xjson.h"

static struct blob {
	int fd; /* -1 = free slot */
	uint64_t serial;
} blobs[BLOB_MAX_OPEN] = {{-1, 0}, {-1, 0}, {-1, 0}, {-1, 0}};
static uint64_t next_serial = 1;

size_t blob_base64_encode(const unsigned char *in, size_t n, char *out)
{
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0, i = 0;
	for (; i + 2 < n; i += 3) {
		uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = tab[(v >> 6) & 63];
		out[o++] = tab[v & 63];
	}
	if (i < n) {
		uint32_t v = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = tab[v >> 18];
		out[o++] = tab[(v >> 12) & 63];
		out[o++] = i + 1 < n ? tab[(v >> 6) & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return o;
}

/* "blob_<serial>" of slot s. */
static void handle_of(const struct blob *b, char *buf, size_t size)
{
	snprintf(buf, size, "blob_%llu", (unsigned long long)b->serial);
}

static struct blob *find(json_object *params, struct rpc_error *err)
{
	const char *h = NULL;
	size_t len = 0;
	if (rpc_param_string(params, "handle", true, &h, &len, err) < 0)
		return NULL;
	char want[32];
	for (size_t i = 0; i < BLOB_MAX_OPEN; i++) {
		if (blobs[i].fd < 0)
			continue;
		handle_of(&blobs[i], want, sizeof want);
		if (strlen(h) == len && strcmp(h, want) == 0)
			return &blobs[i];
	}
	rpc_fail(err, "NOT_FOUND", "no open blob '%.40s'; open it again with blob.open", h);
	return NULL;
}

int blob_rpc_open(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *path = NULL;
	size_t len = 0;
	bool do_unlink = false;
	if (rpc_param_string(params, "path", true, &path, &len, err) < 0 ||
	    rpc_param_bool(params, "unlink", false, &do_unlink, err) < 0)
		return -1;
	if (strlen(path) != len || path[0] != '/')
		return rpc_fail(err, "INVALID_ARGUMENT", "blob.open needs an absolute path without NUL characters");
	struct blob *slot = NULL;
	for (size_t i = 0; i < BLOB_MAX_OPEN && !slot; i++)
		if (blobs[i].fd < 0)
			slot = &blobs[i];
	if (!slot)
		return rpc_fail(err, "LIMIT", "%d blobs are open already; close one with blob.close", BLOB_MAX_OPEN);
	/* O_NONBLOCK: a FIFO put in the file's place cannot hang the helper. */
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return rpc_fail_errno(err, errno, "open", path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return rpc_fail(err, "INVALID_ARGUMENT", "'%s' is not a regular file", path);
	}
	if (do_unlink && unlink(path) < 0 && errno != ENOENT) {
		int e = errno;
		close(fd);
		return rpc_fail_errno(err, e, "unlink", path);
	}
	slot->fd = fd;
	slot->serial = next_serial++;
	char h[32];
	handle_of(slot, h, sizeof h);
	json_object *r = xjson_object();
	xjson_add(r, "handle", xjson_string(h));
	xjson_add(r, "size", xjson_int64((int64_t)st.st_size));
	*ret_result = r;
	return 0;
}

int blob_rpc_read(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	struct blob *b = find(params, err);
	int64_t offset = 0, length = 0;
	if (!b || rpc_param_int(params, "offset", 0, 0, INT64_MAX, false, &offset, err) < 0 ||
	    rpc_param_int(params, "length", PROTO_BLOB_CHUNK_MAX, 1, PROTO_BLOB_CHUNK_MAX, false, &length, err) < 0)
		return -1;
	unsigned char *raw = xmalloc((size_t)length + 1); /* length <= PROTO_BLOB_CHUNK_MAX */
	char *text = xmalloc(4 * (((size_t)length + 1 + 2) / 3) + 1);
	/* One byte more than asked tells whether the end was reached. */
	ssize_t n;
	do
		n = pread(b->fd, raw, (size_t)length + 1, (off_t)offset);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int e = errno;
		free(raw);
		free(text);
		return rpc_fail(err, "INTERNAL", "blob.read: %s", strerror(e));
	}
	bool eof = n <= length;
	size_t got = eof ? (size_t)n : (size_t)length;
	blob_base64_encode(raw, got, text);
	free(raw);
	json_object *r = xjson_object();
	xjson_add(r, "data", xjson_string(text));
	xjson_add(r, "bytes", xjson_int64((int64_t)got));
	xjson_add(r, "eof", xjson_bool(eof));
	free(text);
	*ret_result = r;
	return 0;
}

int blob_rpc_close(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	struct blob *b = find(params, err);
	if (!b)
		return -1;
	close(b->fd);
	b->fd = -1;
	*ret_result = xjson_object();
	return 0;
}

size_t blob_close_all(void)
{
	size_t n = 0;
	for (size_t i = 0; i < BLOB_MAX_OPEN; i++)
		if (blobs[i].fd >= 0) {
			close(blobs[i].fd);
			blobs[i].fd = -1;
			n++;
		}
	return n;
}
