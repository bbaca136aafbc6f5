/* export_extract.c: `chat2sbx export apply ID --to DIR` of a plain copy
 * (issue 14; issue 23 item 7). The tar came from a sandbox: every entry is
 * judged before libarchive writes it (export_extract_judge: relative names
 * without "..", bounded length and depth, hard links only to names inside,
 * FIFOs, sockets and devices skipped and listed), libarchive's own guards
 * refuse writing through a symlink an earlier entry planted and a hard link
 * through one (ARCHIVE_EXTRACT_SECURE_*), and the declared sizes may not add
 * up to more than the archive holds (no sparse file grows past it).
 * Everything is written into a fresh directory beside DIR, renamed to DIR
 * only when the whole archive went in: a refusal or a failure leaves no
 * DIR and no partial copy. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "export.h"

/* Whether name (a tar entry's, or a hard link's target) is relative, free
 * of ".." components, at most EXPORT_EXTRACT_NAME_MAX bytes and
 * EXPORT_EXTRACT_DEPTH_MAX components deep. *ret_why (static) when not. */
static int name_ok(const char *name, const char **ret_why)
{
	size_t len = strlen(name), depth = 0;
	if (len == 0)
		return *ret_why = "it has no name", 0;
	if (len > EXPORT_EXTRACT_NAME_MAX)
		return *ret_why = "its name is longer than " EXPORT_STR(EXPORT_EXTRACT_NAME_MAX) " bytes", 0;
	if (name[0] == '/')
		return *ret_why = "it is an absolute name", 0;
	for (const char *p = name; *p;) {
		size_t l = strcspn(p, "/");
		if (l == 2 && p[0] == '.' && p[1] == '.')
			return *ret_why = "it holds \"..\"", 0;
		if (l > 0 && !(l == 1 && p[0] == '.'))
			depth++;
		p += l;
		p += *p == '/';
	}
	if (depth > EXPORT_EXTRACT_DEPTH_MAX)
		return *ret_why = "it is more than " EXPORT_STR(EXPORT_EXTRACT_DEPTH_MAX) " directories deep", 0;
	return 1;
}

enum export_entry_action export_extract_judge(const char *name, unsigned type, const char *hardlink,
                                              const char **ret_why)
{
	*ret_why = NULL;
	if (name && (!strcmp(name, ".") || !strcmp(name, "./")))
		return EXPORT_ENTRY_IGNORE;
	if (!name || !name_ok(name, ret_why))
		return *ret_why = *ret_why ? *ret_why : "it has no name", EXPORT_ENTRY_REFUSE;
	if (hardlink) {
		const char *why = NULL;
		if (!name_ok(hardlink, &why))
			return *ret_why = "it is a hard link out of the archive", EXPORT_ENTRY_REFUSE;
		return EXPORT_ENTRY_HARDLINK;
	}
	switch (type) {
	case AE_IFREG:
	case AE_IFDIR:
	case AE_IFLNK: return EXPORT_ENTRY_WRITE;
	case AE_IFIFO: return *ret_why = "FIFO", EXPORT_ENTRY_SKIP;
	case AE_IFSOCK: return *ret_why = "socket", EXPORT_ENTRY_SKIP;
	case AE_IFCHR: return *ret_why = "character device", EXPORT_ENTRY_SKIP;
	case AE_IFBLK: return *ret_why = "block device", EXPORT_ENTRY_SKIP;
	default: return *ret_why = "it is of no type a file system holds", EXPORT_ENTRY_REFUSE;
	}
}

void export_extract_result_clear(struct export_extract_result *r)
{
	if (!r)
		return;
	for (size_t i = 0; r->skipped && r->skipped[i]; i++)
		free(r->skipped[i]);
	free(r->skipped);
	*r = (struct export_extract_result){0};
}

/* Makes the missing parents of dir (0755, as mkdir -p). */
static int make_parents(const char *dir, struct cp_error **err)
{
	char path[4096];
	if (snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "'%s' is too long a path", dir);
	for (char *p = path + 1; *p; p++)
		if (*p == '/') {
			*p = '\0';
			if (mkdir(path, 0755) < 0 && errno != EEXIST)
				return cp_error_set_errno(err, CP_ERR_CONFLICT, errno, "create '%s'", path);
			*p = '/';
		}
	return 0;
}

/* DIR must be missing or an empty directory, not a symlink. *ret_exists. */
static int target_check(const char *dir, int *ret_exists, struct cp_error **err)
{
	struct stat st;
	*ret_exists = 0;
	if (lstat(dir, &st) < 0) {
		if (errno == ENOENT)
			return 0;
		return cp_error_set_errno(err, CP_ERR_CONFLICT, errno, "look at '%s'", dir);
	}
	if (S_ISLNK(st.st_mode))
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "'%s' is a symbolic link; name a new or empty directory with --to (nothing was "
		                    "written)",
		                    dir);
	if (!S_ISDIR(st.st_mode))
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "'%s' is not a directory; name a new or empty directory with --to (nothing was "
		                    "written)",
		                    dir);
	DIR *d = opendir(dir);
	if (!d)
		return cp_error_set_errno(err, CP_ERR_CONFLICT, errno, "open '%s'", dir);
	struct dirent *de;
	int empty = 1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			empty = 0;
	closedir(d);
	if (!empty)
		return cp_error_set(err, CP_ERR_CONFLICT,
		                    "'%s' is not empty; name a new or empty directory with --to (nothing was written)",
		                    dir);
	*ret_exists = 1;
	return 0;
}

static void skipped_add(struct export_extract_result *r, const char *kind, const char *shown)
{
	r->n_skipped++;
	if (r->n_listed >= EXPORT_EXTRACT_SKIPPED_LISTED)
		return;
	r->skipped = xrealloc(r->skipped, (r->n_listed + 2) * sizeof(*r->skipped));
	r->skipped[r->n_listed++] = xasprintf("%s \"%s\" (not made)", kind, shown);
	r->skipped[r->n_listed] = NULL;
}

/* Writes every entry of a into the current directory; tmp names it in
 * messages. 0 or -1 with *err (DENIED for a refused entry). */
static int write_entries(struct archive *a, int64_t archive_bytes, const char *shown_dir,
                         struct export_extract_result *ret, struct cp_error **err)
{
	struct archive *w = archive_write_disk_new();
	archive_write_disk_set_options(w, ARCHIVE_EXTRACT_TIME | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
	                                      ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS |
	                                      ARCHIVE_EXTRACT_NO_OVERWRITE);
	int64_t declared = 0, seen = 0;
	int r = 0, rc;
	struct archive_entry *e;
	while (r == 0 && (rc = archive_read_next_header(a, &e)) == ARCHIVE_OK) {
		const char *name = archive_entry_pathname(e), *why = NULL;
		char shown[600];
		policy_text_escape(name ? name : "", name ? strlen(name) : 0, shown, sizeof(shown));
		if (++seen > EXPORT_EXTRACT_ENTRIES_MAX) {
			r = cp_error_set(err, CP_ERR_LIMIT, "the archive holds more than %d entries; it was refused",
			                 EXPORT_EXTRACT_ENTRIES_MAX);
			break;
		}
		enum export_entry_action act =
		    export_extract_judge(name, archive_entry_filetype(e), archive_entry_hardlink(e), &why);
		if (act == EXPORT_ENTRY_IGNORE)
			continue;
		if (act == EXPORT_ENTRY_SKIP) {
			skipped_add(ret, why, shown);
			continue;
		}
		if (act == EXPORT_ENTRY_REFUSE) {
			r = cp_error_set(err, CP_ERR_DENIED, "entry \"%s\" was refused: %s", shown, why);
			break;
		}
		declared += archive_entry_size_is_set(e) && archive_entry_size(e) > 0 ? archive_entry_size(e) : 0;
		if (declared > archive_bytes) {
			r = cp_error_set(err, CP_ERR_DENIED,
			                 "entry \"%s\" was refused: the entries declare more bytes than the archive's "
			                 "%lld (a sparse or doctored entry)",
			                 shown, (long long)archive_bytes);
			break;
		}
		/* Everything in the fresh directory came from this archive: a name
		 * taken already is a second entry of it (or a path through a link),
		 * which would otherwise end in a half-written file. */
		struct stat taken;
		if (archive_entry_filetype(e) != AE_IFDIR &&
		    fstatat(AT_FDCWD, name, &taken, AT_SYMLINK_NOFOLLOW) == 0) {
			r = cp_error_set(err, CP_ERR_DENIED,
			                 "entry \"%s\" was refused: an entry of that name was written already", shown);
			break;
		}
		archive_entry_set_perm(e, archive_entry_perm(e) & 0777);
		if (archive_write_header(w, e) != ARCHIVE_OK) {
			r = cp_error_set(err, CP_ERR_DENIED, "entry \"%s\" was refused: %s", shown,
			                 archive_error_string(w) ? archive_error_string(w) : "libarchive refused it");
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
			const char *msg = archive_error_string(w) ? archive_error_string(w) : archive_error_string(a);
			r = cp_error_set(err, CP_ERR_INTERNAL, "write \"%s\" into '%s': %s", shown, shown_dir,
			                 msg ? msg : "unknown error");
			break;
		}
		ret->entries++;
	}
	if (r == 0 && rc != ARCHIVE_EOF)
		r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "the archive is damaged after %lld entries: %s",
		                 (long long)seen, archive_error_string(a) ? archive_error_string(a) : "unknown error");
	if (archive_write_close(w) != ARCHIVE_OK && r == 0)
		r = cp_error_set(err, CP_ERR_INTERNAL, "finish writing into '%s': %s", shown_dir,
		                 archive_error_string(w) ? archive_error_string(w) : "unknown error");
	archive_write_free(w);
	return r;
}

/* A fresh directory beside dir: "<parent>/.<name>.chat2sbx-partial-XXXXXX". */
static char *temp_beside(const char *dir, struct cp_error **err)
{
	const char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	char *tmp = slash ? xasprintf("%.*s/.%.200s.chat2sbx-partial-XXXXXX", (int)(slash - dir), dir, base)
	                  : xasprintf(".%.200s.chat2sbx-partial-XXXXXX", base);
	if (!mkdtemp(tmp)) {
		cp_error_set_errno(err, CP_ERR_CONFLICT, errno, "create a directory beside '%s'", dir);
		free(tmp);
		return NULL;
	}
	return tmp;
}

int export_archive_extract(const char *path, const char *to_dir, struct export_extract_result *ret,
                           struct cp_error **err)
{
	*ret = (struct export_extract_result){0};
	/* "a/b/" is "a/b"; "/" stays. */
	_cleanup_free_ char *dir = xstrdup(to_dir);
	for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
		dir[n - 1] = '\0';
	int exists = 0;
	if (!*dir)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "--to needs a directory");
	if (target_check(dir, &exists, err) < 0 || make_parents(dir, err) < 0)
		return -1;
	struct stat st;
	if (stat(path, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_NOT_FOUND, errno, "read the archive '%s'", path);
	_cleanup_free_ char *tmp = temp_beside(dir, err);
	if (!tmp)
		return -1;
	struct statvfs sv;
	if (statvfs(tmp, &sv) == 0 && (int64_t)sv.f_bavail * (int64_t)sv.f_frsize < (int64_t)st.st_size) {
		export_dir_remove(tmp);
		return cp_error_set(err, CP_ERR_LIMIT,
		                    "the disk of '%s' has %lld MiB free, less than the archive's %lld MiB; nothing "
		                    "was written. Free space there or name a directory on another disk",
		                    dir, (long long)((int64_t)sv.f_bavail * (int64_t)sv.f_frsize >> 20),
		                    (long long)(st.st_size >> 20));
	}
	struct archive *a = export_archive_open(path, err);
	if (!a) {
		export_dir_remove(tmp);
		return -1;
	}
	int r = -1;
	_cleanup_close_ int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cwd < 0 || chdir(tmp) < 0) {
		cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "enter '%s'", tmp);
	} else {
		/* libarchive writes relative to the working directory. */
		r = write_entries(a, (int64_t)st.st_size, dir, ret, err);
		if (fchdir(cwd) < 0 && r == 0)
			r = cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "return to the working directory");
	}
	archive_read_free(a);
	if (r == 0 && chmod(tmp, 0755) < 0)
		r = cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "make '%s' readable", tmp);
	if (r == 0) {
		/* An empty DIR is replaced whole; a missing one must still be
		 * missing (someone may have made it meanwhile). */
		int rr = exists ? rename(tmp, dir) : renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE);
		if (rr < 0)
			r = cp_error_set_errno(err, CP_ERR_CONFLICT, errno,
			                       "put the copy in place as '%s' (it changed meanwhile; nothing was kept)",
			                       dir);
	}
	if (r < 0) {
		export_dir_remove(tmp);
		export_extract_result_clear(ret);
		return cp_error_prefix(err, "nothing was written to '%s'", dir);
	}
	return 0;
}
