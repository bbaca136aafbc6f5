/* export_archive.c: the tar of a plain-copy clone (not a git repository),
 * read with libarchive. Checked whole when it is saved; extracted for
 * `chat2sbx export apply --to DIR` with libarchive's own guards against
 * the classic tar attacks (absolute names, "..", writing through a symlink
 * planted by an earlier entry: ARCHIVE_EXTRACT_SECURE_*), and no device,
 * FIFO, owner or setuid bit ever made: the archive came from a sandbox. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export_internal.h"

static struct archive *open_reader(const char *path, struct cp_error **err)
{
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	if (archive_read_open_filename(a, path, 65536) != ARCHIVE_OK) {
		cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "open the archive '%s': %s", path, archive_error_string(a));
		archive_read_free(a);
		return NULL;
	}
	return a;
}

int export_archive_check(const char *path, int64_t *ret_entries, struct cp_error **err)
{
	struct archive *a = open_reader(path, err);
	if (!a)
		return -1;
	int64_t n = 0;
	struct archive_entry *e;
	int rc;
	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		n++;
		if (archive_read_data_skip(a) != ARCHIVE_OK) {
			rc = ARCHIVE_FATAL;
			break;
		}
	}
	int r = 0;
	if (rc != ARCHIVE_EOF)
		r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "it is not a valid tar after %lld entries: %s",
		                 (long long)n, archive_error_string(a) ? archive_error_string(a) : "unknown error");
	archive_read_free(a);
	if (r == 0)
		*ret_entries = n;
	return r;
}

static int dir_empty_or_missing(const char *dir, struct cp_error **err)
{
	DIR *d = opendir(dir);
	if (!d) {
		if (errno != ENOENT)
			return cp_error_set_errno(err, CP_ERR_CONFLICT, errno, "open '%s'", dir);
		/* Made with its missing parents, as mkdir -p would. */
		char path[4096];
		snprintf(path, sizeof(path), "%s", dir);
		for (char *p = path + 1; *p; p++)
			if (*p == '/') {
				*p = '\0';
				if (mkdir(path, 0755) < 0 && errno != EEXIST)
					return cp_error_set_errno(err, CP_ERR_CONFLICT, errno, "create '%s'", path);
				*p = '/';
			}
		if (mkdir(path, 0755) < 0)
			return cp_error_set_errno(err, CP_ERR_CONFLICT, errno, "create '%s'", dir);
		return 0;
	}
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	return empty ? 0
	             : cp_error_set(err, CP_ERR_CONFLICT,
	                            "'%s' is not empty; name a new or empty directory with --to (nothing was written)",
	                            dir);
}

int export_archive_extract(const char *path, const char *dir, int64_t *ret_entries, struct cp_error **err)
{
	if (dir_empty_or_missing(dir, err) < 0)
		return -1;
	struct archive *a = open_reader(path, err);
	if (!a)
		return -1;
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || chdir(dir) < 0) {
		int e = errno;
		if (cwd >= 0)
			close(cwd);
		archive_read_free(a);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, e, "enter '%s'", dir);
	}
	struct archive *w = archive_write_disk_new();
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
	                                      ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS |
	                                      ARCHIVE_EXTRACT_NO_OVERWRITE | ARCHIVE_EXTRACT_UNLINK * 0);
	int64_t n = 0;
	int r = 0;
	struct archive_entry *e;
	int rc;
	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e);
		char shown[600];
		policy_text_escape(name ? name : "", name ? strlen(name) : 0, shown, sizeof(shown));
		mode_t type = archive_entry_filetype(e);
		if (!name || !*name || (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK)) {
			r = cp_error_set(err, CP_ERR_DENIED,
			                 "entry \"%s\" is a device, FIFO or socket; it was refused (%lld entries were "
			                 "written to '%s' before it)",
			                 shown, (long long)n, dir);
			break;
		}
		if (!strcmp(name, ".") || !strcmp(name, "./"))
			continue; /* the directory itself */
		archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
		const char *link = archive_entry_hardlink(e);
		if (link && (link[0] == '/' || strstr(link, ".."))) {
			r = cp_error_set(
			    err, CP_ERR_DENIED,
			    "entry \"%s\" is a hard link out of the archive; it was refused (%lld entries were "
			    "written to '%s' before it)",
			    shown, (long long)n, dir);
			break;
		}
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			r = cp_error_set(err, CP_ERR_DENIED,
			                 "entry \"%s\" was refused: %s (%lld entries were written to '%s' before it)",
			                 shown, archive_error_string(w), (long long)n, dir);
			break;
		}
		const void *buf;
		size_t size;
		la_int64_t off;
		int dr;
		while ((dr = archive_read_data_block(a, &buf, &size, &off)) == ARCHIVE_OK)
			if (archive_write_data_block(w, buf, size, off) != ARCHIVE_OK) {
				dr = ARCHIVE_FATAL;
				break;
			}
		if (dr != ARCHIVE_EOF || archive_write_finish_entry(w) != ARCHIVE_OK) {
			r = cp_error_set(err, CP_ERR_INTERNAL, "write \"%s\" into '%s': %s", shown, dir,
			                 archive_error_string(w) ? archive_error_string(w) : archive_error_string(a));
			break;
		}
		n++;
	}
	if (r == 0 && rc != ARCHIVE_EOF)
		r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the archive is damaged after %lld entries: %s",
		                 (long long)n, archive_error_string(a));
	archive_write_close(w);
	archive_write_free(w);
	archive_read_free(a);
	if (fchdir(cwd) < 0)
		r = r < 0 ? r : cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "return to the working directory");
	close(cwd);
	if (r == 0)
		*ret_entries = n;
	return r;
}
