/* list.h: file.list (proto.h), and the directory walker it shares with
 * file.search (search.c): depth-first, names in strcmp order, a directory
 * right before its contents, ".git" contents skipped, symlinks never
 * followed, bounded by an entry budget. */
#ifndef CHAT2SBX_HELPER_LIST_H
#define CHAT2SBX_HELPER_LIST_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

#include "rpc.h"

#define LIST_DEFAULT_DEPTH 2
#define LIST_MAX_DEPTH 10
#define LIST_DEFAULT_MAX_ENTRIES 1000
#define LIST_MAX_ENTRIES 10000
/* Directory entries one walk reads at most (file.list and file.search):
 * bounds the memory and time of a request on a huge tree. */
#define WALK_MAX_ENTRIES PROTO_WALK_MAX_ENTRIES

/* One entry of a walk; the strings belong to the walker and stay valid
 * until the next walk_next call. */
struct walk_entry {
	const char *rel;  /* relative to the root ("a/b.c") */
	const char *abs;  /* root + "/" + rel */
	const char *name; /* last component of rel */
	struct stat st;   /* lstat: a symlink is reported as one */
	int depth;        /* 1 for the root's own entries */
	bool pruned;      /* a ".git" directory: its contents are not walked */
};

struct walk_item {
	char *rel;
	int depth;
};

struct walk {
	char *root;
	struct walk_item *stack;
	size_t n, cap;
	size_t budget; /* entries that may still be read */
	int max_depth; /* entries deeper than this are not read; 0: no limit */
	bool cut;      /* the budget ran out: some entries were never seen */
	char *cur_rel, *cur_abs;
	int cur_depth;
	bool descend; /* read the current entry's children on the next call */
};

/* Start a walk of the directory root (absolute; copied). Returns 0, or
 * -errno when root cannot be opened as a directory (nothing to free then). */
int walk_init(struct walk *w, const char *root, int max_depth, size_t budget);
/* The next entry in order: true with e filled, false at the end. Entries
 * that vanish or cannot be stat'ed are skipped, so are the contents of
 * directories that cannot be opened. A directory (not a symlink to one) is
 * descended into after it is returned, unless pruned, at max_depth or
 * walk_prune is called before the next call. */
bool walk_next(struct walk *w, struct walk_entry *e);
/* Do not descend into the directory walk_next just returned. */
void walk_prune(struct walk *w);
void walk_free(struct walk *w);

/* glob (fnmatch(3), FNM_PATHNAME off) against the entry's name, or against
 * rel when glob contains a '/'. */
bool walk_glob_match(const char *glob, const char *rel, const char *name);

/* file.list (ids and params borrowed; 0 with *ret_result owned by the
 * caller, or -1 with err set). Blocks for at most WALK_MAX_ENTRIES lstat
 * calls. */
int list_rpc(json_object *id, json_object *params, json_object **ret_result, struct rpc_error *err);

#endif
