/* git_tree.c: what may be in a direct workspace's .git (regular files and
 * directories, nothing else) and the words for what was found: a create's
 * refusal and a running sandbox's failure reason. Pure: the walk is
 * guard/git_tree.c's, the moving guard/git_quarantine.c's. Names and
 * link targets came from a sandbox and are only ever shown escaped. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "policy.h"
#include "../base/xalloc.h"

/* How many findings a message names; the rest are counted. */
#define SHOWN 4
/* The room one escaped name or target gets in a message. */
#define NAME_ROOM 240

enum policy_git_entry policy_git_entry_judge(mode_t mode)
{
	switch (mode & S_IFMT) {
	case S_IFREG:
	case S_IFDIR: return POLICY_GIT_ENTRY_OK;
	case S_IFLNK: return POLICY_GIT_ENTRY_SYMLINK;
	case S_IFIFO: return POLICY_GIT_ENTRY_FIFO;
	case S_IFSOCK: return POLICY_GIT_ENTRY_SOCKET;
	case S_IFCHR: return POLICY_GIT_ENTRY_CHAR_DEVICE;
	case S_IFBLK: return POLICY_GIT_ENTRY_BLOCK_DEVICE;
	}
	return POLICY_GIT_ENTRY_UNKNOWN;
}

const char *policy_git_entry_name(enum policy_git_entry kind)
{
	switch (kind) {
	case POLICY_GIT_ENTRY_OK: return "regular file or directory";
	case POLICY_GIT_ENTRY_SYMLINK: return "symbolic link";
	case POLICY_GIT_ENTRY_FIFO: return "FIFO";
	case POLICY_GIT_ENTRY_SOCKET: return "socket";
	case POLICY_GIT_ENTRY_CHAR_DEVICE: return "character device";
	case POLICY_GIT_ENTRY_BLOCK_DEVICE: return "block device";
	case POLICY_GIT_ENTRY_UNREADABLE: return "directory chat2sbx may not read";
	case POLICY_GIT_ENTRY_UNKNOWN: break;
	}
	return "file of an unknown type";
}

/* Appends "'GIT/REL' (a symbolic link to 'T')" for f to out. */
static void put_finding(FILE *out, const char *git_dir, const struct policy_git_finding *f)
{
	char rel[NAME_ROOM], target[NAME_ROOM];
	policy_text_escape(f->rel, strlen(f->rel), rel, sizeof(rel));
	fprintf(out, "'%s/%s' (a %s", git_dir, rel, policy_git_entry_name(f->kind));
	if (f->kind == POLICY_GIT_ENTRY_SYMLINK && f->target)
		fprintf(out, " to '%s'", policy_text_escape(f->target, strlen(f->target), target, sizeof(target)));
	fputc(')', out);
}

static void put_findings(FILE *out, const char *git_dir, const struct policy_git_finding *f, size_t n, size_t more)
{
	size_t shown = n < SHOWN ? n : SHOWN;
	for (size_t i = 0; i < shown; i++) {
		if (i)
			fputs(i + 1 == shown && n + more == shown ? " and " : ", ", out);
		put_finding(out, git_dir, &f[i]);
	}
	if (n + more > shown)
		fprintf(out, " and %zu more", n + more - shown);
}

/* Why such an entry is refused, for the person. */
static const char why_refused[] =
    "git on the host writes through a symbolic link it finds in .git (it appends reflogs in logs/ and writes "
    "COMMIT_EDITMSG, MERGE_MSG, FETCH_HEAD and ORIG_HEAD wherever one points, and creates refs and objects "
    "below a linked directory), blocks on a FIFO and writes into a device, so chat2sbx mounts no .git that "
    "holds anything but regular files and directories";

int policy_git_tree_refusal(const char *git_dir, const struct policy_git_finding *f, size_t n, size_t more,
                            struct cp_error **err)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = xopen_memstream(&text, &size);
	put_findings(out, git_dir, f, n, more);
	bool unreadable = false;
	for (size_t i = 0; i < n; i++)
		unreadable |= f[i].kind == POLICY_GIT_ENTRY_UNREADABLE;
	fclose(out);
	int r = cp_error_set(err, CP_ERR_DENIED,
	                     "%s in '%s': %s; %s; look at %s (a direct sandbox may have planted it: check the file a "
	                     "link names for text you did not write), remove it%s and try again, or use clone mode; "
	                     "nothing was created",
	                     n + more > 1 ? "entries that are not regular files or directories"
	                                  : "an entry that is not a regular file or directory",
	                     git_dir, text ? text : "?", why_refused, n + more > 1 ? "them" : "it",
	                     unreadable ? " (or give it back to your user)" : "");
	free(text);
	return r;
}

static const char *bound_text(enum policy_git_bound bound, char *buf, size_t size)
{
	switch (bound) {
	case POLICY_GIT_BOUND_ENTRIES:
		snprintf(buf, size, "holds more than %d files and directories", POLICY_GIT_TREE_MAX_ENTRIES);
		break;
	case POLICY_GIT_BOUND_DEPTH:
		snprintf(buf, size, "has a directory more than %d levels deep", POLICY_GIT_TREE_MAX_DEPTH);
		break;
	case POLICY_GIT_BOUND_TIME:
		snprintf(buf, size, "took longer than %d s to check", POLICY_GIT_TREE_MAX_MS / 1000);
		break;
	case POLICY_GIT_BOUND_NONE: snprintf(buf, size, "could not be checked"); break;
	}
	return buf;
}

int policy_git_tree_bound_refusal(const char *git_dir, enum policy_git_bound bound, const char *rel,
                                  struct cp_error **err)
{
	char what[96], where[NAME_ROOM + 16] = "";
	if (rel && *rel) {
		char shown[NAME_ROOM];
		snprintf(where, sizeof(where), " (at '%s')",
		         policy_text_escape(rel, strlen(rel), shown, sizeof(shown)));
	}
	return cp_error_set(err, CP_ERR_DENIED,
	                    "'%s' %s%s, more than chat2sbx checks before each call of a direct-mode sandbox (it "
	                    "makes sure no symbolic link, FIFO or device is anywhere in it); run `git gc` there "
	                    "(it packs loose objects and refs), remove what does not belong, or use clone mode; "
	                    "nothing was created",
	                    git_dir, bound_text(bound, what, sizeof(what)), where);
}

char *policy_git_tree_reason(const char *git_dir, const struct policy_git_finding *f, size_t n, size_t more,
                             enum policy_git_bound bound, const char *quarantine)
{
	char *text = NULL;
	size_t size = 0;
	FILE *out = xopen_memstream(&text, &size);
	if (n + more) {
		fputs("its direct workspace's .git held what git on the host writes through: ", out);
		put_findings(out, git_dir, f, n, more);
		size_t moved = 0, kept = 0;
		for (size_t i = 0; i < n; i++)
			f[i].moved_as ? moved++ : kept++;
		if (moved && quarantine)
			fprintf(out, "; chat2sbx moved %s to '%s' (listed with their targets in record.json there)",
			        kept || more ? "what it could"
			        : n > 1      ? "them"
			                     : "it",
			        quarantine);
		for (size_t i = 0, shown = 0; i < n && shown < SHOWN; i++) {
			if (f[i].moved_as)
				continue;
			char rel[NAME_ROOM];
			policy_text_escape(f[i].rel, strlen(f[i].rel), rel, sizeof(rel));
			if (f[i].move_errno == ENOENT) /* another chat2sbx (a doctor's) or the sandbox took it */
				fprintf(out, "; '%s/%s' was gone before chat2sbx could move it", git_dir, rel);
			else if (f[i].kind == POLICY_GIT_ENTRY_UNREADABLE)
				fprintf(out,
				        "; '%s/%s' is still there: chat2sbx may not look into it, so look yourself",
				        git_dir, rel);
			else
				fprintf(out, "; '%s/%s' is still there (%s): remove it before you run git there",
				        git_dir, rel, f[i].move_errno ? strerror(f[i].move_errno) : "not moved");
			shown++;
		}
	}
	if (bound != POLICY_GIT_BOUND_NONE) {
		char what[96];
		fprintf(out,
		        "%sits direct workspace's .git (%s) %s, more than chat2sbx checks, so a link planted there "
		        "could go unseen; look for one before you run git there",
		        n + more ? "; and " : "", git_dir, bound_text(bound, what, sizeof(what)));
		/* A command to paste only when the path needs no quoting beyond '…'. */
		if (!strchr(git_dir, '\''))
			fprintf(out, " (find '%s' ! -type f ! -type d)", git_dir);
	}
	fputs(". The sandbox was stopped. A git command you ran in the repository before chat2sbx reacted may "
	      "have written through a link: check the files the links name for text you did not write, and look "
	      "at what else the sandbox changed before you build or run git there; then create a new sandbox",
	      out);
	fclose(out); /* sets text */
	return text;
}
