/* test_fsstat.c: fs.stat (fsstat.c): the identity of a directory, a symlink
 * reported as one (never followed), relative paths and missing paths
 * refused. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../fsstat.h"

static json_object *call(const char *path, struct rpc_error *err)
{
	json_object *p = json_object_new_object();
	if (path)
		json_object_object_add(p, "path", json_object_new_string(path));
	json_object *res = NULL;
	int r = fsstat_rpc(NULL, p, &res, err);
	json_object_put(p);
	return r == 0 ? res : NULL;
}

static int64_t field(json_object *o, const char *k)
{
	json_object *v = NULL;
	cr_assert(json_object_object_get_ex(o, k, &v), "%s", k);
	return json_object_get_int64(v);
}

Test(fsstat, directory_identity_and_symlink_not_followed)
{
	char dir[] = "/tmp/chat2sbx-fsstat-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct stat st;
	cr_assert_eq(stat(dir, &st), 0);
	struct rpc_error err = {0};
	json_object *r = call(dir, &err);
	cr_assert_not_null(r, "%s", err.message);
	cr_assert_eq(field(r, "dev_major"), (int64_t)major(st.st_dev));
	cr_assert_eq(field(r, "dev_minor"), (int64_t)minor(st.st_dev));
	cr_assert_eq(field(r, "ino"), (int64_t)st.st_ino);
	json_object *t = NULL;
	cr_assert(json_object_object_get_ex(r, "type", &t));
	cr_assert_str_eq(json_object_get_string(t), "directory");
	json_object_put(r);

	char link[64];
	snprintf(link, sizeof link, "%s/l", dir);
	cr_assert_eq(symlink("/", link), 0);
	r = call(link, &err);
	cr_assert_not_null(r, "%s", err.message);
	cr_assert(json_object_object_get_ex(r, "type", &t));
	cr_assert_str_eq(json_object_get_string(t), "symlink");
	struct stat lst;
	cr_assert_eq(lstat(link, &lst), 0);
	cr_assert_eq(field(r, "ino"), (int64_t)lst.st_ino);
	json_object_put(r);
	unlink(link);
	rmdir(dir);
}

Test(fsstat, refuses_relative_and_missing)
{
	struct rpc_error err = {0};
	cr_assert_null(call("workspace", &err));
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert_null(call(NULL, &err));
	cr_assert_null(call("/nonexistent-chat2sbx-fsstat", &err));
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
}

Test(fsstat, mounts_returns_this_process_mount_table)
{
	json_object *p = json_object_new_object();
	json_object *res = NULL;
	struct rpc_error err = {0};
	cr_assert_eq(fsmounts_rpc(NULL, p, &res, &err), 0, "%s", err.message);
	json_object_put(p);
	json_object *m = NULL;
	cr_assert(json_object_object_get_ex(res, "mountinfo", &m));
	const char *text = json_object_get_string(m);
	/* The root mount is always listed: "ID PARENT MAJ:MIN ROOT / ...". */
	FILE *f = fopen("/proc/self/mountinfo", "r");
	cr_assert_not_null(f);
	char first[512];
	cr_assert_not_null(fgets(first, sizeof first, f));
	fclose(f);
	cr_assert_not_null(strstr(text, first), "the first line of /proc/self/mountinfo is in the answer");
	json_object_put(res);
}
