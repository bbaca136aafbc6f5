/* export_archive.c: the tar of a plain-copy clone (not a git repository),
 * read with libarchive: checked whole when it is saved (every header must
 * parse). Extracting it for `chat2sbx export apply --to DIR` is
 * export_extract.c's. */
#include <archive.h>
#include <archive_entry.h>

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
