/* test_store_stmt.c: the status string tables (round trip, unknown text) and
 * the statement helper: a statement is finalized on every exit path and the
 * lock guard releases the lock after the statement is gone. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "store/store_internal.h"

Test(status, sandbox_round_trip)
{
	for (int i = 0; i < _SANDBOX_STATUS_MAX; i++) {
		const char *s = sandbox_status_to_string(i);
		cr_assert_not_null(s, "status %d has no string", i);
		cr_assert_eq(sandbox_status_from_string(s), i);
		cr_assert(sandbox_status_is(s, i));
	}
	cr_assert_str_eq(sandbox_status_to_string(SANDBOX_RUNNING), "running");
	cr_assert_str_eq(sandbox_status_to_string(SANDBOX_REMOVING), "removing");
}

Test(status, sandbox_unknown)
{
	cr_assert_lt(sandbox_status_from_string("paused"), 0);
	cr_assert_lt(sandbox_status_from_string("Running"), 0);
	cr_assert_lt(sandbox_status_from_string(""), 0);
	cr_assert_lt(sandbox_status_from_string(NULL), 0);
	cr_assert_null(sandbox_status_to_string(_SANDBOX_STATUS_MAX));
	cr_assert_null(sandbox_status_to_string(-1));
	cr_assert_not(sandbox_status_is(NULL, SANDBOX_RUNNING));
	cr_assert_not(sandbox_status_is("failed", SANDBOX_RUNNING));
}

Test(status, approval_round_trip_and_unknown)
{
	for (int i = 0; i < _APPROVAL_STATUS_MAX; i++) {
		const char *s = approval_status_to_string(i);
		cr_assert_not_null(s);
		cr_assert_eq(approval_status_from_string(s), i);
	}
	cr_assert_str_eq(approval_status_to_string(APPROVAL_PENDING), "pending");
	cr_assert_lt(approval_status_from_string("denied"), 0);
	cr_assert_lt(approval_status_from_string(NULL), 0);
	cr_assert_null(approval_status_to_string(_APPROVAL_STATUS_MAX));
}

static char dir[64], db[128];
static struct store *st;

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-stmt-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &st, &err), 0, "%s", err ? err->message : "");
}

static void teardown(void)
{
	store_free(st);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

/* Leaves by the path `exit_at` names: 0 prepare fails, 1 after prepare,
 * 2 after one step, 3 after all rows. Holds the lock while it runs. */
static int query(int exit_at, int *ret_rows, struct cp_error **err)
{
	_cleanup_store_unlock_ struct store *locked = store_lock(st);
	_cleanup_stmt_ sqlite3_stmt *s = NULL;
	if (store_prepare(locked, &s, exit_at == 0 ? "SELECT nonsense FROM nowhere" : "SELECT 1 UNION ALL SELECT 2",
	                  "test query", err) < 0)
		return -1;
	/* still held here, and the statement is live */
	cr_assert_not_null(sqlite3_next_stmt(locked->db, NULL));
	cr_assert_neq(pthread_mutex_trylock(&locked->lock), 0);
	if (exit_at == 1)
		return 1;
	int rows = 0;
	while (sqlite3_step(s) == SQLITE_ROW) {
		rows++;
		if (exit_at == 2)
			return 2;
	}
	*ret_rows = rows;
	return 3;
}

static void assert_released(void)
{
	cr_assert_null(sqlite3_next_stmt(st->db, NULL), "a statement was left unfinalized");
	cr_assert_eq(pthread_mutex_trylock(&st->lock), 0, "the lock was left held");
	pthread_mutex_unlock(&st->lock);
}

Test(store_stmt, finalized_on_every_path, .init = setup, .fini = teardown)
{
	struct cp_error *err = NULL;
	int rows = 0;
	cr_assert_eq(query(0, &rows, &err), -1);
	cr_assert_not_null(err);
	cr_assert(strstr(err->message, "test query") != NULL, "%s", err->message);
	cp_error_free(err);
	assert_released();
	for (int path = 1; path <= 3; path++) {
		cr_assert_eq(query(path, &rows, NULL), path);
		assert_released();
	}
	cr_assert_eq(rows, 2);
}
