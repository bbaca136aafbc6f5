/* search.c: file.search, a grep inside the sandbox. The pattern is compiled
 * once with PCRE2 (UTF, invalid UTF tolerated in subjects, JIT when the
 * platform allows it); each text file is streamed through a bounded buffer
 * and matched line by line; directories are walked by list.c's walker. The
 * loop is single-threaded, so everything is bounded: matches, reply bytes,
 * entries walked, file size, PCRE2's match limit per line and wall time. */
#include "search.h"
#include "xalloc.h"
#include "xjson.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "list.h"
#include "paths.h"
#include "utf8.h"

#define BINARY_PROBE 8192           /* a NUL in these first bytes: binary, skipped */
#define BUF_START (256 * 1024)      /* read buffer; grows for longer lines */
#define TIME_CHECK_LINES 16         /* lines matched between two clock reads */
#define ELLIPSIS "\xe2\x80\xa6"     /* "…" after a line cut at SEARCH_LINE_MAX */
#define JIT_STACK_MAX (1024 * 1024) /* JIT run-time stack for deeply nested patterns */

/* File systems whose files are not files (reads may block, never end or
 * have effects): not descended into when a walk reaches them. */
#define PROC_MAGIC 0x9fa0
#define SYSFS_MAGIC 0x62656572
#define DEBUGFS_MAGIC 0x64626720
#define TRACEFS_MAGIC 0x74726163
#define SECURITYFS_MAGIC 0x73636673
#define CGROUP_MAGIC 0x27e0eb
#define CGROUP2_MAGIC 0x63677270
#define DEVPTS_MAGIC 0x1cd1
#define BPF_MAGIC 0xcafe4a11

static long time_limit_ms = SEARCH_TIME_MS;

void search_set_time_limit_ms(long ms)
{
	time_limit_ms = ms;
}

static int64_t clock_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct searcher {
	pcre2_code *code;
	pcre2_match_data *md;
	pcre2_match_context *mctx;
	pcre2_jit_stack *jit_stack;
	int64_t max_matches;
	size_t max_bytes;
	char *out; /* the "matches" text */
	size_t out_len, out_cap;
	int64_t count, files_searched;
	const char *reason; /* why the search stopped early; NULL when it did not */
	int64_t deadline;
	unsigned lines_since_check;
	char *buf;
	size_t buf_cap;
};

static bool out_of_time(struct searcher *s)
{
	if (clock_ms() < s->deadline)
		return false;
	s->reason = "time";
	return true;
}

/* Add "shown:line:text\n" for a matching line; false (s->reason set) when
 * a bound stops the search here. */
static bool emit(struct searcher *s, const char *shown, uint64_t line, const char *text, size_t n)
{
	if (s->count >= s->max_matches) {
		s->reason = "max_matches";
		return false;
	}
	bool cut = n > SEARCH_LINE_MAX;
	size_t keep = n;
	if (cut)
		keep = SEARCH_LINE_MAX - utf8_incomplete_suffix((const unsigned char *)text, SEARCH_LINE_MAX);
	char num[24];
	int num_len = snprintf(num, sizeof num, "%" PRIu64, line);
	size_t shown_len = strlen(shown);
	size_t raw_len = shown_len + 1 + (size_t)num_len + 1 + keep + (cut ? strlen(ELLIPSIS) : 0) + 1;
	char *raw = xmalloc(raw_len);
	char *p = raw;
	memcpy(p, shown, shown_len);
	p += shown_len;
	*p++ = ':';
	memcpy(p, num, (size_t)num_len);
	p += num_len;
	*p++ = ':';
	memcpy(p, text, keep);
	p += keep;
	if (cut) {
		memcpy(p, ELLIPSIS, strlen(ELLIPSIS));
		p += strlen(ELLIPSIS);
	}
	*p++ = '\n';
	size_t safe_len = 0;
	char *safe = utf8_sanitize((const unsigned char *)raw, raw_len, &safe_len);
	free(raw);
	if (s->out_len + safe_len > s->max_bytes) {
		free(safe);
		s->reason = "max_bytes";
		return false;
	}
	if (s->out_len + safe_len + 1 > s->out_cap) {
		size_t cap = s->out_cap ? s->out_cap : 4096;
		while (cap < s->out_len + safe_len + 1)
			cap *= 2;
		s->out = xrealloc(s->out, cap);
		s->out_cap = cap;
	}
	memcpy(s->out + s->out_len, safe, safe_len);
	s->out_len += safe_len;
	s->out[s->out_len] = '\0';
	free(safe);
	s->count++;
	return true;
}

/* Match one line (without its '\n'); false when the search must stop. A
 * line on which PCRE2 gives up (match or depth limit) counts as not
 * matching. */
static bool match_line(struct searcher *s, const char *shown, uint64_t line, const char *text, size_t n)
{
	int rc = pcre2_match(s->code, (PCRE2_SPTR)text, n, 0, 0, s->md, s->mctx);
	if (rc >= 0 && !emit(s, shown, line, text, n))
		return false;
	if (++s->lines_since_check >= TIME_CHECK_LINES) {
		s->lines_since_check = 0;
		if (out_of_time(s))
			return false;
	}
	return true;
}

/* Read until the buffer is full or the file ends; false at the end (or on
 * an error, which ends the file too). */
static bool fill(int fd, char *buf, size_t cap, size_t *len, uint64_t *total)
{
	while (*len < cap && *total <= SEARCH_FILE_MAX) {
		ssize_t n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		*len += (size_t)n;
		*total += (uint64_t)n;
	}
	return *total <= SEARCH_FILE_MAX;
}

/* Search the regular file abs, shown as shown in the results. Binary files
 * (a NUL in the first 8 KiB), empty ones (also what /proc and /sys report
 * for their generated files) and those over SEARCH_FILE_MAX bytes are
 * skipped. Returns false when the search must stop. */
static bool search_file(struct searcher *s, const char *abs, const char *shown)
{
	int fd = open(abs, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return true;
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size == 0 || (uint64_t)st.st_size > SEARCH_FILE_MAX) {
		close(fd);
		return true;
	}
	if (!s->buf) {
		s->buf_cap = BUF_START;
		s->buf = xmalloc(s->buf_cap);
	}
	size_t len = 0;
	uint64_t total = 0, line = 1;
	bool more = fill(fd, s->buf, s->buf_cap, &len, &total);
	if (memchr(s->buf, '\0', len < BINARY_PROBE ? len : BINARY_PROBE)) {
		close(fd);
		return true;
	}
	s->files_searched++;
	bool go = true;
	for (;;) {
		size_t start = 0;
		char *nl;
		while (go && (nl = memchr(s->buf + start, '\n', len - start))) {
			size_t end = (size_t)(nl - s->buf);
			go = match_line(s, shown, line++, s->buf + start, end - start);
			start = end + 1;
		}
		if (!go)
			break;
		if (!more) {
			if (start < len)
				go = match_line(s, shown, line, s->buf + start, len - start);
			break;
		}
		memmove(s->buf, s->buf + start, len - start);
		len -= start;
		if (len == s->buf_cap) { /* one line fills the buffer: grow it (files stop at SEARCH_FILE_MAX) */
			s->buf_cap *= 2;
			s->buf = xrealloc(s->buf, s->buf_cap);
		}
		if (out_of_time(s)) {
			go = false;
			break;
		}
		more = fill(fd, s->buf, s->buf_cap, &len, &total);
	}
	close(fd);
	return go;
}

static bool pseudo_fs(const char *abs)
{
	struct statfs fs;
	if (statfs(abs, &fs) < 0)
		return false;
	switch ((unsigned long)fs.f_type) {
	case PROC_MAGIC:
	case SYSFS_MAGIC:
	case DEBUGFS_MAGIC:
	case TRACEFS_MAGIC:
	case SECURITYFS_MAGIC:
	case CGROUP_MAGIC:
	case CGROUP2_MAGIC:
	case DEVPTS_MAGIC:
	case BPF_MAGIC: return true;
	default: return false;
	}
}

/* Walk the directory root; entries are shown relative to it, or absolute
 * when absolute is set. Returns -1 (err set) on failure. */
static int search_tree(struct searcher *s, const char *root, dev_t root_dev, const char *glob, bool absolute,
                       struct rpc_error *err)
{
	struct walk w;
	int r = walk_init(&w, root, 0, WALK_MAX_ENTRIES);
	if (r < 0)
		return rpc_fail_errno(err, -r, "open directory", root);
	struct walk_entry e;
	while (!s->reason && walk_next(&w, &e)) {
		if (S_ISDIR(e.st.st_mode)) {
			if (e.st.st_dev != root_dev && pseudo_fs(e.abs))
				walk_prune(&w);
			continue;
		}
		if (S_ISLNK(e.st.st_mode)) {
			struct stat t; /* a link to a file is searched, one to a directory not followed */
			if (stat(e.abs, &t) < 0 || !S_ISREG(t.st_mode))
				continue;
		} else if (!S_ISREG(e.st.st_mode)) {
			continue;
		}
		if (glob && !walk_glob_match(glob, e.rel, e.name))
			continue;
		if (out_of_time(s) || !search_file(s, e.abs, absolute ? e.abs : e.rel))
			break;
	}
	if (w.cut && !s->reason)
		s->reason = "max_files";
	walk_free(&w);
	return 0;
}

/* The part of abs after the workspace and a '/' when abs is inside the
 * workspace (comparing canonical paths), else NULL. *ret_real gets the
 * canonical path to free. */
static const char *inside_workspace(const char *abs, char **ret_real)
{
	*ret_real = realpath(abs, NULL);
	char *ws = realpath(paths_workspace(), NULL);
	const char *rel = NULL;
	if (*ret_real && ws) {
		size_t n = strlen(ws);
		const char *p = *ret_real;
		if (strcmp(ws, "/") == 0)
			rel = p + 1;
		else if (strncmp(p, ws, n) == 0 && (p[n] == '\0' || p[n] == '/'))
			rel = p[n] ? p + n + 1 : p + n;
	}
	free(ws);
	return rel;
}

static int compile(struct searcher *s, const char *pattern, size_t len, bool caseless, struct rpc_error *err)
{
	int code;
	PCRE2_SIZE offset;
	uint32_t opts = PCRE2_UTF | PCRE2_MATCH_INVALID_UTF | (caseless ? PCRE2_CASELESS : 0);
	s->code = pcre2_compile((PCRE2_SPTR)pattern, len, opts, &code, &offset, NULL);
	if (!s->code) {
		PCRE2_UCHAR msg[256];
		if (pcre2_get_error_message(code, msg, sizeof msg) < 0)
			snprintf((char *)msg, sizeof msg, "error %d", code);
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "pattern is not a valid regular expression (PCRE2 syntax): %s at offset %zu",
		                (char *)msg, (size_t)offset);
	}
	/* JIT when the platform allows it; the interpreter otherwise. */
	if (pcre2_jit_compile(s->code, PCRE2_JIT_COMPLETE) == 0)
		s->jit_stack = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
	s->md = pcre2_match_data_create_from_pattern(s->code, NULL);
	s->mctx = pcre2_match_context_create(NULL);
	if (!s->md || !s->mctx) /* PCRE2 fails only to allocate */
		cp_oom();
	pcre2_set_match_limit(s->mctx, SEARCH_MATCH_LIMIT);
	if (s->jit_stack)
		pcre2_jit_stack_assign(s->mctx, NULL, s->jit_stack);
	return 0;
}

static void searcher_free(struct searcher *s)
{
	pcre2_match_data_free(s->md);
	pcre2_match_context_free(s->mctx);
	pcre2_jit_stack_free(s->jit_stack);
	pcre2_code_free(s->code);
	free(s->out);
	free(s->buf);
}

static int run(struct searcher *s, const char *abs, const char *glob, struct rpc_error *err)
{
	struct stat st;
	if (stat(abs, &st) < 0) {
		if (errno == ENOENT)
			return rpc_fail(err, "NOT_FOUND",
			                "'%s' does not exist; check the path (relative paths start at %s)", abs,
			                paths_workspace());
		return rpc_fail_errno(err, errno, "stat", abs);
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode))
		return rpc_fail(err, "INVALID_ARGUMENT",
		                "'%s' is not a regular file or a directory (a device, FIFO or socket)", abs);
	char *real;
	const char *rel = inside_workspace(abs, &real);
	int r = 0;
	if (S_ISDIR(st.st_mode)) {
		r = search_tree(s, abs, st.st_dev, glob, rel == NULL, err);
	} else if (!out_of_time(s)) {
		/* A file named explicitly is searched whatever glob says. */
		search_file(s, abs, rel ? rel : abs);
	}
	free(real);
	return r;
}

int search_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *pattern, *path = paths_workspace(), *glob = NULL;
	size_t pattern_len, path_len = strlen(path), glob_len = 0;
	bool caseless;
	int64_t max_matches, max_bytes;
	if (rpc_param_string(params, "pattern", true, &pattern, &pattern_len, err) < 0 ||
	    rpc_param_string(params, "path", false, &path, &path_len, err) < 0 ||
	    rpc_param_string(params, "glob", false, &glob, &glob_len, err) < 0 ||
	    rpc_param_bool(params, "case_insensitive", false, &caseless, err) < 0 ||
	    rpc_param_int(params, "max_matches", SEARCH_DEFAULT_MAX_MATCHES, 1, SEARCH_MAX_MATCHES, true, &max_matches,
	                  err) < 0 ||
	    rpc_param_int(params, "max_bytes", SEARCH_DEFAULT_MAX_BYTES, 1, SEARCH_MAX_BYTES, true, &max_bytes, err) <
	        0)
		return -1;
	if (paths_scope(&path, &path_len, &glob, glob_len, err) < 0)
		return -1;
	struct searcher s = {.max_matches = max_matches, .max_bytes = (size_t)max_bytes};
	s.deadline = clock_ms() + time_limit_ms;
	char *abs = NULL;
	if (compile(&s, pattern, pattern_len, caseless, err) < 0 ||
	    paths_resolve(path, path_len, "path", &abs, err) < 0 || run(&s, abs, glob, err) < 0) {
		free(abs);
		searcher_free(&s);
		return -1;
	}
	json_object *o = xjson_object();
	size_t safe_len = 0;
	char *safe_path = utf8_sanitize((const unsigned char *)abs, strlen(abs), &safe_len);
	xjson_add(o, "path", xjson_string_len(safe_path, safe_len));
	free(safe_path);
	xjson_add(o, "matches", xjson_string_len(s.out ? s.out : "", s.out_len));
	xjson_add(o, "count", xjson_int64(s.count));
	xjson_add(o, "files_searched", xjson_int64(s.files_searched));
	xjson_add(o, "truncated", xjson_bool(s.reason != NULL));
	if (s.reason)
		xjson_add(o, "truncated_reason", xjson_string(s.reason));
	free(abs);
	searcher_free(&s);
	*ret_result = o;
	return 0;
}
