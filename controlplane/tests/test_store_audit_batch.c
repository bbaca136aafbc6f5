/* test_store_audit_batch.c: the audit rows written in batches
 * (store/audit_batch.c, issue 27): a queued row is in the table after a
 * flush, after its delay or once its batch is full, never lost (a full
 * queue is written by its caller, store_free writes what waits), and a row
 * that cannot be written is reported to the missed callback, not dropped
 * silently. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/store_internal.h"

static char dir[64], db[128];
static struct store *s;
static atomic_int missed;
static char missed_code[32];

static void on_missed(const char *action, const struct cp_error *e)
{
	(void)action;
	atomic_fetch_add(&missed, 1);
	snprintf(missed_code, sizeof(missed_code), "%s", cp_error_code_name(e->code));
}

static void setup(void)
{
	atomic_store(&missed, 0);
	missed_code[0] = '\0';
	snprintf(dir, sizeof(dir), "/tmp/c2s-abatch-XXXXXX");
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

TestSuite(store_audit_batch, .init = setup, .fini = teardown);

static void start(size_t max_rows, long delay_ms, size_t bound)
{
	struct store_audit_batching b = {
	    .max_rows = max_rows, .delay_ms = delay_ms, .bound = bound, .missed = on_missed};
	cr_assert_eq(store_audit_batching_start(s, &b), 0);
}

/* Rows matching where, read by SQL without flushing first. */
static int64_t written(const char *where)
{
	char sql[256];
	snprintf(sql, sizeof(sql), "SELECT COUNT(*) FROM audit WHERE %s", where);
	_cleanup_store_unlock_ struct store *locked = store_lock(s);
	_cleanup_stmt_ sqlite3_stmt *st = NULL;
	cr_assert_eq(store_prepare(locked, &st, sql, "count", NULL), 0, "%s", sql);
	cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
	return sqlite3_column_int64(st, 0);
}

/* Waits up to 5 s for n rows matching where; returns the last count. */
static int64_t wait_written(const char *where, int64_t n)
{
	int64_t got = 0;
	for (int i = 0; i < 500 && (got = written(where)) < n; i++)
		nanosleep(&(struct timespec){.tv_nsec = 10 * 1000 * 1000}, NULL);
	return got;
}

static void append(const char *action, int64_t ticket, const char *status)
{
	struct audit_record a = {.at_ms = 1000,
	                         .actor = "mcp",
	                         .action = action,
	                         .sandbox_id = "sbx_a",
	                         .status = status,
	                         .duration_ms = 3,
	                         .method = "tools/call",
	                         .session = "abcdefgh"};
	struct cp_error *err = NULL;
	cr_assert_eq(store_audit_append(s, ticket, &a, &err), 0, "%s", err ? err->message : "");
}

Test(store_audit_batch, a_queued_row_is_written_by_a_flush)
{
	start(64, 60000, 4096);
	for (int i = 0; i < 10; i++)
		append("read", 0, "ok");
	cr_assert_eq(written("1"), 0, "queued, not written yet");
	store_audit_flush(s);
	cr_assert_eq(written("action = 'read' AND status = 'ok' AND sandbox_id = 'sbx_a' AND method = 'tools/call' "
	                     "AND session = 'abcdefgh' AND duration_ms = 3"),
	             10);
	int64_t n = 0;
	append("read", 0, "ok");
	cr_assert_eq(store_audit_count(s, "read", &n, NULL), 0);
	cr_assert_eq(n, 11, "a reader of the table flushes first");
	cr_assert_eq(atomic_load(&missed), 0);
}

Test(store_audit_batch, the_writer_writes_after_its_delay_and_when_a_batch_is_full)
{
	start(8, 30, 4096);
	for (int i = 0; i < 3; i++)
		append("late", 0, "ok");
	cr_assert_eq(wait_written("action = 'late'", 3), 3, "written within the delay, nobody flushing");
	store_audit_batching_stop(s);
	start(8, 60000, 4096);
	for (int i = 0; i < 8; i++)
		append("full", 0, "ok");
	cr_assert_eq(wait_written("action = 'full'", 8), 8, "a full batch goes at once");
}

Test(store_audit_batch, a_full_queue_is_written_by_its_caller_and_nothing_is_dropped)
{
	start(4, 60000, 4);
	for (int i = 0; i < 1000; i++)
		append("many", 0, "ok");
	cr_assert_geq(written("action = 'many'"), 1000 - 4, "at most the bound waits");
	store_audit_flush(s);
	cr_assert_eq(written("action = 'many'"), 1000);
	cr_assert_eq(atomic_load(&missed), 0);
}

Test(store_audit_batch, store_free_writes_what_waits)
{
	start(64, 60000, 4096);
	for (int i = 0; i < 5; i++)
		append("last", 0, "ok");
	store_free(s);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &s, &err), 0, "%s", err ? err->message : "");
	cr_assert_eq(written("action = 'last'"), 5, "a clean stop loses no row");
}

Test(store_audit_batch, a_row_that_cannot_be_written_goes_to_missed)
{
	start(64, 60000, 4096);
	cr_assert_eq(store_exec(s, "PRAGMA query_only = 1", "test", NULL), 0);
	for (int i = 0; i < 3; i++)
		append("lost", 0, "ok");
	store_audit_flush(s);
	cr_assert_eq(atomic_load(&missed), 3, "each row is reported");
	cr_assert_eq(store_exec(s, "PRAGMA query_only = 0", "test", NULL), 0);
	store_audit_flush(s);
	cr_assert_eq(written("1"), 0);
}

Test(store_audit_batch, a_finish_is_queued_and_a_missing_row_misses_alone)
{
	start(64, 60000, 4096);
	struct audit_record started = {.at_ms = 1000, .actor = "mcp", .action = "bash", .status = "started"};
	int64_t id = 0;
	cr_assert_eq(store_audit_insert_id(s, &started, &id, NULL), 0);
	append("bash", id, "ok");
	append("bash", id + 100, "ok"); /* no such row */
	append("read", 0, "ok");
	store_audit_flush(s);
	cr_assert_eq(written("action = 'bash' AND status = 'ok' AND sandbox_id = 'sbx_a'"), 1);
	cr_assert_eq(written("action = 'read'"), 1, "the batch went on past the missing row");
	cr_assert_eq(atomic_load(&missed), 1);
	cr_assert_str_eq(missed_code, "NOT_FOUND");
}

static void *appender(void *arg)
{
	(void)arg;
	for (int i = 0; i < 300; i++)
		append("busy", 0, "ok");
	return NULL;
}

Test(store_audit_batch, many_threads_leave_one_row_each)
{
	start(8, 1, 16);
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, appender, NULL), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	store_audit_flush(s);
	cr_assert_eq(written("action = 'busy'"), 1200);
	cr_assert_eq(atomic_load(&missed), 0);
}

Test(store_audit_batch, without_the_writer_a_row_is_written_at_once)
{
	append("now", 0, "ok");
	cr_assert_eq(written("action = 'now'"), 1);
	struct audit_record a = {.status = "ok"};
	struct cp_error *err = NULL;
	cr_assert_lt(store_audit_append(s, 999, &a, &err), 0);
	cr_assert_eq(err->code, CP_ERR_NOT_FOUND);
	cp_error_free(err);
}
