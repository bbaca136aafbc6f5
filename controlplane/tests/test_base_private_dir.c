/* test_base_private_dir.c: the data root, state and workspace directories
 * (base/private_dir.c): made with the exact mode, tightened when looser,
 * and refused, untouched, when another uid owns them or they are no
 * directory. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/error.h"
#include "base/private_dir.h"

static char top[64];

static void setup(void)
{
	snprintf(top, sizeof(top), "/tmp/c2s-privdir-XXXXXX");
	cr_assert_not_null(mkdtemp(top));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(private_dir, .init = setup, .fini = teardown);

static mode_t mode_of(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "%s", path);
	return st.st_mode & 07777;
}

Test(private_dir, created_then_tightened_then_left)
{
	char path[128], what[256];
	struct cp_error *err = NULL;
	snprintf(path, sizeof(path), "%s/state", top);
	umask(022);
	cr_assert_eq(private_dir_ensure(path, 0700, what, sizeof(what), &err), 1);
	cr_assert(strstr(what, "created"), "%s", what);
	cr_assert_eq(mode_of(path), 0700);
	cr_assert_eq(chmod(path, 0777), 0);
	cr_assert_eq(private_dir_ensure(path, 0700, what, sizeof(what), &err), 1);
	cr_assert(strstr(what, "0777 -> 0700"), "%s", what);
	cr_assert_eq(mode_of(path), 0700);
	cr_assert_eq(private_dir_ensure(path, 0700, NULL, 0, &err), 0);
	cr_assert_null(err);
}

Test(private_dir, another_users_directory_is_refused_untouched)
{
	if (geteuid() != 0)
		cr_skip_test("only root can give a directory to another uid");
	char path[128];
	struct cp_error *err = NULL;
	snprintf(path, sizeof(path), "%s/theirs", top);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(chmod(path, 0777), 0);
	cr_assert_eq(chown(path, 4321, 4321), 0);
	cr_assert_eq(private_dir_ensure(path, 0700, NULL, 0, &err), -1);
	cr_assert(strstr(err->message, "belongs to uid 4321"), "%s", err->message);
	cr_assert(strstr(err->message, "CHAT2SBX_DATA_ROOT"), "%s", err->message);
	cp_error_free(err);
	cr_assert_eq(mode_of(path), 0777, "refused means left as it was");
}

Test(private_dir, a_file_is_no_directory)
{
	char path[128];
	struct cp_error *err = NULL;
	snprintf(path, sizeof(path), "%s/file", top);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	cr_assert_eq(private_dir_ensure(path, 0700, NULL, 0, &err), -1);
	cr_assert(strstr(err->message, "not a directory"), "%s", err->message);
	cp_error_free(err);
}
