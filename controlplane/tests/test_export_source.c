/* test_export_source.c: the tar of a plain directory made on the host for
 * a clone on another node (lifecycle/clone_source.c) is judged entry by
 * entry before it leaves (export_archive_check_source): files,
 * directories, symbolic links (as links: the bytes they point at are not
 * in the tar), hard links and FIFOs pass; a device or socket is refused
 * naming it; a name outside the prefix or climbing out of it is refused. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export/export.h"

#define PREFIX ".chat2sbx/source"

struct entry {
	const char *name;
	mode_t type;
	const char *link; /* symlink target or hard link name */
	const char *data;
};

/* A tar of the entries, written by libarchive into an unlinked file. */
static int tar_of(const struct entry *es, size_t n)
{
	char path[] = "/tmp/chat2sbx-source-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	unlink(path);
	struct archive *a = archive_write_new();
	archive_write_set_format_gnutar(a);
	cr_assert_eq(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, es[i].name);
		archive_entry_set_perm(e, 0644);
		size_t len = es[i].data ? strlen(es[i].data) : 0;
		if (es[i].type == 0) {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_hardlink(e, es[i].link);
		} else {
			archive_entry_set_filetype(e, es[i].type);
			if (es[i].type == AE_IFLNK)
				archive_entry_set_symlink(e, es[i].link);
			if (es[i].type == AE_IFREG)
				archive_entry_set_size(e, (la_int64_t)len);
		}
		cr_assert_eq(archive_write_header(a, e), ARCHIVE_OK, "%s", archive_error_string(a));
		if (len)
			archive_write_data(a, es[i].data, len);
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	return fd;
}

Test(export_source, files_dirs_links_and_fifos_pass)
{
	static const struct entry es[] = {
	    {PREFIX, AE_IFDIR, NULL, NULL},
	    {PREFIX "/a.txt", AE_IFREG, NULL, "alpha\n"},
	    {PREFIX "/sub", AE_IFDIR, NULL, NULL},
	    {PREFIX "/sub/out", AE_IFLNK, "/etc/passwd", NULL}, /* a link, never followed */
	    {PREFIX "/hard", 0, PREFIX "/a.txt", NULL},
	    {PREFIX "/fifo", AE_IFIFO, NULL, NULL},
	};
	int fd = tar_of(es, sizeof(es) / sizeof(es[0]));
	int64_t n = 0;
	struct cp_error *err = NULL;
	cr_expect_eq(export_archive_check_source(fd, PREFIX, &n, &err), 0, "%s", err ? err->message : "");
	cr_expect_eq(n, 6);
	close(fd);
}

Test(export_source, a_device_is_refused_naming_it)
{
	static const struct entry es[] = {
	    {PREFIX, AE_IFDIR, NULL, NULL},
	    {PREFIX "/dev/sda", AE_IFBLK, NULL, NULL},
	};
	int fd = tar_of(es, 2);
	int64_t n = 0;
	struct cp_error *err = NULL;
	cr_expect_eq(export_archive_check_source(fd, PREFIX, &n, &err), -1);
	cr_assert_not_null(err);
	cr_expect_eq(err->code, CP_ERR_DENIED);
	cr_expect(strstr(err->message, "'dev/sda', a block device") != NULL, "%s", err->message);
	cp_error_freep(&err);
	close(fd);
}

Test(export_source, names_outside_the_prefix_are_refused)
{
	static const struct entry outside[][2] = {
	    {{PREFIX, AE_IFDIR, NULL, NULL}, {"etc/passwd", AE_IFREG, NULL, "x"}},
	    {{PREFIX, AE_IFDIR, NULL, NULL}, {PREFIX "/../../etc/x", AE_IFREG, NULL, "x"}},
	    {{PREFIX, AE_IFDIR, NULL, NULL}, {PREFIX "sibling", AE_IFREG, NULL, "x"}},
	    {{PREFIX, AE_IFDIR, NULL, NULL}, {PREFIX "/h", 0, "etc/passwd", NULL}},
	};
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
		int fd = tar_of(outside[i], 2);
		int64_t n = 0;
		struct cp_error *err = NULL;
		cr_expect_eq(export_archive_check_source(fd, PREFIX, &n, &err), -1, "case %zu", i);
		cr_expect(err && err->code == CP_ERR_INTERNAL, "case %zu: %s", i, err ? err->message : "");
		cp_error_freep(&err);
		close(fd);
	}
}
