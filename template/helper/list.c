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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "paths.h"
#include "utf8.h"

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *a, const char *b)
{
	char *r = NULL;
	if (!a || !*a)
		return strdup(b);
	if (asprintf(&r, "%s%s%s", a, strcmp(a, "/") ? "/" : "", b) < 0)
		return NULL;
	return r;
}

static int push(struct walk *w, char *rel, int depth)
{
	if (w->n == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		struct walk_item *s = realloc(w->stack, cap * sizeof *s);
		if (!s)
			return -1;
		w->stack = s;
		w->cap = cap;
	}
	w->stack[w->n++] = (struct walk_item){.rel = rel, .depth = depth};
	return 0;
}

/* Read the entries of directory abs (rel from the root, "" for the root),
 * sorted, onto the stack so the first name is popped first. Returns 0 (also
 * when the directory cannot be opened: its contents are skipped), -1 when
 * memory runs out. */
static int read_children(struct walk *w, const char *abs, const char *rel, int depth, int *ret_errno)
{
	DIR *d = opendir(abs);
	if (!d) {
		if (ret_errno)
			*ret_errno = errno;
		return 0;
	}
	char **names = NULL;
	size_t n = 0, cap = 0;
	int r = 0;
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
			size_t c = cap ? cap * 2 : 32;
			char **p = realloc(names, c * sizeof *p);
			if (!p) {
				r = -1;
				break;
			}
			names = p;
			cap = c;
		}
		if (!(names[n] = strdup(de->d_name))) {
			r = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (r == 0 && n > 0)
		qsort(names, n, sizeof *names, cmp_names);
	for (size_t i = n; i-- > 0;) {
		char *child = r == 0 ? join(rel, names[i]) : NULL;
		if (!child || push(w, child, depth) < 0) {
			free(child);
			r = -1;
		}
		free(names[i]);
	}
	free(names);
	return r;
}

int walk_init(struct walk *w, const char *root, int max_depth, size_t budget)
{
	memset(w, 0, sizeof *w);
	w->max_depth = max_depth;
	w->budget = budget;
	if (!(w->root = strdup(root)))
		return -ENOMEM;
	int e = 0;
	if (read_children(w, root, "", 1, &e) < 0 || e != 0) {
		walk_free(w);
		return e ? -e : -ENOMEM;
	}
	return 0;
}

void walk_prune(struct walk *w)
{
	w->descend = false;
}

int walk_next(struct walk *w, struct walk_entry *e)
{
	if (w->descend && read_children(w, w->cur_abs, w->cur_rel, w->cur_depth + 1, NULL) < 0)
		return -1;
	w->descend = false;
	for (;;) {
		free(w->cur_rel);
		free(w->cur_abs);
		w->cur_rel = w->cur_abs = NULL;
		if (w->n == 0)
			return 0;
		struct walk_item it = w->stack[--w->n];
		w->cur_rel = it.rel;
		w->cur_depth = it.depth;
		if (!(w->cur_abs = join(w->root, it.rel)))
			return -1;
		if (lstat(w->cur_abs, &e->st) < 0)
			continue; /* vanished since it was read */
		const char *slash = strrchr(it.rel, '/');
		e->rel = it.rel;
		e->abs = w->cur_abs;
		e->name = slash ? slash + 1 : it.rel;
		e->depth = it.depth;
		e->pruned = S_ISDIR(e->st.st_mode) && !strcmp(e->name, ".git");
		w->descend = S_ISDIR(e->st.st_mode) && !e->pruned && (w->max_depth == 0 || it.depth < w->max_depth);
		return 1;
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
	if (!safe)
		return NULL;
	json_object *o = json_object_new_string_len(safe, (int)len);
	free(safe);
	return o;
}

static const char *type_name(mode_t m)
{
	return S_ISREG(m) ? "file" : S_ISDIR(m) ? "dir" : S_ISLNK(m) ? "symlink" : "other";
}

static json_object *entry_object(const struct walk_entry *e)
{
	json_object *o = json_object_new_object();
	json_object_object_add(o, "path", safe_string(e->rel, strlen(e->rel)));
	json_object_object_add(o, "type", json_object_new_string(type_name(e->st.st_mode)));
	if (S_ISREG(e->st.st_mode))
		json_object_object_add(o, "size", json_object_new_int64((int64_t)e->st.st_size));
	if (S_ISLNK(e->st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlink(e->abs, target, sizeof target);
		if (n >= 0)
			json_object_object_add(o, "target", safe_string(target, (size_t)n));
	}
	if (e->pruned)
		json_object_object_add(o, "contents_skipped", json_object_new_boolean(1));
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
	if (!path) {
		path = paths_workspace();
		path_len = strlen(path);
	}
	if (glob && strlen(glob) != glob_len)
		return rpc_fail(err, "INVALID_ARGUMENT", "glob contains a NUL character");
	if (glob && !*glob)
		glob = NULL;
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
	json_object *entries = json_object_new_array();
	int64_t count = 0;
	bool truncated = false;
	struct walk_entry e;
	while ((r = walk_next(&w, &e)) > 0) {
		if (glob && !S_ISDIR(e.st.st_mode) && !walk_glob_match(glob, e.rel, e.name))
			continue;
		if (count == max_entries) {
			truncated = true;
			break;
		}
		json_object_array_add(entries, entry_object(&e));
		count++;
	}
	truncated = truncated || w.cut;
	walk_free(&w);
	if (r < 0) {
		json_object_put(entries);
		free(abs);
		return rpc_fail(err, "INTERNAL", "out of memory listing '%s'", path);
	}
	json_object *o = json_object_new_object();
	json_object_object_add(o, "path", safe_string(abs, strlen(abs)));
	json_object_object_add(o, "entries", entries);
	json_object_object_add(o, "count", json_object_new_int64(count));
	json_object_object_add(o, "truncated", json_object_new_boolean(truncated));
	free(abs);
	*ret_result = o;
	return 0;
}
