/* fuzz_helper_frame.c: libFuzzer harness over the helper's stdin line framing
 * (template/helper/frame.c, frame_reader_read). The first input byte picks a
 * chunk size; the rest goes through a pipe in chunks of that size, one
 * frame_reader_read after each, then end of file. The lines handed out must
 * be exactly those of a plain model: every newline-terminated line, one
 * trailing '\r' removed, empty lines skipped, an unterminated tail dropped.
 * (PROTO_MAX_FRAME is 32 MiB, far above libFuzzer's input sizes, so the
 * over-long path is not reached here.) */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct lines {
	char *out; /* each line as an 8-byte length then its bytes */
	size_t len, cap;
};

static void lines_add(struct lines *l, const char *line, size_t n)
{
	if (l->cap - l->len < n + 8) {
		size_t cap = l->cap ? l->cap : 256;
		while (cap - l->len < n + 8)
			cap *= 2;
		char *b = realloc(l->out, cap);
		if (!b)
			abort();
		l->out = b;
		l->cap = cap;
	}
	uint64_t len = n;
	memcpy(l->out + l->len, &len, 8);
	memcpy(l->out + l->len + 8, line, n);
	l->len += n + 8;
}

static void on_line(char *line, size_t len, void *data)
{
	if (len == 0 || len > PROTO_MAX_FRAME || line[len] != '\0' || memchr(line, '\n', len)) {
		fprintf(stderr, "fuzz_helper_frame: bad line (%zu bytes)\n", len);
		abort();
	}
	line[0] ^= 1; /* the line is writable: writing must stay inside it */
	line[0] ^= 1;
	lines_add(data, line, len);
}

static void on_overlong(char *line, size_t len, void *data)
{
	(void)line;
	(void)data;
	fprintf(stderr, "fuzz_helper_frame: over-long line reported for %zu bytes\n", len);
	abort();
}

static void model(const char *p, size_t n, struct lines *l)
{
	size_t start = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] != '\n')
			continue;
		size_t len = i - start;
		if (len > 0 && p[start + len - 1] == '\r')
			len--;
		if (len > 0)
			lines_add(l, p + start, len);
		start = i + 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1024 * 1024)
		return 0;
	size_t chunk = 1 + data[0];
	const char *p = (const char *)data + 1;
	size--;

	int fds[2];
	if (pipe(fds) < 0)
		abort();
	struct frame_reader r;
	frame_reader_init(&r);
	struct lines got = {0}, want = {0};
	for (size_t off = 0; off < size; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;
		if (write(fds[1], p + off, n) != (ssize_t)n)
			abort();
		/* The pipe holds at most one chunk; one read takes all of it. */
		if (frame_reader_read(&r, fds[0], on_line, on_overlong, &got) != 1)
			abort();
	}
	close(fds[1]);
	int rc;
	while ((rc = frame_reader_read(&r, fds[0], on_line, on_overlong, &got)) == 1)
		;
	if (rc != 0)
		abort();
	close(fds[0]);
	frame_reader_free(&r);

	model(p, size, &want);
	if (got.len != want.len || (got.len && memcmp(got.out, want.out, got.len) != 0)) {
		fprintf(stderr, "fuzz_helper_frame: lines differ from the model (%zu vs %zu bytes)\n", got.len,
		        want.len);
		abort();
	}
	free(got.out);
	free(want.out);
	return 0;
}
