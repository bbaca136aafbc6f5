/* Unit tests: where a shown tail starts and what the marker says. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "../bash.h"
#include "../headtail.h"

#define U(s) ((const unsigned char *)(s))

Test(headtail, budgets)
{
	cr_assert_eq(headtail_tail_budget(60000, 1), 30000);
	cr_assert_eq(headtail_tail_budget(60000, 0), 7500);
	cr_assert_eq(headtail_tail_budget(63, 1), 0, "too small a bound is not split");
}

Test(headtail, tail_starts_at_a_line_in_its_first_half)
{
	cr_assert_eq(headtail_tail_skip(U("xyz\nline two\n"), 13, 6), 4);
	/* A newline only in the second half: the window is kept from a
	 * character boundary, so a long last line still shows. */
	cr_assert_eq(headtail_tail_skip(U("abcdefgh\nz"), 10, 5), 0);
	/* The newest lines: any line start but the very end. */
	cr_assert_eq(headtail_tail_skip(U("abcdefgh\nz"), 10, 9), 9);
	cr_assert_eq(headtail_tail_skip(U("abcdefgh\n"), 9, 8), 0);
}

Test(headtail, tail_never_starts_inside_a_character)
{
	/* "é" is C3 A9, "€" is E2 82 AC: a window that starts after their first
	 * byte skips the rest of the character. */
	cr_assert_eq(headtail_tail_skip(U("\xa9"
	                                  "abcdefgh"),
	                                9, 4),
	             1);
	cr_assert_eq(headtail_tail_skip(U("\x82\xac"
	                                  "abcdefgh"),
	                                10, 5),
	             2);
	/* At most 3 continuation bytes are skipped (invalid input beyond that
	 * becomes U+FFFD in the answer). */
	cr_assert_eq(headtail_tail_skip(U("\x80\x80\x80\x80"
	                                  "abcdefgh"),
	                                12, 6),
	             3);
}

Test(headtail, a_collapsed_progress_line_is_whole_in_the_tail)
{
	/* The window starts inside "10%\r20%\r30%\n": the tail starts after it,
	 * at a whole line, so no half progress line is collapsed wrongly. */
	unsigned char buf[] = "%\r20%\r30%\nnext\r40%\rdone\n";
	size_t n = sizeof buf - 1, skip = headtail_tail_skip(buf, n, n / 2);
	cr_assert_eq(skip, 10);
	size_t len = bash_collapse_cr(buf + skip, n - skip);
	cr_assert_eq(len, 5);
	cr_assert_eq(memcmp(buf + skip, "done\n", 5), 0);
}

Test(headtail, marker_says_what_was_left_out_and_how_to_read_it)
{
	char *m = headtail_marker(2000, 299990, 300016, "/tmp/chat2sbx/bash/bash_x.log", 1);
	cr_assert_not_null(m);
	cr_assert_str_eq(m, "\n[... 297990 bytes left out here: bytes 2000 to 299990 of 300016 in "
	                    "/tmp/chat2sbx/bash/bash_x.log; read them with bash: tail -c +2001 "
	                    "/tmp/chat2sbx/bash/bash_x.log | head -c 297990 (or read that file with "
	                    "offset/limit) ...]\n");
	free(m);
	m = headtail_marker(0, 10, 20, "/l", 0);
	cr_assert_eq(m[0], '[', "no blank line when the head ended its line");
	free(m);
}
