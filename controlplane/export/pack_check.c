/* export_pack_check.c: a git pack judged by what it declares, before git
 * index-pack inflates anything (issue 23: a 1.8 KB bundle of chained
 * deltas made index-pack allocate gigabytes). A streaming parser over a
 * bounded reader: 64 KiB of input, a 16 KiB discard buffer for zlib, and
 * one offset and depth per entry; it never resolves a delta and never
 * keeps an object. Format: gitformat-pack(5) (Documentation/gitformat-
 * pack.txt in git 2.39) and the delta header of patch-delta.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../base/clock.h"
#include "../base/xalloc.h"
#include "pack.h"

#define IN_CHUNK 65536
#define OUT_CHUNK 16384
#define OBJ_OFS_DELTA 6
#define OBJ_REF_DELTA 7

struct reader {
	export_pack_read_fn read;
	void *ctx;
	unsigned char buf[IN_CHUNK];
	size_t pos, len;
	uint64_t offset; /* bytes of the pack consumed */
	int eof;
};

struct entries {
	uint64_t *offset; /* entry starts, increasing */
	uint16_t *depth;  /* OFS_DELTA chain length at each */
	size_t n, cap;
};

struct check {
	struct reader r;
	struct entries e;
	const struct export_pack_limits *lim;
	struct export_pack_stats st;
	z_stream zs;
	int zs_ready;
	unsigned char out[OUT_CHUNK];
};

static const char *size_text(uint64_t bytes, char *buf, size_t size)
{
	if (bytes >= (1ull << 30))
		snprintf(buf, size, "%.1f GiB", (double)bytes / (1ull << 30));
	else if (bytes >= (1ull << 20))
		snprintf(buf, size, "%.1f MiB", (double)bytes / (1ull << 20));
	else
		snprintf(buf, size, "%llu bytes", (unsigned long long)bytes);
	return buf;
}

static const char *type_name(int type)
{
	static const char *const names[] = {"?", "commit", "tree", "blob", "tag", "?", "delta", "delta"};
	return names[type & 7];
}

/* 0, or -1 with DENIED (truncated) / UNAVAILABLE (read failed). */
static int refill(struct check *c, struct cp_error **err)
{
	struct reader *r = &c->r;
	if (r->pos < r->len)
		return 0;
	r->pos = r->len = 0;
	for (;;) {
		ssize_t n = r->read(r->ctx, r->buf, sizeof(r->buf));
		if (n > 0) {
			r->len = (size_t)n;
			return 0;
		}
		if (n == 0) {
			r->eof = 1;
			return cp_error_set(err, CP_ERR_DENIED, "the pack ends early, at byte %llu (it is truncated)",
			                    (unsigned long long)r->offset);
		}
		if (errno != EINTR)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "read the pack");
	}
}

static int byte(struct check *c, unsigned char *ret, struct cp_error **err)
{
	if (refill(c, err) < 0)
		return -1;
	*ret = c->r.buf[c->r.pos++];
	c->r.offset++;
	return 0;
}

static int bytes(struct check *c, unsigned char *out, size_t n, struct cp_error **err)
{
	for (size_t i = 0; i < n; i++)
		if (byte(c, &out[i], err) < 0)
			return -1;
	return 0;
}

static int past_deadline(const struct check *c, struct cp_error **err)
{
	if (c->lim->deadline_ms && clock_monotonic_ms() > c->lim->deadline_ms)
		return cp_error_set(err, CP_ERR_TIMEOUT,
		                    "checking the pack took longer than its time bound (at object %u of a pack of "
		                    "%llu bytes read so far)",
		                    c->st.objects, (unsigned long long)c->r.offset);
	return 0;
}

/* An entry's type and size: the first byte's bits 6-4 and 3-0, then 7
 * bits per byte while the top bit is set. */
static int entry_header(struct check *c, int *ret_type, uint64_t *ret_size, struct cp_error **err)
{
	unsigned char b;
	if (byte(c, &b, err) < 0)
		return -1;
	int type = (b >> 4) & 7;
	uint64_t size = b & 15;
	unsigned shift = 4;
	while (b & 0x80) {
		if (byte(c, &b, err) < 0)
			return -1;
		if (shift > 57)
			return cp_error_set(err, CP_ERR_DENIED, "object %u declares a size that does not fit 64 bits",
			                    c->st.objects + 1);
		size |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	}
	*ret_type = type;
	*ret_size = size;
	return 0;
}

/* OFS_DELTA's negative offset: big-endian 7-bit groups, each but the last
 * adding one (gitformat-pack(5), "offset encoding"). */
static int ofs_distance(struct check *c, uint64_t *ret, struct cp_error **err)
{
	unsigned char b;
	if (byte(c, &b, err) < 0)
		return -1;
	uint64_t ofs = b & 0x7f;
	while (b & 0x80) {
		if (byte(c, &b, err) < 0)
			return -1;
		if (ofs >= (1ull << 56))
			return cp_error_set(err, CP_ERR_DENIED,
			                    "object %u has a delta offset that does not fit 64 bits",
			                    c->st.objects + 1);
		ofs = ((ofs + 1) << 7) | (b & 0x7f);
	}
	*ret = ofs;
	return 0;
}

/* The depth of the entry starting at offset, or -1 when none starts there. */
static int depth_at(const struct entries *e, uint64_t offset)
{
	size_t lo = 0, hi = e->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->offset[mid] < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < e->n && e->offset[lo] == offset ? e->depth[lo] : -1;
}

static void entries_add(struct entries *e, uint64_t offset, uint16_t depth)
{
	if (e->n == e->cap) {
		e->cap = e->cap ? e->cap * 2 : 1024;
		e->offset = xrealloc(e->offset, e->cap * sizeof(*e->offset));
		e->depth = xrealloc(e->depth, e->cap * sizeof(*e->depth));
	}
	e->offset[e->n] = offset;
	e->depth[e->n++] = depth;
}

/* A delta's header: base size, then result size, 7 bits per byte, least
 * significant first (patch-delta.c get_delta_hdr_size). */
static int delta_sizes(const unsigned char *h, size_t len, uint64_t *ret_base, uint64_t *ret_result)
{
	size_t i = 0;
	for (int k = 0; k < 2; k++) {
		uint64_t v = 0;
		unsigned shift = 0;
		unsigned char b;
		do {
			if (i >= len || shift > 63)
				return -1;
			b = h[i++];
			v |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
		} while (b & 0x80);
		*(k ? ret_result : ret_base) = v;
	}
	return 0;
}

static int too_big(struct check *c, uint64_t offset, int type, const char *what, uint64_t size, struct cp_error **err)
{
	char a[32], b[32];
	return cp_error_set(err, CP_ERR_LIMIT,
	                    "object %u (a %s at byte %llu) declares %s of %s, over the per-object bound of %s (what "
	                    "git must hold in memory at once)",
	                    c->st.objects + 1, type_name(type), (unsigned long long)offset, what,
	                    size_text(size, a, sizeof(a)), size_text(c->lim->object_max, b, sizeof(b)));
}

static int add_total(struct check *c, uint64_t size, struct cp_error **err)
{
	if (size > c->lim->total_max || c->st.total > c->lim->total_max - size) {
		char a[32];
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "its objects inflate to more than the total bound of %s (at object %u of the pack)",
		                    size_text(c->lim->total_max, a, sizeof(a)), c->st.objects + 1);
	}
	c->st.total += size;
	return 0;
}

/* A delta's header once its first bytes are in (at most the first 20 of
 * its declared size, so the verdict never depends on how the input came):
 * 1 judged and within the bounds, 0 not complete yet, -1 refused. */
static int delta_head(struct check *c, uint64_t offset, int type, uint64_t size, const unsigned char *head,
                      size_t head_len, struct cp_error **err)
{
	uint64_t base = 0, result = 0;
	if (delta_sizes(head, head_len, &base, &result) < 0) {
		if (head_len < 20 && head_len < size)
			return 0;
		return cp_error_set(err, CP_ERR_DENIED, "object %u (at byte %llu) has no valid delta header",
		                    c->st.objects + 1, (unsigned long long)offset);
	}
	if (base > c->lim->object_max)
		return too_big(c, offset, type, "a delta base", base, err);
	if (result > c->lim->object_max)
		return too_big(c, offset, type, "a delta result", result, err);
	if (add_total(c, result, err) < 0)
		return -1;
	if (result > c->st.largest)
		c->st.largest = result;
	if (base > c->st.largest)
		c->st.largest = base;
	return 1;
}

/* Inflates one entry's zlib stream into the discard buffer: it must end,
 * and produce exactly size bytes. What came out is judged before a zlib
 * error is, so any split of the input gives the same verdict. */
static int inflate_entry(struct check *c, uint64_t offset, int type, uint64_t size, struct cp_error **err)
{
	int delta = type == OBJ_OFS_DELTA || type == OBJ_REF_DELTA;
	unsigned char head[20];
	size_t head_len = 0;
	int head_done = !delta;
	uint64_t produced = 0;
	if (delta && size == 0 && delta_head(c, offset, type, size, head, 0, err) < 0)
		return -1;
	if (inflateReset(&c->zs) != Z_OK)
		return cp_error_set(err, CP_ERR_INTERNAL, "zlib could not start");
	for (;;) {
		if (past_deadline(c, err) < 0 || refill(c, err) < 0)
			return -1;
		c->zs.next_in = c->r.buf + c->r.pos;
		c->zs.avail_in = (uInt)(c->r.len - c->r.pos);
		c->zs.next_out = c->out;
		c->zs.avail_out = sizeof(c->out);
		int z = inflate(&c->zs, Z_NO_FLUSH);
		size_t used = (c->r.len - c->r.pos) - c->zs.avail_in;
		size_t made = sizeof(c->out) - c->zs.avail_out;
		c->r.pos += used;
		c->r.offset += used;
		if (!head_done && made) {
			size_t room = sizeof(head) - head_len;
			if (size - produced < room)
				room = (size_t)(size - produced);
			size_t take = made < room ? made : room;
			memcpy(head + head_len, c->out, take);
			head_len += take;
			int h = delta_head(c, offset, type, size, head, head_len, err);
			if (h < 0)
				return -1;
			head_done = h;
		}
		produced += made;
		c->st.inflated += made;
		if (produced > size)
			return cp_error_set(err, CP_ERR_DENIED,
			                    "object %u (at byte %llu) inflates to more than the %llu bytes it declares",
			                    c->st.objects + 1, (unsigned long long)offset, (unsigned long long)size);
		/* Z_BUF_ERROR: no progress without more input, which the next
		 * refill brings (or finds the pack truncated). */
		int starved = z == Z_BUF_ERROR && used == 0 && made == 0 && c->r.pos == c->r.len;
		if (z != Z_OK && z != Z_STREAM_END && !starved)
			return cp_error_set(err, CP_ERR_DENIED, "object %u (at byte %llu) is not valid zlib data (%s)",
			                    c->st.objects + 1, (unsigned long long)offset,
			                    c->zs.msg ? c->zs.msg : "error");
		if (z == Z_STREAM_END)
			break;
	}
	if (produced != size)
		return cp_error_set(err, CP_ERR_DENIED,
		                    "object %u (at byte %llu) declares %llu bytes but inflates to %llu",
		                    c->st.objects + 1, (unsigned long long)offset, (unsigned long long)size,
		                    (unsigned long long)produced);
	if (!head_done)
		return cp_error_set(err, CP_ERR_DENIED, "object %u (at byte %llu) has no valid delta header",
		                    c->st.objects + 1, (unsigned long long)offset);
	return 0;
}

static int one_entry(struct check *c, struct cp_error **err)
{
	const struct export_pack_limits *lim = c->lim;
	uint64_t offset = c->r.offset, size = 0;
	int type = 0;
	if (entry_header(c, &type, &size, err) < 0)
		return -1;
	unsigned depth = 0;
	if (type == 0 || type == 5)
		return cp_error_set(err, CP_ERR_DENIED, "object %u (at byte %llu) has the invalid type %d",
		                    c->st.objects + 1, (unsigned long long)offset, type);
	if (type == OBJ_OFS_DELTA) {
		uint64_t distance = 0;
		if (ofs_distance(c, &distance, err) < 0)
			return -1;
		int base_depth = distance && distance <= offset ? depth_at(&c->e, offset - distance) : -1;
		if (base_depth < 0)
			return cp_error_set(
			    err, CP_ERR_DENIED,
			    "object %u (at byte %llu) is a delta on byte %lld, where no earlier object starts",
			    c->st.objects + 1, (unsigned long long)offset,
			    distance <= offset ? (long long)(offset - distance) : -1LL);
		depth = (unsigned)base_depth + 1;
		if (depth > lim->depth_max)
			return cp_error_set(
			    err, CP_ERR_LIMIT,
			    "object %u (at byte %llu) ends a chain of more than %u deltas, the depth bound",
			    c->st.objects + 1, (unsigned long long)offset, lim->depth_max);
		c->st.deltas++;
	} else if (type == OBJ_REF_DELTA) {
		unsigned char base[32];
		if (bytes(c, base, lim->hash_len, err) < 0)
			return -1;
		depth = 1; /* its base is named by id; where it is, git resolves */
		c->st.deltas++;
		c->st.ref_deltas++;
	}
	int delta = type == OBJ_OFS_DELTA || type == OBJ_REF_DELTA;
	/* A delta's own data is held whole; so is every commit, tree and tag.
	 * A plain blob past core.bigFileThreshold is streamed by git, so only
	 * the total bounds it. */
	if ((delta || type != 3) && size > lim->object_max)
		return too_big(c, offset, type, delta ? "delta data" : "a size", size, err);
	if (add_total(c, size, err) < 0)
		return -1;
	if (type != 3 && size > c->st.largest)
		c->st.largest = size;
	if (depth > c->st.max_depth)
		c->st.max_depth = depth;
	entries_add(&c->e, offset, (uint16_t)(depth > 65535 ? 65535 : depth));
	if (inflate_entry(c, offset, type, size, err) < 0)
		return -1;
	c->st.objects++;
	return 0;
}

static int header(struct check *c, uint32_t *ret_n, struct cp_error **err)
{
	unsigned char h[12];
	if (bytes(c, h, sizeof(h), err) < 0)
		return cp_error_prefix(err, "no pack header");
	uint32_t version = (uint32_t)h[4] << 24 | (uint32_t)h[5] << 16 | (uint32_t)h[6] << 8 | h[7];
	uint32_t n = (uint32_t)h[8] << 24 | (uint32_t)h[9] << 16 | (uint32_t)h[10] << 8 | h[11];
	if (memcmp(h, "PACK", 4) != 0 || (version != 2 && version != 3))
		return cp_error_set(err, CP_ERR_DENIED, "it is not a git pack of version 2 or 3");
	const struct export_pack_limits *lim = c->lim;
	if (n > lim->objects_max)
		return cp_error_set(err, CP_ERR_LIMIT, "it declares %u objects, over the object count bound of %u", n,
		                    lim->objects_max);
	if (lim->pack_bytes && (lim->pack_bytes < 12 + lim->hash_len ||
	                        (uint64_t)n * EXPORT_PACK_ENTRY_MIN > lim->pack_bytes - 12 - lim->hash_len))
		return cp_error_set(
		    err, CP_ERR_DENIED,
		    "it declares %u objects, more than its %llu bytes can hold (%u bytes each at least)", n,
		    (unsigned long long)lim->pack_bytes, EXPORT_PACK_ENTRY_MIN);
	*ret_n = n;
	return 0;
}

int export_pack_check(export_pack_read_fn read, void *ctx, const struct export_pack_limits *lim,
                      struct export_pack_stats *ret, struct cp_error **err)
{
	if (lim->hash_len != 20 && lim->hash_len != 32)
		return cp_error_set(err, CP_ERR_INTERNAL, "a pack's hash is 20 or 32 bytes, not %u", lim->hash_len);
	struct check *c = xcalloc(1, sizeof(*c));
	c->r.read = read;
	c->r.ctx = ctx;
	c->lim = lim;
	int r = -1;
	uint32_t n = 0;
	if (inflateInit(&c->zs) != Z_OK) {
		cp_error_set(err, CP_ERR_INTERNAL, "zlib could not start");
		goto out;
	}
	c->zs_ready = 1;
	if (header(c, &n, err) < 0)
		goto out;
	for (uint32_t i = 0; i < n; i++)
		if (one_entry(c, err) < 0)
			goto out;
	unsigned char trailer[32];
	if (bytes(c, trailer, lim->hash_len, err) < 0) {
		cp_error_prefix(err, "no trailing hash after its %u objects", n);
		goto out;
	}
	if (c->r.pos < c->r.len || refill(c, NULL) == 0) {
		cp_error_set(err, CP_ERR_DENIED, "bytes follow its trailing hash (at byte %llu)",
		             (unsigned long long)c->r.offset);
		goto out;
	}
	if (ret)
		*ret = c->st;
	r = 0;
out:
	if (c->zs_ready)
		inflateEnd(&c->zs);
	free(c->e.offset);
	free(c->e.depth);
	free(c);
	return r;
}

static ssize_t fd_read(void *ctx, void *buf, size_t n)
{
	return read(*(int *)ctx, buf, n);
}

int export_pack_check_fd(int fd, const struct export_pack_limits *lim, struct export_pack_stats *ret,
                         struct cp_error **err)
{
	struct export_pack_limits l = *lim;
	struct stat st;
	off_t at = lseek(fd, 0, SEEK_CUR);
	if (!l.pack_bytes && at >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size >= at)
		l.pack_bytes = (uint64_t)(st.st_size - at);
	return export_pack_check(fd_read, &fd, &l, ret, err);
}

struct mem_reader {
	const unsigned char *data;
	size_t len, pos, chunk;
};

static ssize_t mem_read(void *ctx, void *buf, size_t n)
{
	struct mem_reader *m = ctx;
	size_t left = m->len - m->pos;
	if (n > left)
		n = left;
	if (m->chunk && n > m->chunk)
		n = m->chunk;
	memcpy(buf, m->data + m->pos, n);
	m->pos += n;
	return (ssize_t)n;
}

int export_pack_check_buffer(const void *data, size_t len, size_t chunk, const struct export_pack_limits *lim,
                             struct export_pack_stats *ret, struct cp_error **err)
{
	struct mem_reader m = {.data = data, .len = len, .chunk = chunk};
	return export_pack_check(mem_read, &m, lim, ret, err);
}

struct export_pack_limits export_pack_limits_for(uint64_t memory_bytes, uint64_t max_input_bytes, int oid_hex)
{
	return (struct export_pack_limits){.object_max = memory_bytes / 4,
	                                   .total_max = 4 * max_input_bytes,
	                                   .depth_max = EXPORT_PACK_DEPTH_MAX,
	                                   .objects_max = EXPORT_PACK_OBJECTS_MAX,
	                                   .hash_len = oid_hex == 64 ? 32 : 20};
}
