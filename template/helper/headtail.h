/* headtail.h: what an answer shows of output too long for its bound. The
 * bytes in between are left out of the answer, never out of the log: the
 * answer says which log bytes they are and how to read them (proto.h,
 * Snapshot, "Head and tail"). Pure functions over bytes the caller read. */
#ifndef CHAT2SBX_HELPER_HEADTAIL_H
#define CHAT2SBX_HELPER_HEADTAIL_H

#include <stddef.h>
#include <stdint.h>

/* Bounds below this (bytes) are too small to split: the answer keeps plain
 * cursor delivery. */
#define HEADTAIL_MIN_BOUND 64

/* How many bytes (raw log bytes) of a max-byte answer go to the tail: half
 * when the answer shows head and tail of the whole rest (done), an eighth
 * (the newest lines beside cursor delivery) otherwise. 0 when max is below
 * HEADTAIL_MIN_BOUND. */
size_t headtail_tail_budget(size_t max, int whole_rest);

/* Where the shown tail starts in buf[0..n), the last n bytes before some
 * offset: past any UTF-8 continuation bytes at the start (at most 3, so a
 * character is never split), then at the start of the next line when a
 * '\n' lies in buf[0..within) (so the tail shows whole lines and a
 * carriage-return progress line is collapsed whole). A head-and-tail answer
 * passes n / 2 (a long last line still shows), the newest lines n - 1 (any
 * line start but the end). Returns the number of bytes to skip (< n when
 * n > 0). */
size_t headtail_tail_skip(const unsigned char *buf, size_t n, size_t within);

/* The marker put between head and tail (a newly allocated NUL-terminated
 * string the caller frees; allocation aborts on failure, xalloc.h): says
 * how many bytes were left out, their log offsets [start, end) of total,
 * and how to read them from log_path. lead_newline: the head did not end
 * with '\n'. */
char *headtail_marker(uint64_t start, uint64_t end, uint64_t total, const char *log_path, int lead_newline);

#endif
