/* store_fixture.c: see store_fixture.h. */
#include "store_fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

#include "store/store.h"

char store_fx_dir[64];
char store_fx_db[128];

void store_fx_setup(void)
{
	snprintf(store_fx_dir, sizeof(store_fx_dir), "/tmp/c2s-store-XXXXXX");
	cr_assert_not_null(mkdtemp(store_fx_dir));
	snprintf(store_fx_db, sizeof(store_fx_db), "%s/reg.sqlite", store_fx_dir);
}

void store_fx_teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", store_fx_dir);
	cr_assert_eq(system(cmd), 0);
}

void store_fx_exec(sqlite3 *d, const char *sql)
{
	char *msg = NULL;
	cr_assert_eq(sqlite3_exec(d, sql, NULL, NULL, &msg), SQLITE_OK, "%s: %s", sql, msg ? msg : "");
}

sqlite3 *store_fx_at_version(int version)
{
	sqlite3 *d = NULL;
	cr_assert_eq(sqlite3_open(store_fx_db, &d), SQLITE_OK);
	store_fx_exec(d, "PRAGMA foreign_keys=ON");
	store_fx_exec(d, "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
	                 "applied_at_ms INTEGER NOT NULL)");
	for (size_t i = 0; i < store_migrations_count && store_migrations[i].version <= version; i++) {
		store_fx_exec(d, store_migrations[i].sql);
		char ins[200];
		snprintf(ins, sizeof ins, "INSERT INTO schema_migrations VALUES (%d, '%s', 1)",
		         store_migrations[i].version, store_migrations[i].name);
		store_fx_exec(d, ins);
	}
	return d;
}
