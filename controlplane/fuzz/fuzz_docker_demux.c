/* fuzz_docker_demux.c: libFuzzer harness over the attach-stream
 * demultiplexer (docker/demux.c). The first input byte picks a split point;
 * the rest is fed in two pieces at that point and again one byte at a time,
 * and both runs must hand out the same bytes per stream and agree on
 * corruption (the parser promises any split gives the same output); once
 * corrupt, a non-empty feed must keep failing. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "docker/docker.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct seen {
	char *out; /* stream number byte, then payload byte, per byte handed out */
	size_t len, cap;
};

static void on_piece(void *userdata, enum docker_stream stream, const char *data, size_t len)
{
	struct seen *s = userdata;
	if (len == 0 || (unsigned)stream > DOCKER_STREAM_STDERR) {
		fprintf(stderr, "fuzz_docker_demux: bad piece (stream %u, %zu bytes)\n", (unsigned)stream, len);
		abort();
	}
	if (s->cap - s->len < 2 * len) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap - s->len < 2 * len)
			cap *= 2;
		char *b = realloc(s->out, cap);
		if (!b)
			abort();
		s->out = b;
		s->cap = cap;
	}
	for (size_t i = 0; i < len; i++) {
		s->out[s->len++] = (char)stream;
		s->out[s->len++] = data[i];
	}
}

/* Feeds data[0..size) in pieces of at most step bytes (0: split once at
 * split); returns -1 when the parser reported corruption. */
static int run(const char *data, size_t size, size_t split, size_t step, struct seen *s)
{
	struct docker_demux d;
	docker_demux_init(&d, on_piece, s);
	int bad = 0;
	if (step == 0) {
		if (docker_demux_feed(&d, data, split) < 0)
			bad = -1;
		/* A corrupt stream stays corrupt: the second piece must be refused too. */
		int r = docker_demux_feed(&d, data + split, size - split);
		if (bad && r == 0 && size > split) {
			fprintf(stderr, "fuzz_docker_demux: parser recovered after corruption\n");
			abort();
		}
		if (r < 0)
			bad = -1;
	} else {
		for (size_t i = 0; i < size && !bad; i += step)
			if (docker_demux_feed(&d, data + i, size - i < step ? size - i : step) < 0)
				bad = -1;
	}
	/* An empty feed hands nothing out. */
	size_t before = s->len;
	docker_demux_feed(&d, data, 0);
	if (s->len != before) {
		fprintf(stderr, "fuzz_docker_demux: an empty feed handed out bytes\n");
		abort();
	}
	return bad;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	size_t split = data[0];
	data++;
	size--;
	if (split > size)
		split = size;
	/* An exact-size copy, so a read past the input is an ASan report. */
	char *copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	if (size)
		memcpy(copy, data, size);

	struct seen a = {0}, b = {0};
	int ra = run(copy, size, split, 0, &a);
	int rb = run(copy, size, 0, 1, &b);
	if (ra != rb || a.len != b.len || (a.len && memcmp(a.out, b.out, a.len) != 0)) {
		fprintf(stderr, "fuzz_docker_demux: split at %zu and byte-at-a-time disagree (%d/%d, %zu/%zu bytes)\n",
		        split, ra, rb, a.len, b.len);
		abort();
	}
	/* Payload never exceeds the input minus one header. */
	if (a.len / 2 > size) {
		fprintf(stderr, "fuzz_docker_demux: more payload than input\n");
		abort();
	}
	free(a.out);
	free(b.out);
	free(copy);
	return 0;
}
