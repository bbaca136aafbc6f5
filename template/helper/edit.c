/* edit.c: file.edit: replace an exact string (old_string → new_string) in a
 * text file of at most PROTO_READ_WHOLE_MAX bytes. The file is read whole,
 * the replacement is made in memory and written back atomically through
 * files_write_atomic (temp file, fsync, rename, mode kept, symlinks
 * followed), with the hash of what was read as its precondition, so a
 * concurrent change is never overwritten. */
#include "edit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "files.h"
#include "paths.h"
#include "sha256.h"
#include "xalloc.h"
#include "xjson.h"

int edit_read_text(const char *abs, const char *shown, const char *op, struct edit_text *t, struct rpc_error *err)
{
	memset(t, 0, sizeof *t);
	int fd = open(abs, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return rpc_fail(err, "NOT_FOUND",
			                "'%s' does not exist; check the path (relative paths start at %s)", shown,
			                paths_workspace());
		return rpc_fail_errno(err, errno, "open", shown);
	}
	if (fstat(fd, &t->st) < 0) {
		int e = errno;
		close(fd);
		return rpc_fail_errno(err, e, "stat", shown);
	}
	if (!S_ISREG(t->st.st_mode)) {
		close(fd);
		return rpc_fail(err, "INVALID_ARGUMENT", "'%s' is %s, not a regular file", shown,
		                S_ISDIR(t->st.st_mode) ? "a directory" : "a device, FIFO or socket");
	}
	fcntl(fd, F_SETFL, 0);
	uint64_t size = t->st.st_size > 0 ? (uint64_t)t->st.st_size : 0;
	if (size > FILES_WHOLE_MAX) {
		close(fd);
		return rpc_fail(err, "LIMIT",
		                "'%s' is larger than %llu bytes, too large for %s; change it with bash "
		                "(sed, a script) instead",
		                shown, FILES_WHOLE_MAX, op);
	}
	size_t cap = (size_t)size + 1, len = 0;
	char *buf = xmalloc(cap + 1); /* size <= FILES_WHOLE_MAX, checked above */
	for (;;) {
		if (len == cap) { /* it grew while we read */
			if (cap > FILES_WHOLE_MAX) {
				free(buf);
				close(fd);
				return rpc_fail(err, "LIMIT",
				                "'%s' grew beyond %llu bytes while it was read, too large for %s",
				                shown, FILES_WHOLE_MAX, op);
			}
			size_t ncap = cap * 2 > FILES_WHOLE_MAX + 1 ? FILES_WHOLE_MAX + 1 : cap * 2;
			buf = xrealloc(buf, ncap + 1);
			cap = ncap;
		}
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			free(buf);
			close(fd);
			return rpc_fail_errno(err, e, "read", shown);
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	t->data = buf;
	t->len = len;
	t->binary = memchr(buf, '\0', len < FILES_BINARY_PROBE ? len : FILES_BINARY_PROBE) != NULL;
	sha256_hex(buf, len, t->sha256);
	return 0;
}

bool edit_is_crlf(const char *data, size_t len)
{
	bool crlf = false;
	for (const char *p = data, *end = data + len; (p = memchr(p, '\n', (size_t)(end - p))); p++) {
		if (p == data || p[-1] != '\r')
			return false;
		crlf = true;
	}
	return crlf;
}

/* s with every "\n" turned into "\r\n" (malloc'd, NUL-terminated). */
static char *to_crlf(const char *s, size_t len, size_t *ret_len)
{
	size_t nl = 0;
	for (size_t i = 0; i < len; i++)
		nl += s[i] == '\n';
	char *out = xmalloc(len + nl + 1);
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\n')
			out[o++] = '\r';
		out[o++] = s[i];
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

static bool needs_crlf(const char *s, size_t len)
{
	return memchr(s, '\n', len) && !memchr(s, '\r', len);
}

int edit_replace(const char *data, size_t len, const char *old, size_t old_len, const char *new, size_t new_len,
                 bool replace_all, struct edit_result *res, struct rpc_error *err)
{
	memset(res, 0, sizeof *res);
	/* Count matches and the line of the first ones. */
	size_t line = 1;
	const char *counted = data; /* newlines before this were counted */
	for (const char *p = data, *end = data + len; (size_t)(end - p) >= old_len;) {
		const char *m = memmem(p, (size_t)(end - p), old, old_len);
		if (!m)
			break;
		if (res->count < EDIT_MAX_LISTED_LINES) {
			for (const char *q = counted; (q = memchr(q, '\n', (size_t)(m - q))); q++)
				line++;
			counted = m;
			res->lines[res->count] = line;
		}
		res->count++;
		p = m + 1; /* the next match may start inside this one */
	}
	if (res->count == 0 || (res->count > 1 && !replace_all))
		return 0;
	/* What is replaced: left to right, each match after the previous one. */
	size_t n = 0;
	for (const char *p = data, *end = data + len; (size_t)(end - p) >= old_len;) {
		const char *m = memmem(p, (size_t)(end - p), old, old_len);
		if (!m)
			break;
		n++;
		p = m + old_len;
	}
	res->replaced = n;
	size_t out_len;
	if (new_len >= old_len) {
		size_t grow = new_len - old_len;
		if (n > (SIZE_MAX - len) / (grow ? grow : 1))
			return rpc_fail(err, "LIMIT", "the edited content would be too large");
		out_len = len + n * grow;
	} else {
		out_len = len - n * (old_len - new_len);
	}
	char *out = xmalloc(out_len + 1);
	size_t o = 0;
	const char *p = data, *end = data + len;
	for (size_t i = 0; i < n; i++) {
		const char *m = memmem(p, (size_t)(end - p), old, old_len);
		memcpy(out + o, p, (size_t)(m - p));
		o += (size_t)(m - p);
		memcpy(out + o, new, new_len);
		o += new_len;
		p = m + old_len;
	}
	memcpy(out + o, p, (size_t)(end - p));
	o += (size_t)(end - p);
	out[o] = '\0';
	res->data = out;
	res->len = o;
	return 0;
}

static bool hex64(const char *s, size_t len)
{
	return len == 64 && strspn(s, "0123456789abcdefABCDEF") == 64;
}

int edit_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *path, *old, *new, *expected;
	size_t path_len, old_len, new_len, expected_len;
	bool replace_all;
	if (rpc_param_string(params, "path", true, &path, &path_len, err) < 0 ||
	    rpc_param_string(params, "old_string", true, &old, &old_len, err) < 0 ||
	    rpc_param_string(params, "new_string", true, &new, &new_len, err) < 0 ||
	    rpc_param_bool(params, "replace_all", false, &replace_all, err) < 0)
		return -1;
	int has_expected = rpc_param_string(params, "expected_sha256", false, &expected, &expected_len, err);
	if (has_expected < 0)
		return -1;
	if (has_expected && !hex64(expected, expected_len))
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "expected_sha256 must be 64 hex digits (the sha256 a read returned)");
	if (old_len == 0)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "old_string is empty; pass the exact text to replace (to create or overwrite a "
		                "whole file use the write tool)");
	if (old_len == new_len && memcmp(old, new, old_len) == 0)
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "old_string and new_string are identical; nothing would change");
	char *abs;
	if (paths_resolve(path, path_len, "path", &abs, err) < 0)
		return -1;
	int r = -1;
	struct edit_text t;
	struct edit_result res = {0};
	char *old_crlf = NULL, *new_crlf = NULL;
	if (edit_read_text(abs, abs, "edit", &t, err) < 0) {
		free(abs);
		return -1;
	}
	if (t.binary) {
		rpc_fail(err, "INVALID_ARGUMENT",
		         "'%s' is a binary file (a NUL byte in its first %d bytes); edit changes text "
		         "files only: use the write tool to replace it whole, or bash",
		         abs, FILES_BINARY_PROBE);
		goto out;
	}
	if (has_expected && strcasecmp(t.sha256, expected) != 0) {
		rpc_fail(err, "CONFLICT",
		         "'%s' changed since it was read (sha256 is now %s); read it again and reapply the change", abs,
		         t.sha256);
		goto out;
	}
	/* A model writes "\n"; a CRLF file keeps its line endings. */
	if (edit_is_crlf(t.data, t.len)) {
		if (needs_crlf(old, old_len)) {
			old = old_crlf = to_crlf(old, old_len, &old_len);
		}
		if (needs_crlf(new, new_len)) {
			new = new_crlf = to_crlf(new, new_len, &new_len);
		}
	}
	if (edit_replace(t.data, t.len, old, old_len, new, new_len, replace_all, &res, err) < 0)
		goto out;
	if (res.count == 0) {
		rpc_fail(err, "NOT_FOUND",
		         "old_string was not found in '%s'; read the file again and copy the exact text "
		         "(whitespace and line endings matter)",
		         abs);
		goto out;
	}
	if (!res.data) {
		char list[256];
		size_t o = 0, shown = res.count < EDIT_MAX_LISTED_LINES ? res.count : EDIT_MAX_LISTED_LINES;
		list[0] = '\0';
		for (size_t i = 0; i < shown && o < sizeof list; i++)
			o += (size_t)snprintf(list + o, sizeof list - o, "%s%zu", i ? ", " : "", res.lines[i]);
		rpc_fail(err, "CONFLICT",
		         "old_string matches %zu times in '%s' (lines %s%s), overlapping matches counted; add "
		         "surrounding context to make it unique, or pass replace_all",
		         res.count, abs, list, res.count > shown ? ", …" : "");
		goto out;
	}
	bool created;
	char sha[65];
	/* The hash just read guards the write: a change in between is a CONFLICT. */
	if (files_write_atomic(abs, res.data, res.len, false, t.sha256, &created, sha, err) < 0)
		goto out;
	json_object *o = xjson_object();
	xjson_add(o, "path", xjson_string(abs));
	xjson_add(o, "replacements", xjson_int64((int64_t)res.replaced));
	xjson_add(o, "bytes_written", xjson_int64((int64_t)res.len));
	xjson_add(o, "sha256", xjson_string(sha));
	*ret_result = o;
	r = 0;
out:
	free(old_crlf);
	free(new_crlf);
	free(res.data);
	free(t.data);
	free(abs);
	return r;
}
