/* test_docker_tar.c: the one-file tar the archive API gets (docker/tar.c,
 * issue 28: the helper copied into a container on another node) is read
 * back by libarchive, as the engine's own tar reader would: the directory,
 * then the file with its mode, size and bytes, checksums valid; bad names
 * and oversized files are refused. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "docker/docker.h"

Test(docker_tar, one_directory_and_one_file_read_back_by_libarchive)
{
	const char data[] = "#!/bin/sh\necho hi\n"; /* not a multiple of 512: padded */
	unsigned char *tar = NULL;
	size_t len = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(docker_tar_file(".chat2sbx", "helper", 0755, data, sizeof(data) - 1, &tar, &len, &err), 0);
	cr_expect_eq(len % 512, 0);
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	cr_assert_eq(archive_read_open_memory(a, tar, len), ARCHIVE_OK, "%s", archive_error_string(a));
	struct archive_entry *e = NULL;
	cr_assert_eq(archive_read_next_header(a, &e), ARCHIVE_OK, "%s", archive_error_string(a));
	cr_expect_str_eq(archive_entry_pathname(e), ".chat2sbx/");
	cr_expect_eq(archive_entry_filetype(e), AE_IFDIR);
	cr_assert_eq(archive_read_next_header(a, &e), ARCHIVE_OK, "%s", archive_error_string(a));
	cr_expect_str_eq(archive_entry_pathname(e), ".chat2sbx/helper");
	cr_expect_eq(archive_entry_filetype(e), AE_IFREG);
	cr_expect_eq(archive_entry_perm(e), 0755);
	cr_expect_eq(archive_entry_size(e), (la_int64_t)(sizeof(data) - 1));
	cr_expect_eq(archive_entry_uid(e), 0);
	char back[64] = "";
	cr_expect_eq(archive_read_data(a, back, sizeof(back)), (la_ssize_t)(sizeof(data) - 1));
	cr_expect_str_eq(back, data);
	cr_expect_eq(archive_read_next_header(a, &e), ARCHIVE_EOF);
	archive_read_free(a);
	free(tar);
}

Test(docker_tar, bad_names_and_oversized_files_are_refused)
{
	unsigned char *tar = NULL;
	size_t len = 0;
	struct cp_error *err = NULL;
	const char *names[] = {"", "a/b", NULL};
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(docker_tar_file("d", names[i], 0644, "x", 1, &tar, &len, &err), -1);
		cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
		cp_error_freep(&err);
	}
	char longdir[120];
	memset(longdir, 'd', sizeof(longdir) - 1);
	longdir[sizeof(longdir) - 1] = '\0';
	cr_expect_eq(docker_tar_file(longdir, "f", 0644, "x", 1, &tar, &len, &err), -1);
	cp_error_freep(&err);
	cr_expect_eq(docker_tar_file("d", "f", 0644, "x", (size_t)DOCKER_TAR_FILE_MAX + 1, &tar, &len, &err), -1);
	cp_error_freep(&err);
	cr_expect_null(tar);
}
