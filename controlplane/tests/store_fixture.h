/* store_fixture.h: a registry file in a temporary directory for the
 * store's tests (store_fx_setup makes the directory, store_fx_teardown
 * removes it with what is in it), and a registry as an older release left
 * it: the migrations up to a version applied and recorded, for a test of
 * what a later migration does to its rows. */
#ifndef CHAT2SBX_TESTS_STORE_FIXTURE_H
#define CHAT2SBX_TESTS_STORE_FIXTURE_H

#include <sqlite3.h>

extern char store_fx_dir[64]; /* the temporary directory */
extern char store_fx_db[128]; /* store_fx_dir/reg.sqlite, not made */

/* Criterion .init and .fini of a suite. */
void store_fx_setup(void);
void store_fx_teardown(void);
/* Runs sql on d; the test fails with sqlite's message otherwise. */
void store_fx_exec(sqlite3 *d, const char *sql);
/* Makes store_fx_db a registry at version (migrations 1..version applied
 * and recorded in schema_migrations, foreign keys on) and returns it open;
 * the caller adds its rows and closes it (sqlite3_close). */
sqlite3 *store_fx_at_version(int version);

#endif
