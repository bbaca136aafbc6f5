/* sha256.h: SHA-256 content hashes (file.read, file.write and file.edit
 * preconditions) as 64 lowercase hex digits. The hash itself is Debian's
 * nettle (libnettle.a, linked statically into the helper); this header
 * only spells its digest in hex. */
#ifndef CHAT2SBX_HELPER_SHA256_H
#define CHAT2SBX_HELPER_SHA256_H

#include <nettle/sha2.h>
#include <stddef.h>

/* Finish c (nettle's sha256_ctx after sha256_init and sha256_update; it
 * is reset for reuse) and write 64 lowercase hex digits and a NUL into hex. */
static inline void sha256_final_hex(struct sha256_ctx *c, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_digest(c, sizeof d, d);
	for (size_t i = 0; i < sizeof d; i++) {
		hex[2 * i] = digits[d[i] >> 4];
		hex[2 * i + 1] = digits[d[i] & 15];
	}
	hex[2 * sizeof d] = '\0';
}

/* The hex digest of data[0..n) (borrowed) into hex. */
static inline void sha256_hex(const void *data, size_t n, char hex[65])
{
	struct sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, n, data);
	sha256_final_hex(&c, hex);
}

#endif
