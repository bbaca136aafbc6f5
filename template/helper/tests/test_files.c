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

static void assert_content(const char *name, const char *want)
{
	char buf[256] = {0};
	FILE *f = fopen(path_of(name), "r");
	cr_assert_not_null(f, "%s is missing", name);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	cr_assert_eq(n, strlen(want));
	cr_assert_str_eq(buf, want);
}

static void assert_link(const char *name, const char *to)
{
	char buf[256];
	ssize_t n = readlink(path_of(name), buf, sizeof buf - 1);
	cr_assert_gt(n, 0, "%s is no longer a symlink", name);
	buf[n] = '\0';
	cr_assert_str_eq(buf, to);
}

/* One rule: a symlink is followed to the end of its chain and the file
 * there is replaced, or created when the link dangles; links stay. */
Test(files, write_follows_a_symlink)
{
	put("target.txt", "old", 3);
	cr_assert_eq(symlink("target.txt", path_of("link.txt")), 0);
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("link.txt"), "new", 3, false, NULL, &created, sha, &err), 0);
	cr_assert_not(created);
	assert_link("link.txt", "target.txt");
	assert_content("target.txt", "new");
	/* expected_sha256 is checked against the target. */
	const char *new_sha = "11507a0e2f5e69d5dfa40a62a1bd7b6ee57e6bcd85c67c9b8431b36fff21c437";
	cr_assert_eq(files_write_atomic(path_of("link.txt"), "newer", 5, false, new_sha, &created, sha, &err), 0, "%s",
	             err.message);
	assert_content("target.txt", "newer");
	cr_assert_eq(temp_files(), 0);
}

Test(files, write_through_a_dangling_symlink_creates_its_target)
{
	mkdir(path_of("sub"), 0755);
	cr_assert_eq(symlink("sub/made.txt", path_of("dangling")), 0);
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("dangling"), "hello", 5, false, NULL, &created, sha, &err), 0, "%s",
	             err.message);
	cr_assert(created);
	assert_link("dangling", "sub/made.txt");
	assert_content("sub/made.txt", "hello");
	struct stat st;
	cr_assert_eq(stat(path_of("sub/made.txt"), &st), 0);
	cr_assert_eq(st.st_mode & 07777, 0644);
	/* A chain of relative links, the last one dangling into a missing
	 * directory: create_dirs creates it. */
	cr_assert_eq(symlink("../chain2", path_of("sub/chain1")), 0);
	cr_assert_eq(symlink("deep/end.txt", path_of("chain2")), 0);
	cr_assert_eq(files_write_atomic(path_of("sub/chain1"), "x", 1, false, NULL, &created, sha, &err), -1);
	cr_assert_str_eq(err.data_code, "NOT_FOUND");
	cr_assert_eq(files_write_atomic(path_of("sub/chain1"), "x", 1, true, NULL, &created, sha, &err), 0, "%s",
	             err.message);
	cr_assert(created);
	assert_link("sub/chain1", "../chain2");
	assert_link("chain2", "deep/end.txt");
	assert_content("deep/end.txt", "x");
	/* An absolute dangling link. */
	char abs_to[256];
	snprintf(abs_to, sizeof abs_to, "%s/abs.txt", dir);
	cr_assert_eq(symlink(abs_to, path_of("abs_link")), 0);
	cr_assert_eq(files_write_atomic(path_of("abs_link"), "abs", 3, false, NULL, &created, sha, &err), 0);
	assert_link("abs_link", abs_to);
	assert_content("abs.txt", "abs");
	cr_assert_eq(temp_files(), 0);
}

Test(files, write_refuses_a_symlink_loop)
{
	cr_assert_eq(symlink("loop_b", path_of("loop_a")), 0);
	cr_assert_eq(symlink("loop_a", path_of("loop_b")), 0);
	bool created;
	char sha[65];
	struct rpc_error err;
	cr_assert_eq(files_write_atomic(path_of("loop_a"), "x", 1, false, NULL, &created, sha, &err), -1);
	cr_assert_str_eq(err.data_code, "INVALID_ARGUMENT");
	cr_assert(strstr(err.message, "loop"), "%s", err.message);
	assert_link("loop_a", "loop_b");
	cr_assert_eq(temp_files(), 0);
}

/* A sparse file of 20 GiB: text lines, then a hole (one endless line). */
static void put_huge(const char *name)
{
	FILE *f = fopen(path_of(name), "w");
	cr_assert_not_null(f);
	for (int i = 1; i <= 2000; i++)
		fprintf(f, "line %d\n", i);
	fclose(f);
	cr_assert_eq(truncate(path_of(name), 20ll << 30), 0);
}

Test(files, huge_file_is_read_only_as_far_as_the_selection)
{
	put_huge("huge.txt");
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("huge.txt", 1999, 2, 1000, &s, &err), 0, "%s", err.message);
	cr_assert_str_eq(s.content, "line 1999\nline 2000\n");
	cr_assert_eq(s.lines, 2);
	cr_assert(s.truncated);
	cr_assert_not(s.whole);
	cr_assert_not(s.total_known);
	cr_assert_eq(s.size, 20ull << 30);
	free(s.content);
	/* max_bytes still bounds the endless line after them. */
	cr_assert_eq(sel_read("huge.txt", 2000, 5, 100, &s, &err), 0, "%s", err.message);
	cr_assert_str_eq(s.content, "line 2000\n");
	cr_assert(s.truncated);
	free(s.content);
	/* A selection that starts beyond the first FILES_WHOLE_MAX bytes. */
	cr_assert_eq(sel_read("huge.txt", 2002, 3, 1000, &s, &err), -1);
	cr_assert_str_eq(err.data_code, "LIMIT");
	cr_assert(strstr(err.message, "sed -n '2002,2004p'"), "%s", err.message);
	cr_assert(strstr(err.message, "tail -n"), "%s", err.message);
	/* A binary one stops after the probe. */
	put("zeros", "", 0);
	cr_assert_eq(truncate(path_of("zeros"), 20ll << 30), 0);
	cr_assert_eq(sel_read("zeros", 1, 10, 1000, &s, &err), 0);
	cr_assert(s.binary);
	cr_assert_not(s.whole);
	cr_assert_eq(s.size, 20ull << 30);
}

Test(files, large_file_read_to_its_end_counts_its_lines)
{
	/* Just over the bound, the last lines starting before it: line 1 is
	 * text (no NUL in the probe), line 2 a hole, then lines 3 and 4. */
	char pad[9000];
	memset(pad, 'p', sizeof pad);
	pad[sizeof pad - 1] = '\n';
	put("tail.txt", pad, sizeof pad);
	int fd = open(path_of("tail.txt"), O_WRONLY);
	cr_assert_geq(fd, 0);
	const char tail[] = "\nlast1\nlast2\n";
	cr_assert_eq(pwrite(fd, tail, sizeof tail - 1, (off_t)FILES_WHOLE_MAX - 7), (ssize_t)sizeof tail - 1);
	close(fd);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("tail.txt", 3, 10, 1000, &s, &err), 0, "%s", err.message);
	cr_assert_str_eq(s.content, "last1\nlast2\n");
	cr_assert_not(s.whole);
	cr_assert(s.total_known);
	cr_assert_eq(s.total_lines, 4);
	cr_assert_not(s.truncated);
	cr_assert_eq(s.size, FILES_WHOLE_MAX + 6);
	free(s.content);
	/* expected_sha256 is refused on it, and the file is untouched. */
	bool created;
	char sha[65];
	const char *any = "0000000000000000000000000000000000000000000000000000000000000000";
	cr_assert_eq(files_write_atomic(path_of("tail.txt"), "x", 1, false, any, &created, sha, &err), -1);
	cr_assert_str_eq(err.data_code, "LIMIT");
	cr_assert(strstr(err.message, "without expected_sha256"), "%s", err.message);
	struct stat st;
	cr_assert_eq(stat(path_of("tail.txt"), &st), 0);
	cr_assert_eq((uint64_t)st.st_size, FILES_WHOLE_MAX + 6);
}

Test(files, file_at_the_bound_is_read_whole)
{
	put("edge.txt", "a\nb\n", 4);
	cr_assert_eq(truncate(path_of("edge.txt"), (off_t)FILES_WHOLE_MAX), 0);
	struct files_selection s;
	struct rpc_error err;
	cr_assert_eq(sel_read("edge.txt", 1, 1, 1000, &s, &err), 0);
	cr_assert(s.binary); /* the hole is NUL bytes */
	cr_assert(s.whole);
	cr_assert_eq(strlen(s.sha256), 64);
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
