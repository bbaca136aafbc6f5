/* clone_source.c: the source of a clone sandbox on another node (issue 28,
 * docs/nodes.md "A clone on another node"). The node has no path of this
 * machine, so nothing is bind-mounted: serve makes, bounded, a git bundle
 * of the approved repository's branches, tags and HEAD (or, for a plain
 * directory, a tar that keeps symbolic links as links) in a file with no
 * name in STATE_DIR/clone-sources, judges it, and streams it into the
 * created container with the engine's archive API before it starts;
 * create.c's copy command then clones (or copies) from it as from the
 * local mount. Nothing else of this machine goes with it: the bundle holds
 * only history, the tar only the directory's own entries under a fixed
 * name. The file is gone when its descriptor closes, on every path. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "../base/log.h"
#include "../base/private_dir.h"
#include "../base/xalloc.h"
#include "../export/export.h"
#include "lifecycle_internal.h"

/* Wall time of the host git or tar making one source (ms). */
#define SOURCE_MAKE_MS 300000L
/* The upload's time: a minute, and a second more for every 4 MiB. */
#define SOURCE_UPLOAD_BASE_MS 60000L
#define SOURCE_UPLOAD_BYTES_PER_MS 4096u
/* The tar's names: everything lands below POLICY_SOURCE_TARGET. */
#define SOURCE_TAR_PREFIX ".chat2sbx/source"

void lifecycle_clone_source_clear(struct lifecycle_clone_source *src)
{
	if (!src)
		return;
	if (src->fd >= 0)
		close(src->fd);
	*src = (struct lifecycle_clone_source){.fd = -1};
}

/* A file with no name, 0600, in STATE_DIR/clone-sources (0700): nothing
 * to remove whatever happens next, a crash of serve included. Where the
 * file system has no O_TMPFILE, a file made and unlinked at once. */
static int open_tmp(struct lifecycle *lc, int *ret_fd, struct cp_error **err)
{
	_cleanup_free_ char *dir = xasprintf("%s/clone-sources", lc->cfg->state_dir);
	if (private_dir_ensure(dir, 0700, NULL, 0, err) < 0)
		return -1;
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		_cleanup_free_ char *id = NULL;
		if (id_new("src_", &id, err) < 0)
			return -1;
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, id);
		fd = open(path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd >= 0)
			unlink(path);
	}
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "make a temporary file in '%s'", dir);
	*ret_fd = fd;
	return 0;
}

/* The refusal of a source over the ceiling; what: "a bundle of the
 * repository" or "an archive of the directory". */
static int too_big(const struct workspace_record *w, const char *what, uint64_t ceiling, struct cp_error **err)
{
	return cp_error_set(err, CP_ERR_LIMIT,
	                    "%s '%s' is larger than CHAT2SBX_MAX_EXPORT_BYTES (%llu bytes), the most a clone on "
	                    "another node takes from this machine (as it is the most a save brings back); nothing "
	                    "was sent; create the sandbox on node 'local', or raise that setting",
	                    what, w->host_path ? w->host_path : w->path, (unsigned long long)ceiling);
}

/* git in the directory (cwd, a /proc/self/fd path) through export/'s
 * runner: its fixed settings (no hooks, no fsmonitor, no transports but
 * files) and bounds. The .git named explicitly, so a directory that is not
 * a repository never reaches one above it. */
static int git_small(const char *cwd, const char *const *args, char **ret_out, size_t *ret_len, int *ret_status,
                     struct cp_error **err)
{
	return export_git_run(cwd, NULL, args, NULL, 0, 65536, 30000, ret_out, ret_len, ret_status, err);
}

static int make_bundle(const struct workspace_record *w, const char *cwd, uint64_t ceiling,
                       struct lifecycle_clone_source *src, struct cp_error **err)
{
	_cleanup_free_ char *head = NULL, *refs = NULL, *at = NULL;
	size_t head_len = 0;
	int status = 0;
	const char *sym[] = {"--git-dir=.git", "symbolic-ref", "-q", "HEAD", NULL};
	const char *any[] = {"--git-dir=.git", "for-each-ref", "--count=1", "--format=%(refname)",
	                     "refs/heads",     "refs/tags",    NULL};
	const char *resolve[] = {"--git-dir=.git", "rev-parse", "-q", "--verify", "HEAD^{commit}", NULL};
	if (git_small(cwd, sym, &head, &head_len, &status, err) < 0 ||
	    git_small(cwd, any, &refs, NULL, NULL, err) < 0 || git_small(cwd, resolve, &at, NULL, &status, err) < 0)
		return cp_error_prefix(err, "read the repository '%s'", w->host_path);
	if (!refs || !*refs)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "the repository '%s' has no branch or tag: a clone on another node is made from "
		                    "a bundle of its branches and tags; commit once, or create the sandbox on node "
		                    "'local'",
		                    w->host_path);
	policy_clone_head_branch(head, head_len, src->head, sizeof(src->head));
	/* What a clone takes (branches, tags, HEAD) and nothing else the
	 * repository holds: no stash, no other remotes' refs, no notes. */
	const char *bundle[] = {
	    "--git-dir=.git", "bundle", "create", "-", "--branches", "--tags", status == 0 ? "HEAD" : NULL, NULL};
	struct child_limits lim = export_git_limits(SOURCE_MAKE_MS);
	lim.file_bytes = ceiling + 1; /* one byte over says it is too big */
	int r = export_git_run_to_fd(cwd, bundle, src->fd, &lim, err);
	struct stat st;
	if (fstat(src->fd, &st) == 0 && (uint64_t)st.st_size > ceiling) {
		cp_error_freep(err);
		return too_big(w, "a bundle of the repository", ceiling, err);
	}
	if (r < 0)
		return cp_error_prefix(err, "make a bundle of '%s'", w->host_path);
	src->bundle = 1;
	return 0;
}

static const char *const tar_paths[] = {"/usr/bin/tar", "/bin/tar", NULL};

/* GNU tar of the directory's entries as SOURCE_TAR_PREFIX/...: symbolic
 * links archived as links (tar never follows them without -h), hard link
 * targets renamed alike, link targets left as they are. */
static int make_tar(const struct workspace_record *w, const char *cwd, uint64_t ceiling,
                    struct lifecycle_clone_source *src, struct cp_error **err)
{
	const char *tar = NULL;
	for (size_t i = 0; tar_paths[i] && !tar; i++)
		if (access(tar_paths[i], X_OK) == 0)
			tar = tar_paths[i];
	if (!tar)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "tar is not installed on this machine (looked for /usr/bin/tar); install it to "
		                    "create clones of plain directories on other nodes");
	const char *argv[] = {tar,
	                      "--create",
	                      "--file=-",
	                      "--numeric-owner",
	                      "--format=gnu",
	                      "--transform=s,^\\.," SOURCE_TAR_PREFIX ",S",
	                      ".",
	                      NULL};
	const char *envp[] = {"PATH=/usr/bin:/bin", "LC_ALL=C", NULL};
	struct child_spec spec = {
	    .path = tar,
	    .argv = argv,
	    .envp = envp,
	    .cwd = cwd,
	    .in_fd = -1,
	    .out_fd = src->fd,
	    .out_max = 4096,
	    .limits = {.memory_bytes = 256ull << 20,
	               .cpu_seconds = SOURCE_MAKE_MS / 1000,
	               .file_bytes = ceiling + 1,
	               .open_files = 256,
	               .wall_ms = SOURCE_MAKE_MS},
	};
	struct child_result c = {0};
	if (child_run(&spec, &c, err) < 0)
		return cp_error_prefix(err, "make an archive of '%s'", w->host_path);
	struct stat st;
	int r = 0;
	if (fstat(src->fd, &st) == 0 && (uint64_t)st.st_size > ceiling) {
		r = too_big(w, "an archive of the directory", ceiling, err);
	} else if (c.timed_out) {
		r = cp_error_set(err, CP_ERR_TIMEOUT, "make an archive of '%s': tar did not finish within %ld s",
		                 w->host_path, SOURCE_MAKE_MS / 1000);
	} else if (!c.exited || c.code > 1) {
		/* 1: a file changed while it was read; the archive is whole. */
		char shown[800];
		size_t tl = c.err_len > 600 ? 600 : c.err_len;
		policy_text_escape(c.err_tail + c.err_len - tl, tl, shown, sizeof(shown));
		r = cp_error_set(err, CP_ERR_INTERNAL, "make an archive of '%s': tar %s %d: %s", w->host_path,
		                 c.exited ? "exited with" : "was ended by signal", c.exited ? c.code : c.signal, shown);
	}
	child_result_clear(&c);
	if (r < 0)
		return -1;
	int64_t entries = 0;
	if (export_archive_check_source(src->fd, SOURCE_TAR_PREFIX, &entries, err) < 0)
		return cp_error_prefix(err, "copy '%s' to another node", w->host_path);
	log_debug("lifecycle", "clone source of %s: %lld entries", w->id, (long long)entries);
	return 0;
}

int lifecycle_clone_source_make(struct lifecycle *lc, const struct workspace_record *w, uint64_t dev, uint64_t ino,
                                struct lifecycle_clone_source *ret, struct cp_error **err)
{
	*ret = (struct lifecycle_clone_source){.fd = -1};
	uint64_t ceiling = (uint64_t)lc->cfg->max_export_bytes;
	/* The directory recheck_host_workspace judged, by its identity: the
	 * children run in it through this descriptor, never through the path
	 * again (it may have been swapped for a link since). */
	_cleanup_close_ int dirfd = open(w->path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (dirfd < 0 || fstat(dirfd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_NOT_FOUND, errno, "open the approved directory '%s'", w->path);
	if ((dev || ino) && ((uint64_t)st.st_dev != dev || (uint64_t)st.st_ino != ino))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "the approved directory '%s' changed while the sandbox was being made; it is not "
		                    "copied",
		                    w->path);
	char cwd[64];
	snprintf(cwd, sizeof(cwd), "/proc/self/fd/%d", dirfd); /* the child's own copy of dirfd, before exec */
	struct lifecycle_clone_source src = {.fd = -1};
	if (open_tmp(lc, &src.fd, err) < 0)
		return -1;
	int64_t t0 = clock_monotonic_ms();
	/* As the copy command's [ -e "$src/.git" ], but never through a link:
	 * a .git that is a symbolic link or a gitfile names a repository
	 * elsewhere on this machine, which is not what was approved (on
	 * 'local' it is not reachable from the mount either, and the clone
	 * fails there). */
	struct stat g;
	int git = fstatat(dirfd, ".git", &g, AT_SYMLINK_NOFOLLOW) == 0;
	if (git && !S_ISDIR(g.st_mode)) {
		lifecycle_clone_source_clear(&src);
		return cp_error_set(err, CP_ERR_DENIED,
		                    "'%s/.git' is %s, which names a repository outside the approved directory; a "
		                    "clone on another node takes a repository whose .git is a directory in it; use "
		                    "the repository itself",
		                    w->path, S_ISLNK(g.st_mode) ? "a symbolic link" : "not a directory (a gitfile)");
	}
	if ((git ? make_bundle(w, cwd, ceiling, &src, err) : make_tar(w, cwd, ceiling, &src, err)) < 0) {
		lifecycle_clone_source_clear(&src);
		return -1;
	}
	if (fstat(src.fd, &st) < 0) {
		lifecycle_clone_source_clear(&src);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read the source of '%s'", w->path);
	}
	src.size = (uint64_t)st.st_size;
	log_info("lifecycle", "clone source of workspace %s: %s of %llu bytes made in %lld ms", w->id,
	         src.bundle ? "bundle" : "archive", (unsigned long long)src.size,
	         (long long)(clock_monotonic_ms() - t0));
	*ret = src;
	return 0;
}

int lifecycle_clone_source_put(struct lifecycle *lc, struct docker_engine *engine, const char *container,
                               const struct lifecycle_clone_source *src, struct cp_error **err)
{
	(void)lc;
	long timeout = SOURCE_UPLOAD_BASE_MS + (long)(src->size / SOURCE_UPLOAD_BYTES_PER_MS);
	int r;
	if (!src->bundle) {
		/* The tar is whole: its names put it below POLICY_SOURCE_TARGET. */
		struct docker_upload up = {.fd = src->fd, .fd_len = src->size};
		r = docker_container_put_archive_stream(engine, container, "/", &up, timeout, err);
	} else {
		/* In /.chat2sbx (made by the helper's copy): "source", the bundle,
		 * streamed; then "source-head", the branch to check out; the end. */
		unsigned char head[DOCKER_TAR_BLOCK];
		size_t pad = docker_tar_padding(src->size), hlen = strlen(src->head);
		size_t tail_len = pad + (hlen ? DOCKER_TAR_BLOCK + hlen + 1 + docker_tar_padding(hlen + 1) : 0) +
		                  2 * DOCKER_TAR_BLOCK;
		_cleanup_free_ unsigned char *tail = xcalloc(1, tail_len);
		if (docker_tar_file_header("source", 0444, src->size, head, err) < 0 ||
		    (hlen && docker_tar_file_header("source-head", 0444, hlen + 1, tail + pad, err) < 0))
			return -1;
		if (hlen) {
			memcpy(tail + pad + DOCKER_TAR_BLOCK, src->head, hlen);
			tail[pad + DOCKER_TAR_BLOCK + hlen] = '\n';
		}
		struct docker_upload up = {.head = head,
		                           .head_len = sizeof(head),
		                           .fd = src->fd,
		                           .fd_len = src->size,
		                           .tail = tail,
		                           .tail_len = tail_len};
		r = docker_container_put_archive_stream(engine, container, "/.chat2sbx", &up, timeout, err);
	}
	if (r < 0)
		return cp_error_prefix(err, "put the source into container '%.12s'", container);
	return 0;
}
