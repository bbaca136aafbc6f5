/* pack_builder.c: see pack_builder.h. */
#include "pack_builder.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static void put(struct pack *p, const void *d, size_t n)
{
	if (p->len + n > p->cap) {
		p->cap = (p->len + n) * 2 + 64;
		p->data = realloc(p->data, p->cap);
		cr_assert_not_null(p->data);
	}
	memcpy(p->data + p->len, d, n);
	p->len += n;
}

void pack_begin(struct pack *p, uint32_t n)
{
	*p = (struct pack){0};
	unsigned char h[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2, n >> 24, n >> 16, n >> 8, n};
	put(p, h, sizeof(h));
}

static void entry_header(struct pack *p, int type, uint64_t size)
{
	p->starts = realloc(p->starts, (p->n + 1) * sizeof(*p->starts));
	p->starts[p->n++] = p->len;
	unsigned char b = (unsigned char)(type << 4 | (size & 15));
	size >>= 4;
	while (size) {
		b |= 0x80;
		put(p, &b, 1);
		b = size & 0x7f;
		size >>= 7;
	}
	put(p, &b, 1);
}

static void deflated(struct pack *p, const void *data, size_t len)
{
	uLongf out_len = compressBound(len);
	unsigned char *out = malloc(out_len);
	cr_assert_eq(compress2(out, &out_len, data, len, 9), Z_OK);
	put(p, out, out_len);
	free(out);
}

void pack_plain(struct pack *p, int type, uint64_t size, const void *data, size_t len)
{
	entry_header(p, type, size);
	deflated(p, data, len);
}

void pack_ofs(struct pack *p, size_t base, const void *delta, size_t len)
{
	size_t here = p->len;
	entry_header(p, 6, len);
	uint64_t ofs = here - p->starts[base];
	unsigned char buf[16];
	size_t i = sizeof(buf) - 1;
	buf[i] = ofs & 0x7f;
	while (ofs >>= 7)
		buf[--i] = 0x80 | (--ofs & 0x7f);
	put(p, buf + i, sizeof(buf) - i);
	deflated(p, delta, len);
}

void pack_ref(struct pack *p, const unsigned char *oid, const void *delta, size_t len)
{
	entry_header(p, 7, len);
	put(p, oid, 20);
	deflated(p, delta, len);
}

void pack_end(struct pack *p)
{
	unsigned char zero[20] = {0};
	put(p, zero, sizeof(zero));
}

void pack_free(struct pack *p)
{
	free(p->data);
	free(p->starts);
	*p = (struct pack){0};
}

static size_t varint(unsigned char *out, uint64_t v)
{
	size_t n = 0;
	do {
		out[n] = v & 0x7f;
		v >>= 7;
		if (v)
			out[n] |= 0x80;
		n++;
	} while (v);
	return n;
}

unsigned char *delta_copies(uint64_t base_size, unsigned times, size_t *ret_len)
{
	size_t per = (size_t)((base_size + 65535) / 65536);
	unsigned char *d = malloc(32 + (size_t)times * per * 8 + 8);
	cr_assert_not_null(d);
	size_t n = varint(d, base_size);
	n += varint(d + n, base_size * times);
	for (unsigned t = 0; t < times; t++)
		for (uint64_t off = 0; off < base_size; off += 65536) {
			uint64_t len = base_size - off < 65536 ? base_size - off : 65536;
			unsigned char op = 0x80;
			size_t at = n++;
			for (int k = 0; k < 4; k++)
				if ((off >> (8 * k)) & 0xff) {
					op |= 1 << k;
					d[n++] = (off >> (8 * k)) & 0xff;
				}
			if (len != 65536)
				for (int k = 0; k < 3; k++)
					if ((len >> (8 * k)) & 0xff) {
						op |= 0x10 << k;
						d[n++] = (len >> (8 * k)) & 0xff;
					}
			d[at] = op;
		}
	*ret_len = n;
	return d;
}

int pack_tmpfile(const void *data, size_t len)
{
	char path[] = "/tmp/c2s-pack-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}
