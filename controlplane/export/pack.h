/* pack.h: the check of a git pack's declared sizes and delta chains
 * before any git is asked to inflate it (export_pack_check.c, issue 23).
 * Its own header, with nothing but base/ below it, so the fuzz harness
 * (controlplane/fuzz/fuzz_export_pack.c) links the parser alone. */
#ifndef CP_EXPORT_PACK_H
#define CP_EXPORT_PACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../base/error.h"

/* Deepest OFS_DELTA chain accepted: git writes 50 by default, and older
 * `git gc --aggressive` wrote 250. */
#define EXPORT_PACK_DEPTH_MAX 250
/* Most objects in one pack. */
#define EXPORT_PACK_OBJECTS_MAX 5000000u
/* The fewest bytes one entry takes: a one-byte type and size, then the
 * shortest zlib stream (2 bytes of header, an empty fixed-Huffman final
 * block in 2, the Adler-32 in 4). */
#define EXPORT_PACK_ENTRY_MIN 9u

struct export_pack_limits {
	uint64_t object_max;  /* what git holds whole: a commit, tree or tag, a delta, its base, its result */
	uint64_t total_max;   /* sum over the entries of their inflated size, and of each delta's result */
	uint32_t depth_max;   /* deepest OFS_DELTA chain (a REF_DELTA's base counts as depth 0) */
	uint32_t objects_max; /* most entries */
	unsigned hash_len;    /* 20 (SHA-1) or 32 (SHA-256): REF_DELTA bases and the trailer */
	uint64_t pack_bytes;  /* exact bytes the reader gives, the trailer included; 0 = not known */
	int64_t deadline_ms;  /* clock_monotonic_ms() instant to give up at (TIMEOUT); 0 = none */
};

struct export_pack_stats {
	uint32_t objects;    /* entries */
	uint32_t deltas;     /* OFS_DELTA and REF_DELTA entries */
	uint32_t ref_deltas; /* REF_DELTA entries (bases named by id, outside or inside the pack) */
	uint32_t max_depth;  /* deepest OFS_DELTA chain seen */
	uint64_t total;      /* sum of the inflated sizes and of the deltas' results */
	uint64_t largest;    /* largest object held whole (see object_max) */
	uint64_t inflated;   /* bytes this check inflated (entries as stored: deltas as delta data) */
};

/* Where the pack's bytes come from: read up to n bytes into buf; returns
 * how many (0 at the end), or -1 with errno set. */
typedef ssize_t (*export_pack_read_fn)(void *ctx, void *buf, size_t n);

/* Reads a whole git pack (gitformat-pack(5): "PACK", version 2 or 3, the
 * entry count, the entries, the trailing hash) from read, 64 KiB at a time
 * and never more than that and one zlib window in memory (plus 10 bytes
 * per entry for the OFS_DELTA bases), and judges what it declares before
 * git inflates anything: each entry's type and size varint, OFS_DELTA
 * offsets (to an earlier entry's start) and REF_DELTA base ids, and each
 * zlib stream inflated into a discard buffer to find its end, which must
 * produce exactly the declared size (a delta: its header's base and result
 * sizes are read on the way). Refuses with LIMIT, naming the bound, when
 * an object held whole or a delta's base or result declares more than
 * object_max, the inflated sizes add up past total_max, an OFS_DELTA chain
 * is deeper than depth_max, or the entry count is more than objects_max or
 * than pack_bytes can hold at EXPORT_PACK_ENTRY_MIN each; with DENIED for
 * anything malformed or truncated (a bad header, type or varint, an offset
 * outside the pack or not at an entry, a zlib error, bytes after the
 * trailer); TIMEOUT past deadline_ms; UNAVAILABLE when read fails. The
 * trailer's hash is not checked (git index-pack does). *ret (may be NULL)
 * on success. No side effect but reading and the clock. */
int export_pack_check(export_pack_read_fn read, void *ctx, const struct export_pack_limits *lim,
                      struct export_pack_stats *ret, struct cp_error **err);

/* export_pack_check over fd (borrowed) from its current offset; when
 * lim->pack_bytes is 0 and fd is a regular file, the bytes from there to
 * its end are the pack. */
int export_pack_check_fd(int fd, const struct export_pack_limits *lim, struct export_pack_stats *ret,
                         struct cp_error **err);

/* export_pack_check over len bytes at data (borrowed), handed out at most
 * chunk bytes at a time (0: as many as asked), for tests and the fuzz
 * harness, which check that no split changes the verdict. */
int export_pack_check_buffer(const void *data, size_t len, size_t chunk, const struct export_pack_limits *lim,
                             struct export_pack_stats *ret, struct cp_error **err);

/* The limits a save and an apply use: object_max a quarter of the memory
 * ceiling of host git (memory_bytes, CHAT2SBX_SAVE_MEMORY_BYTES), so a
 * delta, its base and its result fit in it with git's own caches;
 * total_max four times the largest save (max_input_bytes,
 * CHAT2SBX_MAX_EXPORT_BYTES); EXPORT_PACK_DEPTH_MAX and
 * EXPORT_PACK_OBJECTS_MAX; hash_len from the bundle's oid_hex (40 or 64).
 * Pure. */
struct export_pack_limits export_pack_limits_for(uint64_t memory_bytes, uint64_t max_input_bytes, int oid_hex);

#endif
