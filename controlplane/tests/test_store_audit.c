/* test_store_audit.c: reading the audit table back for the page's Activity
 * view (store_audit_list): newest first, paged without gaps or repeats,
 * filtered by sandbox and by action exactly, the limit bounded. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store.h"

static char dir[64], db[128];
static struct store *s;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-audit-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &s, &err), 0, "%s", err ? err->message : "");
}

static void teardown(void)
{
	store_free(s);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(store_audit, .init = setup, .fini = teardown);

/* 30 rows: i = 0..29 at 1000 + i ms (rows 10 and 11 at the same ms, to
 * check the id breaks ties), sandbox sbx_a for even i, sbx_b for odd,
 * action "bash" for i % 3 == 0, "sandbox_create" otherwise. */
static void fill(void)
{
	for (int i = 0; i < 30; i++) {
		char msg[32];
		snprintf(msg, sizeof(msg), "row %d", i);
		struct audit_record a = {.at_ms = 1000 + (i == 11 ? 10 : i),
		                         .actor = i % 2 ? "mcp" : "ui",
		                         .action = i % 3 ? "sandbox_create" : "bash",
		                         .sandbox_id = i % 2 ? "sbx_b" : "sbx_a",
		                         .target = i == 7 ? NULL : "t",
		                         .status = "ok",
		                         .duration_ms = i,
		                         .message = msg};
		struct cp_error *err = NULL;
		cr_assert_eq(store_audit_insert(s, &a, &err), 0, "%s", err ? err->message : "");
	}
}

static void free_rows(struct audit_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		audit_row_clear(&rows[i]);
	free(rows);
}

Test(store_audit, newest_first_and_pages_cover_every_row_once)
{
	fill();
	int seen[30] = {0};
	int64_t last_at = INT64_MAX, last_id = INT64_MAX;
	for (int64_t off = 0; off < 40; off += 7) {
		struct audit_row *rows = NULL;
		size_t n = 0;
		struct cp_error *err = NULL;
		cr_assert_eq(store_audit_list(s, NULL, off, 7, &rows, &n, &err), 0, "%s", err ? err->message : "");
		cr_expect_eq(n, off + 7 <= 30 ? 7 : (off < 30 ? (size_t)(30 - off) : 0), "page at %lld",
		             (long long)off);
		for (size_t i = 0; i < n; i++) {
			int k = -1;
			cr_assert_eq(sscanf(rows[i].message, "row %d", &k), 1);
			cr_assert(k >= 0 && k < 30);
			seen[k]++;
			cr_expect(rows[i].at_ms < last_at || (rows[i].at_ms == last_at && rows[i].id < last_id),
			          "newest first: row %d", k);
			last_at = rows[i].at_ms;
			last_id = rows[i].id;
			cr_expect_eq(rows[i].duration_ms, k);
			cr_expect_str_eq(rows[i].actor, k % 2 ? "mcp" : "ui");
			if (k == 7)
				cr_expect_null(rows[i].target, "a NULL target reads back NULL");
		}
		free_rows(rows, n);
	}
	for (int k = 0; k < 30; k++)
		cr_expect_eq(seen[k], 1, "row %d seen %d times", k, seen[k]);
}

Test(store_audit, filters_by_sandbox_and_action_exactly)
{
	fill();
	struct audit_row *rows = NULL;
	size_t n = 0;
	struct cp_error *err = NULL;
	struct audit_filter f = {.sandbox_id = "sbx_a", .action = "bash"};
	cr_assert_eq(store_audit_list(s, &f, 0, 100, &rows, &n, &err), 0);
	/* even and a multiple of 3: 0, 6, 12, 18, 24 */
	cr_expect_eq(n, 5);
	for (size_t i = 0; i < n; i++) {
		cr_expect_str_eq(rows[i].sandbox_id, "sbx_a");
		cr_expect_str_eq(rows[i].action, "bash");
	}
	free_rows(rows, n);

	f = (struct audit_filter){.sandbox_id = "sbx_b"};
	cr_assert_eq(store_audit_list(s, &f, 0, 100, &rows, &n, &err), 0);
	cr_expect_eq(n, 15);
	free_rows(rows, n);

	/* No pattern matching: a LIKE wildcard or a prefix is not a match. */
	const char *not_actions[] = {"%", "bas", "bash%", "BASH", "_ash"};
	for (size_t i = 0; i < sizeof(not_actions) / sizeof(not_actions[0]); i++) {
		f = (struct audit_filter){.action = not_actions[i]};
		cr_assert_eq(store_audit_list(s, &f, 0, 100, &rows, &n, &err), 0);
		cr_expect_eq(n, 0, "action '%s' matched %zu rows", not_actions[i], n);
		cr_expect_null(rows);
		free_rows(rows, n);
	}
	f = (struct audit_filter){.sandbox_id = "sbx_'; DROP TABLE audit; --"};
	cr_assert_eq(store_audit_list(s, &f, 0, 100, &rows, &n, &err), 0);
	cr_expect_eq(n, 0);
	cr_assert_eq(store_audit_list(s, NULL, 0, 100, &rows, &n, &err), 0);
	cr_expect_eq(n, 30, "the table is still there");
	free_rows(rows, n);
}

Test(store_audit, the_limit_and_offset_are_bounded)
{
	fill();
	struct audit_row *rows = NULL;
	size_t n = 0;
	const struct {
		int64_t off;
		size_t limit;
	} bad[] = {{0, 0}, {0, STORE_AUDIT_LIST_MAX + 1}, {-1, 10}, {0, (size_t)-1}};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cp_error *err = NULL;
		cr_expect_eq(store_audit_list(s, NULL, bad[i].off, bad[i].limit, &rows, &n, &err), -1, "case %zu", i);
		cr_assert_not_null(err);
		cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cr_expect_null(rows);
		cp_error_free(err);
	}
	struct cp_error *err = NULL;
	cr_assert_eq(store_audit_list(s, NULL, 0, STORE_AUDIT_LIST_MAX, &rows, &n, &err), 0);
	cr_expect_eq(n, 30);
	free_rows(rows, n);
	cr_assert_eq(store_audit_list(s, NULL, INT64_MAX, 5, &rows, &n, &err), 0, "past the end is empty");
	cr_expect_eq(n, 0);
	free_rows(rows, n);
}
