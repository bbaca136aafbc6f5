/* headtail.c: head and tail of long output (headtail.h). */
#include "headtail.h"

#include <inttypes.h>
#include <string.h>

#include "xalloc.h"

size_t headtail_tail_budget(size_t max, int whole_rest)
{
	if (max < HEADTAIL_MIN_BOUND)
		return 0;
	return whole_rest ? max / 2 : max / 8;
}

size_t headtail_tail_skip(const unsigned char *buf, size_t n, size_t within)
{
	size_t skip = 0;
	while (skip + 1 < n && skip < 3 && (buf[skip] & 0xC0) == 0x80)
		skip++;
	if (within > n)
		within = n;
	const unsigned char *nl = within > skip ? memchr(buf + skip, '\n', within - skip) : NULL;
	if (nl)
		skip = (size_t)(nl - buf) + 1;
	return skip;
}

char *headtail_marker(uint64_t start, uint64_t end, uint64_t total, const char *log_path, int lead_newline)
{
	return xasprintf("%s[... %" PRIu64 " bytes left out here: bytes %" PRIu64 " to %" PRIu64 " of %" PRIu64
	                 " in %s; read them with bash: tail -c +%" PRIu64 " %s | head -c %" PRIu64
	                 " (or read that file with offset/limit) ...]\n",
	                 lead_newline ? "\n" : "", end - start, start, end, total, log_path, start + 1, log_path,
	                 end - start);
}
