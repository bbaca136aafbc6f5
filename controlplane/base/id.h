/* id.h: identifiers for registry objects: a prefix ("sbx_", "ws_", "bash_",
 * "approval_") followed by 20 lowercase base32 characters (100 bits) from
 * getrandom(2). DESIGN.md, Registry. */
#ifndef CP_ID_H
#define CP_ID_H

#include <stddef.h>

#include "error.h"

#define ID_RANDOM_CHARS 20

/* Writes a new id "<prefix><20 base32 chars>" into *ret_id (caller frees).
 * Fails with INTERNAL when the kernel's random source fails. Never blocks
 * after early boot. */
int id_new(const char *prefix, char **ret_id, struct cp_error **err);

/* Fills buf with n bytes from the kernel's random source (getrandom(2),
 * the same source as ids; for secrets such as the MCP token). Fails with
 * INTERNAL when the source fails. Never blocks after early boot. */
int id_random_bytes(void *buf, size_t n, struct cp_error **err);

/* True when s is prefix followed by exactly ID_RANDOM_CHARS base32 chars
 * (used to refuse malformed ids before any lookup). */
int id_valid(const char *s, const char *prefix);

#endif
