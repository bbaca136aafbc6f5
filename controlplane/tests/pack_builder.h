/* pack_builder.h: git packs made byte by byte for the tests of the pack
 * check (test_export_pack.c): honest ones, and the hostile shapes it must
 * refuse (chained deltas, lying sizes, truncations). Trailers are zeros:
 * the check does not read them (git index-pack does). */
#ifndef CP_TEST_PACK_BUILDER_H
#define CP_TEST_PACK_BUILDER_H

#include <stddef.h>
#include <stdint.h>

struct pack {
	unsigned char *data;
	size_t len, cap;
	size_t *starts; /* offset of each entry added */
	size_t n;
};

/* "PACK", version 2, n_declared objects. */
void pack_begin(struct pack *p, uint32_t n_declared);
/* A plain object (type 1-4) declaring size bytes, whose zlib stream holds
 * data (len bytes; size may lie). */
void pack_plain(struct pack *p, int type, uint64_t size, const void *data, size_t len);
/* An OFS_DELTA on the entry number base (0-based), with delta data. */
void pack_ofs(struct pack *p, size_t base, const void *delta, size_t len);
/* A REF_DELTA on the object id oid (20 bytes), with delta data. */
void pack_ref(struct pack *p, const unsigned char *oid, const void *delta, size_t len);
/* The 20-byte trailer. */
void pack_end(struct pack *p);
void pack_free(struct pack *p);

/* Delta data that copies its base (base_size bytes) times times: the
 * header's sizes, then copy instructions of at most 64 KiB. Caller frees;
 * *ret_len its length. */
unsigned char *delta_copies(uint64_t base_size, unsigned times, size_t *ret_len);

/* Writes len bytes to a new temporary file and returns its descriptor,
 * at offset 0 (unlinked already). */
int pack_tmpfile(const void *data, size_t len);

#endif
