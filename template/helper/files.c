/* files.c: file.read and file.write inside the sandbox. Reads stream the
 * file once (line selection, binary probe, content hash) with memory
 * bounded by max_bytes; writes are atomic (temp file in the same directory,
 * fsync, rename) and never leave a temp file behind. Paths are resolved by
 * paths.c; what may be touched is decided on the host, not here. */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "paths.h"
#include "sha256.h"
#include "utf8.h"
#include "xalloc.h"
#include "xjson.h"

#define CHUNK (64 * 1024)

/* Line selection state while streaming. */
struct selector {
	uint64_t offset, end; /* selected lines: [offset, end) */
	size_t max_bytes;
	char *out;
	size_t out_len, last_end; /* last_end: out_len after the last whole line */
	uint64_t line;            /* number of the line the next byte belongs to */
	uint64_t lines_out;
	uint64_t base;    /* file offset of the chunk being selected from */
	uint64_t end_pos; /* file offset just after line end-1, once reached */
	bool stopped, cut, partial_first;
};

static bool selected(const struct selector *s)
{
	return !s->stopped && s->line >= s->offset && s->line < s->end;
}

/* Nothing more can be selected: limit lines taken, or max_bytes reached. */
static bool selection_done(const struct selector *s)
{
	return s->stopped || s->line >= s->end;
}

static void select_chunk(struct selector *s, const char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(p + i, '\n', n - i);
		size_t seg_end = nl ? (size_t)(nl - p) + 1 : n;
		size_t seg = seg_end - i;
		if (selected(s)) {
			if (s->out_len + seg <= s->max_bytes) {
				memcpy(s->out + s->out_len, p + i, seg);
				s->out_len += seg;
			} else {
				s->stopped = s->cut = true;
				if (s->lines_out == 0) {
					/* Even the first line does not fit: return its start. */
					size_t room = s->max_bytes - s->out_len;
					memcpy(s->out + s->out_len, p + i, room);
					s->out_len += room;
					s->partial_first = true;
				} else {
					s->out_len = s->last_end;
				}
			}
		}
		if (nl) {
			if (selected(s)) {
				s->lines_out++;
				s->last_end = s->out_len;
			}
			s->line++;
			if (s->line == s->end)
				s->end_pos = s->base + seg_end;
		}
		i = seg_end;
	}
}

/* Read fd from its start: binary probe, line selection and, when whole,
 * the hash of every byte to the end (at most read_max bytes). When not
 * whole, stop as soon as the selection is complete (or the file is
 * binary), and fail with LIMIT when the selection has not started within
 * FILES_WHOLE_MAX bytes. Fills sel->binary and sel->sha256 (whole only);
 * *ret_read gets the bytes read, *ret_last the last byte ('\n' for an
 * empty file), *ret_eof whether the end of the file was seen. */
static int stream_file(int fd, uint64_t read_max, bool whole, struct selector *s, struct files_selection *sel,
                       uint64_t *ret_read, char *ret_last, bool *ret_eof, const char *path, struct rpc_error *err)
{
	char *buf = xmalloc(CHUNK);
	struct sha256_ctx h;
	sha256_init(&h);
	uint64_t size = 0;
	char last = '\n';
	bool eof = false;
	for (;;) {
		if (!whole && (sel->binary || selection_done(s)))
			break;
		if (!whole && size >= FILES_WHOLE_MAX && s->line < s->offset) {
			free(buf);
			uint64_t to = s->end - 1;
			return rpc_fail(err, "LIMIT",
			                "'%s' is larger than %llu bytes and line %" PRIu64
			                " is not within its first %llu bytes, so read does not reach it; "
			                "use bash instead: sed -n '%" PRIu64 ",%" PRIu64 "p' '%s' prints lines %" PRIu64
			                " to %" PRIu64 ", tail -n 100 '%s' the last 100 lines",
			                path, FILES_WHOLE_MAX, s->offset, FILES_WHOLE_MAX, s->offset, to, path,
			                s->offset, to, path);
		}
		size_t want = read_max - size < CHUNK ? (size_t)(read_max - size) : CHUNK;
		if (want == 0)
			break;
		ssize_t n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			return rpc_fail_errno(err, e, "read", path);
		}
		if (n == 0) {
			eof = true;
			break;
		}
		if (size < FILES_BINARY_PROBE) {
			size_t probe = FILES_BINARY_PROBE - size < (size_t)n ? FILES_BINARY_PROBE - size : (size_t)n;
			if (memchr(buf, '\0', probe))
				sel->binary = true;
		}
		if (whole)
			sha256_update(&h, (size_t)n, (const uint8_t *)buf);
		if (!sel->binary) {
			s->base = size;
			select_chunk(s, buf, (size_t)n);
		}
		size += (size_t)n;
		last = buf[n - 1];
	}
	free(buf);
	if (whole)
		sha256_final_hex(&h, sel->sha256);
	*ret_read = size;
	*ret_last = last;
	*ret_eof = eof;
	return 0;
}

int files_read_fd(int fd, const char *path, uint64_t offset, uint64_t limit, size_t max_bytes,
                  struct files_selection *sel, struct rpc_error *err)
{
	memset(sel, 0, sizeof *sel);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return rpc_fail_errno(err, errno, "stat", path);
	struct selector s = {.offset = offset,
	                     .end = offset + limit < offset ? UINT64_MAX : offset + limit,
	                     .max_bytes = max_bytes,
	                     .line = 1};
	s.out = xmalloc(max_bytes + 1); /* max_bytes is bounded by the caller */
	/* Small files are read whole (a file that keeps growing is cut at its
	 * size plus FILES_READ_SLACK); large ones only as far as the selection. */
	uint64_t fsize = st.st_size > 0 ? (uint64_t)st.st_size : 0;
	sel->whole = fsize <= FILES_WHOLE_MAX;
	uint64_t got = 0;
	char last = '\n';
	bool eof = false;
	if (stream_file(fd, sel->whole ? fsize + FILES_READ_SLACK : UINT64_MAX, sel->whole, &s, sel, &got, &last, &eof,
	                path, err) < 0) {
		free(s.out);
		return -1;
	}
	sel->size = sel->whole || eof || got > fsize ? got : fsize;
	sel->total_known = sel->whole || eof;
	if (sel->binary) {
		free(s.out);
		return 0;
	}
	sel->start_line = offset;
	bool unterminated = sel->total_known && got > 0 && last != '\n';
	if (unterminated && selected(&s)) {
		s.lines_out++;
		s.last_end = s.out_len;
	}
	if (sel->total_known) {
		sel->total_lines = s.line - 1 + (unterminated ? 1 : 0);
		uint64_t highest = sel->total_lines ? sel->total_lines : 1;
		if (offset > highest) {
			free(s.out);
			return rpc_fail(err, "INVALID_ARGUMENT",
			                "offset %" PRIu64 " is past the end of '%s', which has %" PRIu64
			                " lines; pass an offset from 1 to %" PRIu64,
			                offset, path, sel->total_lines, highest);
		}
	}
	if (s.partial_first)
		s.out_len -= utf8_incomplete_suffix((unsigned char *)s.out, s.out_len);
	sel->lines = s.lines_out + (s.partial_first ? 1 : 0);
	if (sel->total_known)
		sel->truncated = s.cut || offset + sel->lines - 1 < sel->total_lines;
	else /* stopped early: by max_bytes, or after line end-1 */
		sel->truncated = s.cut || s.end_pos < sel->size;
	sel->content = utf8_sanitize((unsigned char *)s.out, s.out_len, &sel->content_len);
	free(s.out);
	return 0;
}

/* file.read "numbered": prefix each line of sel->content with its number
 * right-aligned in 6 columns and a tab (cat -n), keeping whole lines within
 * max_bytes (only the start of the first line, cut at a character boundary,
 * when even it does not fit); lines that no longer fit are dropped and
 * the selection is marked truncated. The content is valid UTF-8 already. */
static void number_lines(struct files_selection *sel, size_t max_bytes)
{
	const char *p = sel->content, *end = p + sel->content_len;
	size_t segments = 1;
	for (const char *q = p; (q = memchr(q, '\n', (size_t)(end - q))); q++)
		segments++;
	char *out = xmalloc(sel->content_len + segments * 24 + 1);
	size_t o = 0;
	uint64_t kept = 0, num = sel->start_line;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t seg = nl ? (size_t)(nl - p) + 1 : (size_t)(end - p);
		char pre[32];
		size_t pn = (size_t)snprintf(pre, sizeof pre, "%6" PRIu64 "\t", num);
		if (o + pn + seg > max_bytes) {
			sel->truncated = true;
			if (kept == 0) {
				memcpy(out, pre, pn);
				memcpy(out + pn, p, seg);
				size_t n = max_bytes;
				while (n > 0 && ((unsigned char)out[n] & 0xC0) == 0x80)
					n--;
				o = n;
				kept = 1;
			}
			break;
		}
		memcpy(out + o, pre, pn);
		memcpy(out + o + pn, p, seg);
		o += pn + seg;
		kept++;
		num++;
		p += seg;
	}
	out[o] = '\0';
	free(sel->content);
	sel->content = out;
	sel->content_len = o;
	sel->lines = kept;
}

/* Open path for reading without blocking on FIFOs or devices; only regular
 * files are accepted. */
static int open_regular(const char *path, int *ret_fd, struct rpc_error *err)
{
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return rpc_fail(err, "NOT_FOUND",
			                "'%s' does not exist; check the path (relative paths start "
			                "at %s)",
			                path, paths_workspace());
		return rpc_fail_errno(err, errno, "open", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return rpc_fail_errno(err, e, "stat", path);
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "'%s' is a directory; read a file in it, or list it with bash 'ls'", path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "'%s' is not a regular file (a device, FIFO or socket); inspect it "
		                "with bash instead",
		                path);
	}
	fcntl(fd, F_SETFL, 0);
	*ret_fd = fd;
	return 0;
}

int files_rpc_read(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *path;
	size_t path_len;
	int64_t offset, limit, max_bytes;
	bool numbered;
	if (rpc_param_string(params, "path", true, &path, &path_len, err) < 0 ||
	    rpc_param_bool(params, "numbered", false, &numbered, err) < 0 ||
	    rpc_param_int(params, "offset", 1, 1, INT64_MAX, false, &offset, err) < 0 ||
	    rpc_param_int(params, "limit", FILES_DEFAULT_LIMIT, 1, FILES_MAX_LIMIT, true, &limit, err) < 0 ||
	    rpc_param_int(params, "max_bytes", FILES_DEFAULT_MAX_BYTES, 1, FILES_MAX_BYTES, true, &max_bytes, err) < 0)
		return -1;
	char *abs;
	if (paths_resolve(path, path_len, "path", &abs, err) < 0)
		return -1;
	int fd;
	struct files_selection sel;
	if (open_regular(abs, &fd, err) < 0) {
		free(abs);
		return -1;
	}
	int r = files_read_fd(fd, abs, (uint64_t)offset, (uint64_t)limit, (size_t)max_bytes, &sel, err);
	close(fd);
	if (r == 0 && numbered && !sel.binary)
		number_lines(&sel, (size_t)max_bytes);
	if (r < 0) {
		free(abs);
		return -1;
	}
	json_object *o = xjson_object();
	xjson_add(o, "path", xjson_string(abs));
	if (sel.binary) {
		xjson_add(o, "binary", xjson_bool(true));
	} else {
		xjson_add(o, "content", xjson_string_len(sel.content, sel.content_len));
		xjson_add(o, "start_line", xjson_int64((int64_t)sel.start_line));
		xjson_add(o, "lines", xjson_int64((int64_t)sel.lines));
		if (sel.total_known)
			xjson_add(o, "total_lines", xjson_int64((int64_t)sel.total_lines));
		xjson_add(o, "total_lines_known", xjson_bool(sel.total_known));
		xjson_add(o, "truncated", xjson_bool(sel.truncated));
		xjson_add(o, "binary", xjson_bool(false));
	}
	xjson_add(o, "size", xjson_int64((int64_t)sel.size));
	if (sel.whole) {
		xjson_add(o, "sha256", xjson_string(sel.sha256));
	} else {
		char why[64];
		snprintf(why, sizeof why, "file larger than %llu bytes", FILES_WHOLE_MAX);
		xjson_add(o, "sha256_skipped", xjson_string(why));
	}
	free(sel.content);
	free(abs);
	*ret_result = o;
	return 0;
}

/* ---- file.write ---- */

static int too_large_to_check(const char *path, struct rpc_error *err)
{
	return rpc_fail(err, "LIMIT",
	                "'%s' is larger than %llu bytes, so its sha256 is not computed and "
	                "expected_sha256 cannot be checked; write it without expected_sha256",
	                path, FILES_WHOLE_MAX);
}

/* Hash a file of at most FILES_WHOLE_MAX bytes (LIMIT beyond). */
static int hash_file(const char *path, char hex[65], struct rpc_error *err)
{
	int fd = -1;
	struct stat st;
	if (open_regular(path, &fd, err) < 0)
		return -1;
	if (fstat(fd, &st) == 0 && (uint64_t)st.st_size > FILES_WHOLE_MAX) {
		close(fd);
		return too_large_to_check(path, err);
	}
	struct sha256_ctx h;
	sha256_init(&h);
	char *buf = xmalloc(CHUNK);
	ssize_t n = 0;
	uint64_t total = 0;
	while (total <= FILES_WHOLE_MAX && ((n = read(fd, buf, CHUNK)) > 0 || (n < 0 && errno == EINTR))) {
		if (n > 0) {
			sha256_update(&h, (size_t)n, (const uint8_t *)buf);
			total += (size_t)n;
		}
	}
	int e = errno;
	free(buf);
	close(fd);
	if (n < 0)
		return rpc_fail_errno(err, e, "read", path);
	if (total > FILES_WHOLE_MAX) /* it grew while we read */
		return too_large_to_check(path, err);
	sha256_final_hex(&h, hex);
	return 0;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Check the parent directory of target, creating it when asked. */
static int write_parent(const char *target, bool create_dirs, char **ret_dir, struct rpc_error *err)
{
	char *copy = xstrdup(target);
	char *dir = xstrdup(dirname(copy));
	free(copy);
	struct stat st;
	if (stat(dir, &st) < 0) {
		int e = errno;
		if (e == ENOENT && create_dirs) {
			int r = paths_mkdir_p(dir, 0755);
			if (r < 0) {
				rpc_fail_errno(err, -r, "create directory", dir);
				free(dir);
				return -1;
			}
		} else if (e == ENOENT) {
			rpc_fail(err, "NOT_FOUND",
			         "parent directory '%s' does not exist; pass create_dirs:true to "
			         "create it",
			         dir);
			free(dir);
			return -1;
		} else {
			rpc_fail_errno(err, e, "stat", dir);
			free(dir);
			return -1;
		}
	} else if (!S_ISDIR(st.st_mode)) {
		rpc_fail(err, "INVALID_ARGUMENT", "'%s' is not a directory", dir);
		free(dir);
		return -1;
	}
	*ret_dir = dir;
	return 0;
}

/* Write content to a new temp file in dir and rename it over target. */
static int write_replace(const char *target, const char *dir, const char *content, size_t len, const struct stat *old,
                         struct rpc_error *err)
{
	const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	char tmp[PATH_MAX];
	int n = strlen(base) <= 200 ? snprintf(tmp, sizeof tmp, "%s/.%s.chat2sbx-XXXXXX", dir, base)
	                            : snprintf(tmp, sizeof tmp, "%s/.chat2sbx-XXXXXX", dir);
	if (n < 0 || (size_t)n >= sizeof tmp)
		return rpc_fail(err, "INVALID_ARGUMENT", "path '%s' is too long", target);
	int fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return rpc_fail_errno(err, errno, "create a temporary file in", dir);
	const char *step = "write";
	int closed, dfd;
	if (write_all(fd, content, len) < 0)
		goto fail;
	step = "set the mode of";
	if (fchmod(fd, old ? old->st_mode & 07777 : 0644) < 0)
		goto fail;
	/* Keep the owner of an existing file (a host user's file in a direct
	 * workspace must stay theirs); only root can, and failing is harmless. */
	if (old && geteuid() == 0 && (old->st_uid != 0 || old->st_gid != 0) && fchown(fd, old->st_uid, old->st_gid) < 0)
		errno = 0;
	step = "fsync";
	if (fsync(fd) < 0)
		goto fail;
	step = "close";
	closed = close(fd);
	fd = -1;
	if (closed < 0)
		goto fail;
	step = "rename over";
	if (rename(tmp, target) < 0)
		goto fail;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
fail:;
	int e = errno;
	if (fd >= 0)
		close(fd);
	unlink(tmp);
	char what[64];
	snprintf(what, sizeof what, "%s (temp file, old content kept)", step);
	if (e == ENOSPC || e == EDQUOT || e == EFBIG)
		return rpc_fail(err, "LIMIT",
		                "write '%s' failed: %s; the old content is kept. Free space or "
		                "write less",
		                target, strerror(e));
	return rpc_fail_errno(err, e, what, target);
}

/* The file a write to path replaces: path itself unless it is a symlink;
 * then the end of its chain (a dangling link's target, to be created), in
 * its parent's canonical form when that parent exists. */
static int write_target(const char *path, char **ret, struct rpc_error *err)
{
	char *cur = xstrdup(path);
	bool followed = false;
	for (int hops = 0;; hops++) {
		struct stat lst;
		if (lstat(cur, &lst) < 0 || !S_ISLNK(lst.st_mode))
			break;
		char link[PATH_MAX];
		ssize_t n = hops < FILES_MAX_SYMLINKS ? readlink(cur, link, sizeof link - 1) : -1;
		if (n <= 0) {
			int e = hops < FILES_MAX_SYMLINKS ? (n < 0 ? errno : ENOENT) : ELOOP;
			free(cur);
			if (e == ELOOP)
				return rpc_fail(err, "INVALID_ARGUMENT",
				                "'%s' is a symlink chain longer than %d links (or a loop); "
				                "write to the file it should point to",
				                path, FILES_MAX_SYMLINKS);
			return rpc_fail_errno(err, e, "read symlink", path);
		}
		link[n] = '\0';
		char *next = NULL;
		if (link[0] == '/') {
			next = xstrdup(link);
		} else {
			const char *slash = strrchr(cur, '/');
			int dlen = slash ? (int)(slash - cur) : 1;
			next = xasprintf("%.*s/%s", dlen, slash ? cur : ".", link);
		}
		free(cur);
		if (strlen(next) >= PATH_MAX) {
			free(next);
			return rpc_fail(err, "INVALID_ARGUMENT",
			                "the symlink chain of '%s' leads to a path over %d bytes", path, PATH_MAX);
		}
		cur = next;
		followed = true;
	}
	if (followed) {
		char *slash = strrchr(cur, '/');
		*slash = '\0';
		char *dir = realpath(slash == cur ? "/" : cur, NULL);
		*slash = '/';
		if (dir) {
			char *clean = xasprintf("%s%s%s", dir, strcmp(dir, "/") ? "/" : "", slash + 1);
			free(cur);
			cur = clean;
		}
		free(dir);
	}
	*ret = cur;
	return 0;
}

int files_write_atomic(const char *path, const char *content, size_t len, bool create_dirs, const char *expected_sha256,
                       bool *ret_created, char *ret_sha256, struct rpc_error *err)
{
	char *target;
	if (write_target(path, &target, err) < 0)
		return -1;
	struct stat st;
	bool exists = stat(target, &st) == 0;
	int r = -1;
	char *dir = NULL;
	if (!exists && errno != ENOENT) {
		rpc_fail_errno(err, errno, "stat", target);
		goto out;
	}
	if (exists && S_ISDIR(st.st_mode)) {
		rpc_fail(err, "INVALID_ARGUMENT", "'%s' is a directory; write to a file path", path);
		goto out;
	}
	if (exists && !S_ISREG(st.st_mode)) {
		rpc_fail(err, "INVALID_ARGUMENT", "'%s' is not a regular file (a device, FIFO or socket)", path);
		goto out;
	}
	if (expected_sha256) {
		char now[65];
		if (!exists) {
			rpc_fail(err, "CONFLICT",
			         "'%s' no longer exists but expected_sha256 was given; read it "
			         "again or write without expected_sha256",
			         path);
			goto out;
		}
		if (hash_file(target, now, err) < 0)
			goto out;
		if (strcasecmp(now, expected_sha256) != 0) {
			rpc_fail(err, "CONFLICT",
			         "'%s' changed since it was read (sha256 is now %s); read it again "
			         "and reapply the change",
			         path, now);
			goto out;
		}
	}
	if (write_parent(target, create_dirs, &dir, err) < 0)
		goto out;
	if (write_replace(target, dir, content, len, exists ? &st : NULL, err) < 0)
		goto out;
	struct sha256_ctx h;
	sha256_init(&h);
	sha256_update(&h, len, (const uint8_t *)content);
	sha256_final_hex(&h, ret_sha256);
	*ret_created = !exists;
	r = 0;
out:
	free(dir);
	free(target);
	return r;
}

int files_rpc_write(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *path, *content, *expected;
	size_t path_len, content_len, expected_len;
	bool create_dirs;
	if (rpc_param_string(params, "path", true, &path, &path_len, err) < 0 ||
	    rpc_param_string(params, "content", true, &content, &content_len, err) < 0 ||
	    rpc_param_bool(params, "create_dirs", false, &create_dirs, err) < 0)
		return -1;
	int has_expected = rpc_param_string(params, "expected_sha256", false, &expected, &expected_len, err);
	if (has_expected < 0)
		return -1;
	if (has_expected && (expected_len != 64 || strspn(expected, "0123456789abcdefABCDEF") != 64))
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "expected_sha256 must be 64 hex digits (the sha256 a read returned)");
	char *abs;
	if (paths_resolve(path, path_len, "path", &abs, err) < 0)
		return -1;
	bool created;
	char sha[65];
	if (files_write_atomic(abs, content, content_len, create_dirs, has_expected ? expected : NULL, &created, sha,
	                       err) < 0) {
		free(abs);
		return -1;
	}
	json_object *o = xjson_object();
	xjson_add(o, "path", xjson_string(abs));
	xjson_add(o, "bytes_written", xjson_int64((int64_t)content_len));
	xjson_add(o, "created", xjson_bool(created));
	xjson_add(o, "sha256", xjson_string(sha));
	free(abs);
	*ret_result = o;
	return 0;
}
