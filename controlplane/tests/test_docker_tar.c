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

/* A streamed tar as clone_source.c sends it: a header, the file's bytes
 * (from elsewhere), the padding, a second small file, the end. */
Test(docker_tar, a_header_padding_and_end_read_back_by_libarchive)
{
	const char data[] = "bundle bytes\n";
	size_t len = sizeof(data) - 1, pad = docker_tar_padding(len);
	cr_expect_eq((len + pad) % DOCKER_TAR_BLOCK, 0);
	cr_expect_eq(docker_tar_padding(0), 0);
	cr_expect_eq(docker_tar_padding(DOCKER_TAR_BLOCK), 0);
	cr_expect_eq(docker_tar_padding(DOCKER_TAR_BLOCK + 1), DOCKER_TAR_BLOCK - 1);
	size_t total = DOCKER_TAR_BLOCK + len + pad + DOCKER_TAR_BLOCK + DOCKER_TAR_BLOCK + 2 * DOCKER_TAR_BLOCK;
	unsigned char *tar = calloc(1, total);
	struct cp_error *err = NULL;
	cr_assert_eq(docker_tar_file_header("source", 0444, len, tar, &err), 0);
	memcpy(tar + DOCKER_TAR_BLOCK, data, len);
	unsigned char *second = tar + DOCKER_TAR_BLOCK + len + pad;
	cr_assert_eq(docker_tar_file_header("source-head", 0444, 5, second, &err), 0);
	memcpy(second + DOCKER_TAR_BLOCK, "main\n", 5);
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	cr_assert_eq(archive_read_open_memory(a, tar, total), ARCHIVE_OK);
	struct archive_entry *e = NULL;
	cr_assert_eq(archive_read_next_header(a, &e), ARCHIVE_OK, "%s", archive_error_string(a));
	cr_expect_str_eq(archive_entry_pathname(e), "source");
	cr_expect_eq(archive_entry_perm(e), 0444);
	cr_expect_eq(archive_entry_size(e), (la_int64_t)len);
	char back[64] = "";
	cr_expect_eq(archive_read_data(a, back, sizeof(back)), (la_ssize_t)len);
	cr_expect_str_eq(back, data);
	cr_assert_eq(archive_read_next_header(a, &e), ARCHIVE_OK, "%s", archive_error_string(a));
	cr_expect_str_eq(archive_entry_pathname(e), "source-head");
	cr_expect_eq(archive_entry_size(e), 5);
	cr_expect_eq(archive_read_next_header(a, &e), ARCHIVE_EOF);
	archive_read_free(a);
	free(tar);
}

/* Above 8 GiB - 1 the octal field cannot hold the size: base-256, as GNU
 * tar writes it and the engine's reader takes it. */
Test(docker_tar, sizes_of_8_gib_and_over_use_the_base_256_field)
{
	unsigned char h[DOCKER_TAR_BLOCK];
	struct cp_error *err = NULL;
	uint64_t big = (1ull << 33) + 5;
	cr_assert_eq(docker_tar_file_header("source", 0444, big, h, &err), 0);
	cr_expect_eq(h[124], 0x80);
	uint64_t back = 0;
	for (int i = 128; i < 136; i++)
		back = back << 8 | h[i];
	cr_expect_eq(back, big);
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	cr_assert_eq(archive_read_open_memory(a, h, sizeof(h)), ARCHIVE_OK);
	struct archive_entry *e = NULL;
	/* Only the header is there: libarchive reads it and its size. */
	int rc = archive_read_next_header(a, &e);
	cr_expect(rc == ARCHIVE_OK || rc == ARCHIVE_WARN, "%s", archive_error_string(a));
	cr_expect_eq(archive_entry_size(e), (la_int64_t)big);
	archive_read_free(a);
	cr_assert_eq(docker_tar_file_header("source", 0444, (1ull << 33) - 1, h, &err), 0);
	cr_expect_eq(h[124], '7', "the largest octal size stays octal");
	cr_expect_eq(docker_tar_file_header("/abs", 0444, 1, h, &err), -1);
	cr_expect_eq(err->code, CP_ERR_INVALID_ARGUMENT);
	cp_error_freep(&err);
}
