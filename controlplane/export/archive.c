/* export_archive.c: the tar of a plain-copy clone (not a git repository),
 * read with libarchive: checked whole when it is saved (every header must
 * parse), and the tar of a plain directory made on the host for a clone on
 * another node, judged entry by entry before it leaves this machine.
 * Extracting it for `chat2sbx export apply --to DIR` is export_extract.c's. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"

struct archive *export_archive_open(const char *path, struct cp_error **err)
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
	struct archive *a = export_archive_open(path, err);
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

/* Whether name is prefix itself or below it ("prefix/..."). */
static int under(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	if (strncmp(name, prefix, n))
		return 0;
	return name[n] == '\0' || (name[n] == '/' && !strstr(name + n, "/../") && strcmp(name + n, "/.."));
}

int export_archive_check_source(int fd, const char *prefix, int64_t *ret_entries, struct cp_error **err)
{
	if (lseek(fd, 0, SEEK_SET) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read the archive of the source");
	struct archive *a = archive_read_new();
	archive_read_support_format_tar(a);
	archive_read_support_format_gnutar(a);
	if (archive_read_open_fd(a, fd, 65536) != ARCHIVE_OK) {
		cp_error_set(err, CP_ERR_INTERNAL, "open the archive of the source: %s", archive_error_string(a));
		archive_read_free(a);
		return -1;
	}
	int64_t n = 0;
	int r = 0, rc;
	struct archive_entry *e;
	while ((rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		n++;
		const char *name = archive_entry_pathname(e);
		mode_t type = archive_entry_filetype(e);
		char shown[600];
		policy_text_escape(name ? name : "", name ? strlen(name) : 0, shown, sizeof(shown));
		/* What is left of the name once prefix is taken off: the directory's own path. */
		const char *rel = name && under(name, prefix) ? name + strlen(prefix) : NULL;
		if (!rel) {
			r = cp_error_set(err, CP_ERR_INTERNAL,
			                 "the archive of the source has an entry '%s' outside '%s'", shown, prefix);
			break;
		}
		/* A hard link names another entry, which must be ours too. */
		const char *link = archive_entry_hardlink(e);
		if (link && !under(link, prefix)) {
			r = cp_error_set(err, CP_ERR_INTERNAL, "the archive of the source links '%s' outside '%s'",
			                 shown, prefix);
			break;
		}
		if (!link && type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK && type != AE_IFIFO) {
			r = cp_error_set(err, CP_ERR_DENIED,
			                 "the directory holds '%s', a %s; a copy made on another node takes regular "
			                 "files, directories, symbolic links and FIFOs only; remove it or create the "
			                 "sandbox on node 'local'",
			                 *rel == '/' ? rel + 1 : rel,
			                 type == AE_IFCHR    ? "character device"
			                 : type == AE_IFBLK  ? "block device"
			                 : type == AE_IFSOCK ? "socket"
			                                     : "special file");
			break;
		}
		if (archive_read_data_skip(a) != ARCHIVE_OK) {
			rc = ARCHIVE_FATAL;
			break;
		}
	}
	if (r == 0 && rc != ARCHIVE_EOF)
		r = cp_error_set(err, CP_ERR_INTERNAL,
		                 "the archive of the source is not a valid tar after %lld entries: %s", (long long)n,
		                 archive_error_string(a) ? archive_error_string(a) : "unknown error");
	archive_read_free(a);
	if (r == 0)
		*ret_entries = n;
	return r;
}
