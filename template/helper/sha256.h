/* sha256.h: SHA-256 (FIPS 180-4) for file content hashes. The helper is
 * linked statically with libc and json-c only, so it carries its own. */
#ifndef CHAT2SBX_HELPER_SHA256_H
#define CHAT2SBX_HELPER_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t length;
	unsigned char block[64];
	size_t used;
};

/* Start a hash. */
void sha256_init(struct sha256 *c);
/* Add n bytes of data (borrowed). */
void sha256_update(struct sha256 *c, const void *data, size_t n);
/* Finish: write 64 lowercase hex digits and a NUL into hex. */
void sha256_final_hex(struct sha256 *c, char hex[65]);

#endif
