/* test_files.c: line selection for file.read and the atomic file.write
 * (files.c): offsets, limits, max_bytes cuts, binary probe, mode kept, no
 * temporary file left after a failure, expected_sha256 conflicts. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../files.h"
#include "../paths.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/chat2sbx-files-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	paths_configure(dir, NULL);
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(files, .init = setup, .fini = teardown);

static char *path_of(const char *name)
{
	static char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static void put(const char *name, const void *data, size_t n)
{
	FILE *f = fopen(path_of(name), "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(data, 1, n, f), n);
	fclose(f);
}

static int sel_read(const char *name, uint64_t offset, uint64_t limit, size_t max_bytes, struct files_selection *sel,
                    struct rpc_error *err)
{
	int fd = open(path_of(name), O_RDONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	int r = files_read_fd(fd, name, offset, limit, max_bytes, sel, err);
	close(fd);
	return r;
}

/* Names in dir that look like our temporary files. */
static int temp_files(void)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d)))
		n += strstr(e->d_name, "chat2sbx-") != NULL;
	closedir(d);
	return n;
}

Test(files, selects_lines_by_offset_and_limit)
{
	put("a.txt", "one\ntwo\nthree\nfour\n", 19);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("a.txt", 2, 2, 1000, &s, &err), 0);
	cr_assert_str_eq(s.content, "two\nthree\n");
	cr_assert_eq(s.start_line, 2);
	cr_assert_eq(s.lines, 2);
	cr_assert_eq(s.total_lines, 4);
	cr_assert(s.truncated);
	cr_assert_eq(s.size, 19);
	cr_assert_not(s.binary);
	free(s.content);

	cr_assert_eq(sel_read("a.txt", 3, 100, 1000, &s, &err), 0);
	cr_assert_str_eq(s.content, "three\nfour\n");
	cr_assert_eq(s.lines, 2);
	cr_assert_not(s.truncated);
	free(s.content);
}

Test(files, last_line_without_newline_counts)
{
	put("b.txt", "x\ny", 3);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("b.txt", 1, 10, 1000, &s, &err), 0);
	cr_assert_str_eq(s.content, "x\ny");
	cr_assert_eq(s.lines, 2);
	cr_assert_eq(s.total_lines, 2);
	cr_assert_not(s.truncated);
	free(s.content);
	cr_assert_eq(sel_read("b.txt", 2, 1, 1000, &s, &err), 0);
	cr_assert_str_eq(s.content, "y");
	free(s.content);
}

Test(files, empty_file_and_offset_past_end)
{
	put("e.txt", "", 0);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("e.txt", 1, 10, 1000, &s, &err), 0);
	cr_assert_str_eq(s.content, "");
	cr_assert_eq(s.total_lines, 0);
	cr_assert_eq(s.lines, 0);
	free(s.content);
	put("c.txt", "1\n2\n", 4);
	cr_assert_eq(sel_read("c.txt", 3, 10, 1000, &s, &err), -1);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert(strstr(err.message, "has 2 lines"), "%s", err.message);
}

Test(files, max_bytes_keeps_whole_lines)
{
	put("m.txt", "aaaa\nbbbb\ncccc\n", 15);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("m.txt", 1, 10, 12, &s, &err), 0);
	cr_assert_str_eq(s.content, "aaaa\nbbbb\n");
	cr_assert_eq(s.lines, 2);
	cr_assert(s.truncated);
	cr_assert_eq(s.total_lines, 3);
	free(s.content);
}

Test(files, long_first_line_is_cut_at_a_character_boundary)
{
	/* "é" is 2 bytes; max_bytes 6 would end inside the third one. */
	put("l.txt", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\nnext\n", 14);
	struct files_selection s;
	struct rpc_error err;
	for (size_t max = 1; max <= 8; max++) {
		cr_assert_eq(sel_read("l.txt", 1, 10, max, &s, &err), 0);
		cr_assert_eq(s.content_len, max / 2 * 2, "max %zu gave %zu bytes", max, s.content_len);
		cr_assert_eq(s.lines, 1);
		cr_assert(s.truncated);
		free(s.content);
	}
}

Test(files, invalid_utf8_is_made_safe)
{
	put("u.txt", "ok\xff\n", 4);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("u.txt", 1, 10, 100, &s, &err), 0);
	cr_assert_str_eq(s.content, "ok\xef\xbf\xbd\n");
	free(s.content);
}

Test(files, nul_in_first_8k_means_binary)
{
	char data[9000];
	memset(data, 'a', sizeof data);
	data[100] = '\0';
	put("bin", data, sizeof data);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("bin", 1, 10, 100, &s, &err), 0);
	cr_assert(s.binary);
	cr_assert_null(s.content);
	cr_assert_eq(s.size, sizeof data);
	/* A NUL after the probe window does not make it binary. */
	data[100] = 'a';
	data[8500] = '\0';
	put("late", data, sizeof data);
	cr_assert_eq(sel_read("late", 1, 10, 100000, &s, &err), 0);
	cr_assert_not(s.binary);
	free(s.content);
}

Test(files, write_creates_with_0644_and_hash)
{
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("new.txt"), "abc", 3, false, NULL, &created, sha, &err), 0);
	cr_assert(created);
	cr_assert_str_eq(sha, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	struct stat st;
	cr_assert_eq(stat(path_of("new.txt"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0644);
	cr_assert_eq(temp_files(), 0);
}

Test(files, write_keeps_mode_of_existing_file)
{
	put("run.sh", "old", 3);
	chmod(path_of("run.sh"), 0751);
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("run.sh"), "#!/bin/sh\n", 10, false, NULL, &created, sha, &err), 0);
	cr_assert_not(created);
	struct stat st;
	cr_assert_eq(stat(path_of("run.sh"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0751);
	cr_assert_eq(st.st_size, 10);
	cr_assert_eq(temp_files(), 0);
}

Test(files, failed_write_keeps_old_content_and_no_temp_file)
{
	put("keep.txt", "precious\n", 9);
	/* Make the write itself fail: a 4 KiB file size limit, EFBIG instead
	 * of SIGXFSZ. This process is the test's own (Criterion forks). */
	signal(SIGXFSZ, SIG_IGN);
	struct rlimit rl = {4096, 4096};
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	static char big[100000];
	memset(big, 'x', sizeof big);
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("keep.txt"), big, sizeof big, false, NULL, &created, sha, &err), -1);
	cr_assert_str_eq(err.data_code, "LIMIT", "%s: %s", err.data_code, err.message);
	cr_assert_eq(temp_files(), 0);
	char buf[32] = {0};
	FILE *f = fopen(path_of("keep.txt"), "r");
	cr_assert_eq(fread(buf, 1, sizeof buf, f), 9);
	fclose(f);
	cr_assert_str_eq(buf, "precious\n");
}

Test(files, missing_parent_needs_create_dirs)
{
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("a/b/c.txt"), "x", 1, false, NULL, &created, sha, &err), -1);
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
	cr_assert(strstr(err.message, "create_dirs"));
	cr_assert_eq(files_write_atomic(path_of("a/b/c.txt"), "x", 1, true, NULL, &created, sha, &err), 0);
	cr_assert(created);
}

Test(files, expected_sha256_detects_a_change)
{
	put("h.txt", "abc", 3);
	bool created;
	char sha[65];
	struct rpc_error err;
	const char *abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
	const char *other = "0000000000000000000000000000000000000000000000000000000000000000";
	cr_assert_eq(files_write_atomic(path_of("h.txt"), "new", 3, false, other, &created, sha, &err), -1);
	cr_assert_str_eq(err.data_code, "CONFLICT");
	cr_assert(strstr(err.message, abc), "%s", err.message);
	cr_assert_eq(files_write_atomic(path_of("h.txt"), "new", 3, false, abc, &created, sha, &err), 0);
}

Test(files, write_follows_a_symlink)
{
	put("target.txt", "old", 3);
	cr_assert_eq(symlink("target.txt", path_of("link.txt")), 0);
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("link.txt"), "new", 3, false, NULL, &created, sha, &err), 0);
	struct stat st;
	cr_assert_eq(lstat(path_of("link.txt"), &st), 0);
	cr_assert(S_ISLNK(st.st_mode));
	cr_assert_eq(stat(path_of("target.txt"), &st), 0);
	cr_assert_eq(st.st_size, 3);
}

Test(files, write_refuses_a_directory)
{
	mkdir(path_of("d"), 0755);
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("d"), "x", 1, false, NULL, &created, sha, &err), -1);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
}

Test(files, relative_paths_resolve_against_the_workspace)
{
	char *abs;
	struct rpc_error err;
	cr_assert_eq(paths_resolve("src//./x.c", 10, "path", &abs, &err), 0);
	char want[128];
	snprintf(want, sizeof want, "%s/src/x.c", dir);
	cr_assert_str_eq(abs, want);
	free(abs);
	cr_assert_eq(paths_resolve("/etc/../etc/hosts", 17, "path", &abs, &err), 0);
	cr_assert_str_eq(abs, "/etc/../etc/hosts");
	free(abs);
	cr_assert_eq(paths_resolve("", 0, "path", &abs, &err), -1);
	cr_assert_eq(paths_resolve("a\0b", 3, "path", &abs, &err), -1);
}
