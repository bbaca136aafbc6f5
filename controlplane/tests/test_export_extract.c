/* test_export_extract.c: `chat2sbx export apply --to DIR` of a plain copy
 * against hostile tars (export_extract.c, issue 23 item 7), made here with
 * libarchive's writer so each entry is exactly what an attacker would
 * write: hard links are made inside DIR, FIFOs and devices are skipped and
 * listed (no tar format has a socket type; the judge skips one anyway), and an absolute name, "..", a hard link out of
 * DIR or through a planted symlink, a write through a symlink, a name too deep, a sparse entry larger than the archive,
 * a second entry of one name are refused with nothing left behind: no DIR, no partial directory beside it, nothing
 * written outside. */
#include <archive.h>
#include <archive_entry.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "export/export.h"

static char root[64], tar[128], outside[128];

static void setup(void)
{
	snprintf(root, sizeof root, "/tmp/c2s-extract-XXXXXX");
	cr_assert_not_null(mkdtemp(root));
	snprintf(tar, sizeof tar, "%s/w.tar", root);
	snprintf(outside, sizeof outside, "%s/outside", root);
	cr_assert_eq(mkdir(outside, 0755), 0);
	char victim[160];
	snprintf(victim, sizeof victim, "%s/victim", outside);
	FILE *f = fopen(victim, "w");
	fputs("the person's file\n", f);
	fclose(f);
}

static void teardown(void)
{
	char cmd[200];
	snprintf(cmd, sizeof cmd, "chmod -R u+rwx %s; rm -rf %s", root, root);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(export_extract, .init = setup, .fini = teardown);

/* One entry to write: type AE_IF*, or 0 with link for a hard link. */
struct ent {
	const char *name;
	unsigned type;
	const char *data;    /* a regular file's bytes */
	const char *link;    /* symlink target or hard link target */
	int64_t sparse_size; /* > 0: a sparse entry of that size with one byte of data */
};

static void write_tar(const struct ent *e, size_t n)
{
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	cr_assert_eq(archive_write_open_filename(a, tar), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		struct archive_entry *x = archive_entry_new();
		archive_entry_set_pathname(x, e[i].name);
		archive_entry_set_perm(x, e[i].type == AE_IFDIR ? 0755 : 06755);
		archive_entry_set_mtime(x, 1700000000, 0);
		if (e[i].type == 0) {
			archive_entry_set_filetype(x, AE_IFREG);
			archive_entry_set_hardlink(x, e[i].link);
			archive_entry_set_size(x, 0);
		} else {
			archive_entry_set_filetype(x, e[i].type);
			if (e[i].type == AE_IFLNK)
				archive_entry_set_symlink(x, e[i].link);
			if (e[i].type == AE_IFCHR || e[i].type == AE_IFBLK)
				archive_entry_set_rdev(x, makedev(1, 3));
			if (e[i].sparse_size) {
				archive_entry_set_size(x, e[i].sparse_size);
				archive_entry_sparse_add_entry(x, 0, 1);
			} else {
				archive_entry_set_size(x, e[i].data ? (int64_t)strlen(e[i].data) : 0);
			}
		}
		cr_assert_eq(archive_write_header(a, x), ARCHIVE_OK, "%s: %s", e[i].name, archive_error_string(a));
		if (e[i].sparse_size)
			archive_write_data(a, "x", 1);
		else if (e[i].data && e[i].type == AE_IFREG)
			archive_write_data(a, e[i].data, strlen(e[i].data));
		archive_entry_free(x);
	}
	archive_write_close(a);
	archive_write_free(a);
}

/* Nothing beside DIR but the tar, outside/ and what the test made. */
static void nothing_left(const char *why)
{
	DIR *d = opendir(root);
	struct dirent *de;
	while ((de = readdir(d)))
		cr_assert_null(strstr(de->d_name, "chat2sbx-partial"), "%s: '%s' was left", why, de->d_name);
	closedir(d);
	char dir[160];
	snprintf(dir, sizeof dir, "%s/out", root);
	cr_assert_eq(access(dir, F_OK), -1, "%s: no DIR", why);
	d = opendir(outside);
	int n = 0;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	cr_assert_eq(n, 1, "%s: nothing written outside", why);
	char victim[160], buf[64] = "";
	snprintf(victim, sizeof victim, "%s/victim", outside);
	FILE *f = fopen(victim, "r");
	cr_assert_not_null(fgets(buf, sizeof buf, f));
	fclose(f);
	cr_assert_str_eq(buf, "the person's file\n", "%s: the file outside is untouched", why);
	struct stat st;
	cr_assert_eq(stat(victim, &st), 0);
	cr_assert_eq(st.st_nlink, 1, "%s: no hard link to the file outside", why);
}

static int extract(struct export_extract_result *res, char *msg, size_t size)
{
	char dir[160];
	snprintf(dir, sizeof dir, "%s/out", root);
	struct cp_error *err = NULL;
	int r = export_archive_extract(tar, dir, res, &err);
	if (r < 0) {
		snprintf(msg, size, "%s", err->message);
		cp_error_free(err);
	}
	return r;
}

Test(export_extract, hard_links_are_made_inside_and_special_files_skipped_and_listed)
{
	struct ent e[] = {
	    {"./", AE_IFDIR, NULL, NULL, 0},
	    {"d", AE_IFDIR, NULL, NULL, 0},
	    {"d/a", AE_IFREG, "alpha\n", NULL, 0},
	    {"d/b", 0, NULL, "d/a", 0},
	    {"./c", 0, NULL, "./d/a", 0},
	    {"s", AE_IFLNK, NULL, "d/a", 0},
	    {"abs-link", AE_IFLNK, NULL, "/etc/passwd", 0},
	    {"fifo", AE_IFIFO, NULL, NULL, 0},
	    {"null", AE_IFCHR, NULL, NULL, 0},
	    {"disk", AE_IFBLK, NULL, NULL, 0},
	};
	write_tar(e, sizeof e / sizeof e[0]);
	struct export_extract_result res = {0};
	char msg[600] = "";
	cr_assert_eq(extract(&res, msg, sizeof msg), 0, "%s", msg);
	cr_assert_eq(res.entries, 6);
	cr_assert_eq(res.n_skipped, 3);
	cr_assert_eq(res.n_listed, 3);
	cr_assert(strstr(res.skipped[0], "FIFO \"fifo\""), "%s", res.skipped[0]);
	cr_assert(strstr(res.skipped[1], "character device \"null\""), "%s", res.skipped[1]);
	cr_assert(strstr(res.skipped[2], "block device \"disk\""), "%s", res.skipped[2]);
	cr_assert_null(res.skipped[3]);
	char a[160], b[160], c[160], s[160];
	snprintf(a, sizeof a, "%s/out/d/a", root);
	snprintf(b, sizeof b, "%s/out/d/b", root);
	snprintf(c, sizeof c, "%s/out/c", root);
	snprintf(s, sizeof s, "%s/out/s", root);
	struct stat sa, sb, sc, ss;
	cr_assert_eq(stat(a, &sa), 0);
	cr_assert_eq(stat(b, &sb), 0);
	cr_assert_eq(stat(c, &sc), 0);
	cr_assert_eq(sa.st_ino, sb.st_ino, "a hard link, made inside");
	cr_assert_eq(sa.st_ino, sc.st_ino);
	cr_assert_eq(sa.st_nlink, 3);
	cr_assert_eq(sa.st_mode & 07000, 0, "no setuid, setgid or sticky bit");
	cr_assert_eq(lstat(s, &ss), 0);
	cr_assert(S_ISLNK(ss.st_mode));
	const char *special[] = {"fifo", "null", "disk"};
	for (size_t i = 0; i < 3; i++) {
		char p[160];
		snprintf(p, sizeof p, "%s/out/%s", root, special[i]);
		cr_assert_eq(lstat(p, &ss), -1, "%s was not made", special[i]);
	}
	export_extract_result_clear(&res);
	DIR *d = opendir(root);
	struct dirent *de;
	while ((de = readdir(d)))
		cr_assert_null(strstr(de->d_name, "chat2sbx-partial"), "the temporary directory was renamed");
	closedir(d);
}

Test(export_extract, every_escape_is_refused_and_nothing_is_left)
{
	char deep[1400] = "";
	for (int i = 0; i < 300; i++)
		strcat(deep, "d/");
	strcat(deep, "f");
	struct {
		struct ent e[3];
		size_t n;
		const char *why;
	} cases[] = {
	    {{{"ok", AE_IFREG, "fine\n", NULL, 0}, {"../escape", AE_IFREG, "x\n", NULL, 0}}, 2, "holds \"..\""},
	    {{{"ok", AE_IFREG, "fine\n", NULL, 0}, {"a/../../escape", AE_IFREG, "x\n", NULL, 0}}, 2, "holds \"..\""},
	    {{{"/abs", AE_IFREG, "x\n", NULL, 0}}, 1, "absolute"},
	    {{{"h", 0, NULL, "../outside/victim", 0}}, 1, "hard link out of the archive"},
	    {{{"h", 0, NULL, outside, 0}}, 1, "hard link out of the archive"},
	    {{{"l", AE_IFLNK, NULL, outside, 0}, {"l/planted", AE_IFREG, "x\n", NULL, 0}},
	     2,
	     "\"l/planted\" was refused"},
	    {{{"l", AE_IFLNK, NULL, outside, 0}, {"h", 0, NULL, "l/victim", 0}}, 2, "\"h\" was refused"},
	    {{{deep, AE_IFREG, "x\n", NULL, 0}}, 1, "256 directories deep"},
	    {{{"big", AE_IFREG, NULL, NULL, 1LL << 40}}, 1, "more bytes than the archive"},
	    {{{"twice", AE_IFREG, "one\n", NULL, 0}, {"twice", AE_IFREG, "two\n", NULL, 0}},
	     2,
	     "\"twice\" was refused: an entry of that name"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		write_tar(cases[i].e, cases[i].n);
		struct export_extract_result res = {0};
		char msg[2000] = "", why[64];
		cr_assert_eq(extract(&res, msg, sizeof msg), -1, "case %zu was extracted", i);
		cr_assert(strstr(msg, cases[i].why), "case %zu: '%s' lacks '%s'", i, msg, cases[i].why);
		cr_assert(strstr(msg, "nothing was written"), "%s", msg);
		for (const char *p = msg; *p; p++)
			cr_assert((unsigned char)*p >= 0x20, "raw control byte in '%s'", msg);
		cr_assert_null(res.skipped);
		snprintf(why, sizeof why, "case %zu", i);
		nothing_left(why);
	}
}

Test(export_extract, dir_must_be_new_or_empty_and_no_symlink)
{
	struct ent e[] = {{"f", AE_IFREG, "x\n", NULL, 0}};
	write_tar(e, 1);
	char dir[160], f[200];
	snprintf(dir, sizeof dir, "%s/out", root);
	struct export_extract_result res = {0};
	struct cp_error *err = NULL;
	/* An empty DIR is replaced by the copy. */
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(export_archive_extract(tar, dir, &res, &err), 0, "%s", err ? err->message : "");
	export_extract_result_clear(&res);
	snprintf(f, sizeof f, "%s/f", dir);
	cr_assert_eq(access(f, R_OK), 0);
	/* Not empty now: refused, nothing touched. */
	cr_assert_eq(export_archive_extract(tar, dir, &res, &err), -1);
	cr_assert_eq(err->code, CP_ERR_CONFLICT);
	cr_assert(strstr(err->message, "not empty"), "%s", err->message);
	cp_error_freep(&err);
	/* A symlink to an empty directory elsewhere: refused. */
	char link[160];
	snprintf(link, sizeof link, "%s/link", root);
	cr_assert_eq(symlink(outside, link), 0);
	cr_assert_eq(export_archive_extract(tar, link, &res, &err), -1);
	cr_assert(strstr(err->message, "symbolic link"), "%s", err->message);
	cp_error_freep(&err);
	/* Missing parents are made; a trailing slash is the same directory. */
	char nested[200];
	snprintf(nested, sizeof nested, "%s/a/b/c/", root);
	cr_assert_eq(export_archive_extract(tar, nested, &res, &err), 0, "%s", err ? err->message : "");
	export_extract_result_clear(&res);
	snprintf(f, sizeof f, "%s/a/b/c/f", root);
	cr_assert_eq(access(f, R_OK), 0);
}

Test(export_extract, the_judge)
{
	const char *why = NULL;
	cr_assert_eq(export_extract_judge(".", AE_IFDIR, NULL, &why), EXPORT_ENTRY_IGNORE);
	cr_assert_eq(export_extract_judge("a/./b", AE_IFREG, NULL, &why), EXPORT_ENTRY_WRITE);
	cr_assert_eq(export_extract_judge("a..b", AE_IFREG, NULL, &why), EXPORT_ENTRY_WRITE,
	             "'..' only as a component");
	cr_assert_eq(export_extract_judge("a/..", AE_IFDIR, NULL, &why), EXPORT_ENTRY_REFUSE);
	cr_assert_eq(export_extract_judge("", AE_IFREG, NULL, &why), EXPORT_ENTRY_REFUSE);
	cr_assert_eq(export_extract_judge(NULL, AE_IFREG, NULL, &why), EXPORT_ENTRY_REFUSE);
	cr_assert_eq(export_extract_judge("h", 0, "x/y", &why), EXPORT_ENTRY_HARDLINK);
	cr_assert_eq(export_extract_judge("h", 0, "x/../../y", &why), EXPORT_ENTRY_REFUSE);
	cr_assert_eq(export_extract_judge("h", 0, "", &why), EXPORT_ENTRY_REFUSE);
	/* No tar format has a socket type (libarchive's reader never yields
	 * one), but the judge skips it should another reader. */
	cr_assert_eq(export_extract_judge("sock", AE_IFSOCK, NULL, &why), EXPORT_ENTRY_SKIP);
	cr_assert_str_eq(why, "socket");
	cr_assert_eq(export_extract_judge("odd", 0, NULL, &why), EXPORT_ENTRY_REFUSE, "no type, no link");
	cr_assert_eq(export_extract_judge("odd", 0160000, NULL, &why), EXPORT_ENTRY_REFUSE);
	char longname[EXPORT_EXTRACT_NAME_MAX + 2];
	memset(longname, 'a', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	cr_assert_eq(export_extract_judge(longname, AE_IFREG, NULL, &why), EXPORT_ENTRY_REFUSE);
	cr_assert(strstr(why, "longer than 4000"), "%s", why);
}
