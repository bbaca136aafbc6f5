/* list.c: file.list and the directory walker shared with file.search. The
 * walk keeps an explicit stack (no recursion, whatever the depth), reads
 * each directory once, sorts its names with strcmp so results are stable,
 * never follows symlinks and stops reading after a fixed number of entries,
 * so one request cannot hold the single-threaded loop for long. */
#include "list.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"
#include "utf8.h"
#include "xalloc.h"
#include "xjson.h"

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *a, const char *b)
{
	if (!a || !*a)
		return xstrdup(b);
	return xasprintf("%s%s%s", a, strcmp(a, "/") ? "/" : "", b);
}

static void push(struct walk *w, char *rel, int depth)
{
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 64;
		w->stack = xrealloc(w->stack, w->cap * sizeof *w->stack);
	}
	w->stack[w->n++] = (struct walk_item){.rel = rel, .depth = depth};
}

/* Read the entries of directory abs (rel from the root, "" for the root),
 * sorted, onto the stack so the first name is popped first. A directory
 * that cannot be opened has its contents skipped; then *ret_errno (when not
 * NULL) gets the errno and 0 otherwise. */
static void read_children(struct walk *w, const char *abs, const char *rel, int depth, int *ret_errno)
{
	DIR *d = opendir(abs);
	if (ret_errno)
		*ret_errno = d ? 0 : errno;
	if (!d)
		return;
	char **names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (w->budget == 0) {
			w->cut = true;
			break;
		}
		w->budget--;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			names = xrealloc(names, cap * sizeof *names);
		}
		names[n++] = xstrdup(de->d_name);
	}
	closedir(d);
	if (n > 0)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = n; i-- > 0;) {
		push(w, join(rel, names[i]), depth);
		free(names[i]);
	}
	free(names);
}

int walk_init(struct walk *w, const char *root, int max_depth, size_t budget)
{
	memset(w, 0, sizeof *w);
	w->max_depth = max_depth;
	w->budget = budget;
	w->root = xstrdup(root);
	int e;
	read_children(w, root, "", 1, &e);
	if (e != 0) {
		walk_free(w);
		return -e;
	}
	return 0;
}

void walk_prune(struct walk *w)
{
	w->descend = false;
}

bool walk_next(struct walk *w, struct walk_entry *e)
{
	if (w->descend)
		read_children(w, w->cur_abs, w->cur_rel, w->cur_depth + 1, NULL);
	w->descend = false;
	for (;;) {
		free(w->cur_rel);
		free(w->cur_abs);
		w->cur_rel = w->cur_abs = NULL;
		if (w->n == 0)
			return false;
		struct walk_item it = w->stack[--w->n];
		w->cur_rel = it.rel;
		w->cur_depth = it.depth;
		w->cur_abs = join(w->root, it.rel);
		if (lstat(w->cur_abs, &e->st) < 0)
			continue; /* vanished since it was read */
		const char *slash = strrchr(it.rel, '/');
		e->rel = it.rel;
		e->abs = w->cur_abs;
		e->name = slash ? slash + 1 : it.rel;
		e->depth = it.depth;
		e->pruned = S_ISDIR(e->st.st_mode) && !strcmp(e->name, ".git");
		w->descend = S_ISDIR(e->st.st_mode) && !e->pruned && (w->max_depth == 0 || it.depth < w->max_depth);
		return true;
	}
}

void walk_free(struct walk *w)
{
	for (size_t i = 0; i < w->n; i++)
		free(w->stack[i].rel);
	free(w->stack);
	free(w->root);
	free(w->cur_rel);
	free(w->cur_abs);
	memset(w, 0, sizeof *w);
}

bool walk_glob_match(const char *glob, const char *rel, const char *name)
{
	return fnmatch(glob, strchr(glob, '/') ? rel : name, 0) == 0;
}

/* A JSON string of arbitrary bytes (file names need not be UTF-8). */
static json_object *safe_string(const char *s, size_t n)
{
	size_t len;
	char *safe = utf8_sanitize((const unsigned char *)s, n, &len);
	json_object *o = xjson_string_len(safe, len);
	free(safe);
	return o;
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

static json_object *entry_object(const struct walk_entry *e)
{
	json_object *o = xjson_object();
	xjson_add(o, "path", safe_string(e->rel, strlen(e->rel)));
	xjson_add(o, "type", xjson_string(type_name(e->st.st_mode)));
	if (S_ISREG(e->st.st_mode))
		xjson_add(o, "size", xjson_int64((int64_t)e->st.st_size));
	if (S_ISLNK(e->st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(e->abs, target, sizeof target);
		if (n >= 0)
			xjson_add(o, "target", safe_string(target, (size_t)n));
	}
	if (e->pruned)
		xjson_add(o, "contents_skipped", xjson_bool(true));
	return o;
}

int list_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err)
{
	(void)id;
	const char *path = paths_workspace(), *glob = NULL;
	size_t path_len = strlen(path), glob_len = 0;
	int64_t depth, max_entries;
	if (rpc_param_string(params, "path", false, &path, &path_len, err) < 0 ||
	    rpc_param_int(params, "depth", LIST_DEFAULT_DEPTH, 1, LIST_MAX_DEPTH, true, &depth, err) < 0 ||
	    rpc_param_int(params, "max_entries", LIST_DEFAULT_MAX_ENTRIES, 1, LIST_MAX_ENTRIES, true, &max_entries,
	                  err) < 0 ||
	    rpc_param_string(params, "glob", false, &glob, &glob_len, err) < 0)
		return -1;
	if (paths_scope(&path, &path_len, &glob, glob_len, err) < 0)
		return -1;
	char *abs;
	if (paths_resolve(path, path_len, "path", &abs, err) < 0)
		return -1;
	struct stat st;
	if (stat(abs, &st) < 0) {
		int e = errno;
		if (e == ENOENT)
			rpc_fail(err, "NOT_FOUND", "'%s' does not exist; check the path (relative paths start at %s)",
			         abs, paths_workspace());
		else
			rpc_fail_errno(err, e, "stat", abs);
		free(abs);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		rpc_fail(err, "INVALID_ARGUMENT", "'%s' is not a directory; read it with read, or list its parent",
		         abs);
		free(abs);
		return -1;
	}
	struct walk w;
	int r = walk_init(&w, abs, (int)depth, WALK_MAX_ENTRIES);
	if (r < 0) {
		rpc_fail_errno(err, -r, "open directory", abs);
		free(abs);
		return -1;
	}
	json_object *entries = xjson_array();
	int64_t count = 0;
	bool truncated = false;
	struct walk_entry e;
	while (walk_next(&w, &e)) {
		if (glob && !S_ISDIR(e.st.st_mode) && !walk_glob_match(glob, e.rel, e.name))
			continue;
		if (count == max_entries) {
			truncated = true;
			break;
		}
		xjson_append(entries, entry_object(&e));
		count++;
	}
	truncated = truncated || w.cut;
	walk_free(&w);
	json_object *o = xjson_object();
	xjson_add(o, "path", safe_string(abs, strlen(abs)));
	xjson_add(o, "entries", entries);
	xjson_add(o, "count", xjson_int64(count));
	xjson_add(o, "truncated", xjson_bool(truncated));
	free(abs);
	*ret_result = o;
	return 0;
}
