/* test_lifecycle_channel_owner.c: one process uses a sandbox's helper at a
 * time (lifecycle_channel_own, channels.c). The lock another chat2sbx
 * process holds (here: another open file description flocking the same
 * file, as another process would) makes own answer 0, so serve's re-attach
 * pass leaves that sandbox alone; the one this process holds answers 1
 * again without a second lock; dropping the entry removes the file. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include "lifecycle_fixture.h"

TestSuite(lifecycle_channel_owner, .fini = lc_fixture_teardown, .timeout = 30);

static void owner_file(const char *id, char *buf, size_t size)
{
	snprintf(buf, size, "%s/attach/%s", fx.cfg.state_dir, id);
}

Test(lifecycle_channel_owner, another_holder_is_seen_and_ours_is_kept_until_the_drop)
{
	lc_fixture_init("owner");
	fx.cfg.state_dir = fx.data_root;
	lc_fixture_start(NULL, 0);
	char path[4096];
	cr_assert_eq(lifecycle_channel_own(fx.lc, "sbx_a"), 1, "nobody holds it: this process takes it");
	cr_assert_eq(lifecycle_channel_own(fx.lc, "sbx_a"), 1, "held by this process: still ours");
	owner_file("sbx_a", path, sizeof(path));
	int other = open(path, O_RDWR | O_CLOEXEC);
	cr_assert_geq(other, 0);
	cr_expect_neq(flock(other, LOCK_EX | LOCK_NB), 0, "another process cannot take the lock we hold");
	close(other);

	/* Another process holds sbx_b. */
	cr_assert_eq(lifecycle_channel_own(fx.lc, "sbx_c"), 1); /* makes the directory */
	owner_file("sbx_b", path, sizeof(path));
	int theirs = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	cr_assert_geq(theirs, 0);
	cr_assert_eq(flock(theirs, LOCK_EX | LOCK_NB), 0);
	cr_expect_eq(lifecycle_channel_own(fx.lc, "sbx_b"), 0, "another process uses sbx_b's helper");
	close(theirs); /* that process is done */
	cr_expect_eq(lifecycle_channel_own(fx.lc, "sbx_b"), 1);

	/* The drop releases the lock and removes the file. */
	lifecycle_channel_drop(fx.lc, "sbx_a");
	owner_file("sbx_a", path, sizeof(path));
	cr_expect_neq(access(path, F_OK), 0, "the drop removed the owner file");
}
