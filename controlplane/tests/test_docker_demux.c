/* test_docker_demux.c: the attach-stream demultiplexer (docker/demux.c) fed
 * a multi-frame stream split at every byte boundary and one byte at a time;
 * the output must be identical whatever the split. Corrupt headers stop it. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "docker/docker.h"

/* What the callback saw: consecutive pieces of the same stream are merged,
 * so a split inside a frame is invisible and a stream change is not. */
struct seen {
	enum docker_stream stream[64];
	char *data[64];
	size_t len[64];
	size_t n;
	size_t calls;
};

static void on_piece(void *userdata, enum docker_stream stream, const char *data, size_t len)
{
	struct seen *s = userdata;
	cr_assert_gt(len, 0, "empty pieces must not be reported");
	s->calls++;
	if (s->n == 0 || s->stream[s->n - 1] != stream) {
		cr_assert_lt(s->n, 64);
		s->stream[s->n] = stream;
		s->data[s->n] = NULL;
		s->len[s->n] = 0;
		s->n++;
	}
	size_t i = s->n - 1;
	s->data[i] = realloc(s->data[i], s->len[i] + len);
	memcpy(s->data[i] + s->len[i], data, len);
	s->len[i] += len;
}

static void seen_free(struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->data[i]);
	memset(s, 0, sizeof(*s));
}

static size_t put_frame(unsigned char *out, unsigned type, const void *payload, uint32_t len)
{
	out[0] = (unsigned char)type;
	out[1] = out[2] = out[3] = 0;
	out[4] = (unsigned char)(len >> 24);
	out[5] = (unsigned char)(len >> 16);
	out[6] = (unsigned char)(len >> 8);
	out[7] = (unsigned char)len;
	memcpy(out + 8, payload, len);
	return 8 + len;
}

static unsigned char stream_buf[2048];
static unsigned char binary[300];

/* stdout "hello\n" | stderr "warn: x\n" | stdout 300 binary bytes (NULs
 * included) | empty stdout frame | stderr "e" | stdout "tail". */
static size_t build_stream(void)
{
	for (size_t i = 0; i < sizeof(binary); i++)
		binary[i] = (unsigned char)(i * 7);
	size_t n = 0;
	n += put_frame(stream_buf + n, 1, "hello\n", 6);
	n += put_frame(stream_buf + n, 2, "warn: x\n", 8);
	n += put_frame(stream_buf + n, 1, binary, sizeof(binary));
	n += put_frame(stream_buf + n, 1, "", 0);
	n += put_frame(stream_buf + n, 2, "e", 1);
	n += put_frame(stream_buf + n, 1, "tail", 4);
	return n;
}

static void check_seen(const struct seen *s)
{
	cr_assert_eq(s->n, 5, "segments: %zu", s->n);
	cr_assert_eq(s->stream[0], DOCKER_STREAM_STDOUT);
	cr_assert_eq(s->len[0], 6);
	cr_assert_eq(memcmp(s->data[0], "hello\n", 6), 0);
	cr_assert_eq(s->stream[1], DOCKER_STREAM_STDERR);
	cr_assert_eq(s->len[1], 8);
	cr_assert_eq(memcmp(s->data[1], "warn: x\n", 8), 0);
	cr_assert_eq(s->stream[2], DOCKER_STREAM_STDOUT);
	cr_assert_eq(s->len[2], sizeof(binary));
	cr_assert_eq(memcmp(s->data[2], binary, sizeof(binary)), 0);
	cr_assert_eq(s->stream[3], DOCKER_STREAM_STDERR);
	cr_assert_eq(s->len[3], 1);
	cr_assert_eq(s->data[3][0], 'e');
	cr_assert_eq(s->stream[4], DOCKER_STREAM_STDOUT);
	cr_assert_eq(s->len[4], 4);
	cr_assert_eq(memcmp(s->data[4], "tail", 4), 0);
}

Test(docker_demux, whole_stream)
{
	size_t n = build_stream();
	struct seen s = {0};
	struct docker_demux d;
	docker_demux_init(&d, on_piece, &s);
	cr_assert_eq(docker_demux_feed(&d, (const char *)stream_buf, n), 0);
	check_seen(&s);
	cr_assert_eq(s.calls, 5, "one call per non-empty frame when fed whole");
	seen_free(&s);
}

Test(docker_demux, split_at_every_byte)
{
	size_t n = build_stream();
	for (size_t cut = 0; cut <= n; cut++) {
		struct seen s = {0};
		struct docker_demux d;
		docker_demux_init(&d, on_piece, &s);
		cr_assert_eq(docker_demux_feed(&d, (const char *)stream_buf, cut), 0, "cut %zu", cut);
		cr_assert_eq(docker_demux_feed(&d, (const char *)stream_buf + cut, n - cut), 0, "cut %zu", cut);
		check_seen(&s);
		cr_assert_eq(d.header_len, 0, "cut %zu: ends between frames", cut);
		cr_assert_eq(d.remaining, 0);
		seen_free(&s);
	}
}

Test(docker_demux, split_in_three_everywhere)
{
	size_t n = build_stream();
	for (size_t a = 0; a <= n; a += 3)
		for (size_t b = a; b <= n; b += 5) {
			struct seen s = {0};
			struct docker_demux d;
			docker_demux_init(&d, on_piece, &s);
			cr_assert_eq(docker_demux_feed(&d, (const char *)stream_buf, a), 0);
			cr_assert_eq(docker_demux_feed(&d, (const char *)stream_buf + a, b - a), 0);
			cr_assert_eq(docker_demux_feed(&d, (const char *)stream_buf + b, n - b), 0);
			check_seen(&s);
			seen_free(&s);
		}
}

Test(docker_demux, one_byte_at_a_time)
{
	size_t n = build_stream();
	struct seen s = {0};
	struct docker_demux d;
	docker_demux_init(&d, on_piece, &s);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(docker_demux_feed(&d, (const char *)stream_buf + i, 1), 0, "byte %zu", i);
	check_seen(&s);
	seen_free(&s);
}

Test(docker_demux, large_frame_length_is_big_endian)
{
	size_t len = 70000; /* needs the third length byte */
	unsigned char *buf = malloc(8 + len);
	unsigned char *payload = malloc(len);
	for (size_t i = 0; i < len; i++)
		payload[i] = (unsigned char)(i % 251);
	put_frame(buf, 1, payload, (uint32_t)len);
	cr_assert_eq(buf[5], 0x01);
	struct seen s = {0};
	struct docker_demux d;
	docker_demux_init(&d, on_piece, &s);
	for (size_t i = 0; i < 8 + len; i += 4093)
		docker_demux_feed(&d, (const char *)buf + i, 8 + len - i < 4093 ? 8 + len - i : 4093);
	cr_assert_eq(s.n, 1);
	cr_assert_eq(s.len[0], len);
	cr_assert_eq(memcmp(s.data[0], payload, len), 0);
	seen_free(&s);
	free(buf);
	free(payload);
}

Test(docker_demux, empty_feed_is_harmless)
{
	struct seen s = {0};
	struct docker_demux d;
	docker_demux_init(&d, on_piece, &s);
	cr_assert_eq(docker_demux_feed(&d, "", 0), 0);
	cr_assert_eq(s.calls, 0);
}

Test(docker_demux, unknown_stream_type_is_corrupt)
{
	unsigned char buf[64];
	size_t n = put_frame(buf, 1, "ok", 2);
	n += put_frame(buf + n, 3, "bad", 3);
	struct seen s = {0};
	struct docker_demux d;
	docker_demux_init(&d, on_piece, &s);
	cr_assert_eq(docker_demux_feed(&d, (const char *)buf, n), -1);
	cr_assert_eq(s.n, 1, "frames before the bad header are delivered");
	cr_assert_eq(memcmp(s.data[0], "ok", 2), 0);
	cr_assert_eq(docker_demux_feed(&d, "x", 1), -1, "stays corrupt");
	seen_free(&s);

	/* Text where a header should be (a TTY stream, or garbage). */
	docker_demux_init(&d, on_piece, &s);
	cr_assert_eq(docker_demux_feed(&d, "HTTP/1.1", 8), -1);
	cr_assert_eq(s.calls, 0);
}

Test(docker_demux, bad_header_split_across_feeds)
{
	unsigned char buf[16];
	put_frame(buf, 0xff, "", 0);
	struct seen s = {0};
	struct docker_demux d;
	docker_demux_init(&d, on_piece, &s);
	for (size_t i = 0; i < 7; i++)
		cr_assert_eq(docker_demux_feed(&d, (const char *)buf + i, 1), 0);
	cr_assert_eq(docker_demux_feed(&d, (const char *)buf + 7, 1), -1);
}
