/* policy.h: pure decisions, no I/O: what a request may ask for. Each check
 * returns 0 (allowed) or -1 with *err naming the rule and the value. */
#ifndef CP_POLICY_H
#define CP_POLICY_H

#include <stdint.h>

#include "../base/error.h"

/* Smallest memory limit the engine accepts (Docker: 6 MiB). */
#define POLICY_MEMORY_MIN_BYTES (6LL * 1024 * 1024)
/* Largest accepted (1 TiB), to refuse typos like "4000g". */
#define POLICY_MEMORY_MAX_BYTES (1024LL * 1024 * 1024 * 1024)

/* Parses a memory size as the Docker CLI writes it: digits followed by an
 * optional unit b, k, m, g (binary multiples, case-insensitive, an optional
 * trailing "b" as in "512mb"). "512m" → 536870912. Fails with
 * INVALID_ARGUMENT naming the value and the accepted form and range. */
int policy_memory_parse(const char *text, int64_t *ret_bytes, struct cp_error **err);

/* Clamps a requested yield (ms; negative = absent) to [0, max_ms], default_ms
 * when absent. DESIGN.md, Bash contract. */
int64_t policy_yield_clamp(int64_t requested_ms, int64_t default_ms, int64_t max_ms);

#endif
