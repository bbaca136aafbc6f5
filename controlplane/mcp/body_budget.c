/* body_budget.c: one counter of the request-body bytes held at once by all
 * HTTP connections (security review, defect 4: sixteen concurrent 19.5 MB
 * bodies took serve to 814 MB). http.c reserves before it buffers and
 * releases when the buffer is freed; a reservation that would pass the limit
 * is refused, and the request gets 503 without being buffered. It also says
 * when enough large bodies were freed that malloc_trim is worth calling, so
 * RSS returns after a burst. Pure accounting: no I/O, no allocation. */
#include "internal.h"

/* After this many released bytes, http.c calls malloc_trim(0) once: often
 * enough that RSS comes back after a burst of large writes, rarely enough
 * that small requests never pay for it. */
#define TRIM_AFTER_BYTES ((size_t)16 * 1024 * 1024)

void mcp_body_budget_init(struct mcp_body_budget *b, size_t limit)
{
	pthread_mutex_init(&b->lock, NULL);
	b->limit = limit;
	b->used = 0;
	b->released = 0;
}

void mcp_body_budget_destroy(struct mcp_body_budget *b)
{
	pthread_mutex_destroy(&b->lock);
}

int mcp_body_budget_reserve(struct mcp_body_budget *b, size_t n)
{
	int ok;
	pthread_mutex_lock(&b->lock);
	ok = n <= b->limit && b->used <= b->limit - n;
	if (ok)
		b->used += n;
	pthread_mutex_unlock(&b->lock);
	return ok ? 0 : -1;
}

int mcp_body_budget_release(struct mcp_body_budget *b, size_t n)
{
	int trim = 0;
	pthread_mutex_lock(&b->lock);
	b->used = n <= b->used ? b->used - n : 0;
	b->released += n;
	if (b->released >= TRIM_AFTER_BYTES) {
		b->released = 0;
		trim = 1;
	}
	pthread_mutex_unlock(&b->lock);
	return trim;
}

size_t mcp_body_budget_used(struct mcp_body_budget *b)
{
	pthread_mutex_lock(&b->lock);
	size_t used = b->used;
	pthread_mutex_unlock(&b->lock);
	return used;
}
