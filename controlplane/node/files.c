/* files.c: a node's TLS files under STATE_DIR/nodes/<name>/ (issue 28).
 * The client key is as powerful as root on that node, so the copies are
 * 0600 in 0700 directories of this user, made and removed relative to
 * descriptors opened with O_NOFOLLOW: a symbolic link planted on the way is
 * refused, never written through. The bytes are copied, never logged or
 * put in a message. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "node.h"

#include "../base/cleanup.h"
#include "../base/xalloc.h"

static const char *const tls_names[3] = {NODE_TLS_CA, NODE_TLS_CERT, NODE_TLS_KEY};
static const char *const tls_options[3] = {"--tls-ca", "--tls-cert", "--tls-key"};

/* Opens (making it 0700 when missing) the directory name below dirfd, not
 * through a symbolic link, and checks it is this user's and 0700. */
static int open_private_dir(int dirfd, const char *name, const char *shown, int *ret_fd, struct cp_error **err)
{
	if (mkdirat(dirfd, name, 0700) < 0 && errno != EEXIST)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "make the directory '%s'", shown);
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                          "open the directory '%s' (a symbolic link there is refused)", shown);
	struct stat st;
	if (fstat(fd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "stat '%s'", shown);
	if (st.st_uid != geteuid())
		return cp_error_set(err, CP_ERR_UNAVAILABLE, "the directory '%s' belongs to uid %u, not to this user",
		                    shown, (unsigned)st.st_uid);
	if ((st.st_mode & 07777) != 0700 && fchmod(fd, 0700) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "make '%s' 0700", shown);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Reads a source file whole (regular, at most NODE_TLS_FILE_MAX bytes). */
static int read_source(const char *path, const char *option, char **ret, size_t *ret_len, struct cp_error **err)
{
	if (!path || !*path)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: give a file", option);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_INVALID_ARGUMENT, errno, "%s '%s': cannot open it", option, path);
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s': not a regular file", option, path);
	if (st.st_size <= 0 || st.st_size > NODE_TLS_FILE_MAX)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "%s '%s': %lld bytes is not a PEM certificate or key (1 to %d bytes)", option, path,
		                    (long long)st.st_size, NODE_TLS_FILE_MAX);
	size_t len = (size_t)st.st_size, got = 0;
	_cleanup_free_ char *buf = xmalloc(len);
	while (got < len) {
		ssize_t n = read(fd, buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s '%s': could not read it whole", option,
			                    path);
		got += (size_t)n;
	}
	*ret = TAKE_PTR(buf);
	*ret_len = len;
	return 0;
}

/* Writes bytes as a new 0600 file name below dirfd, synced. */
static int write_copy(int dirfd, const char *name, const char *bytes, size_t len, const char *shown,
                      struct cp_error **err)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "create '%s/%s'", shown, name);
	for (size_t done = 0; done < len;) {
		ssize_t n = write(fd, bytes + done, len - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "write '%s/%s'", shown, name);
		done += (size_t)n;
	}
	if (fsync(fd) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "sync '%s/%s'", shown, name);
	return 0;
}

/* Removes our three names below dirfd; 0, or -1 with errno of the first failure. */
static int empty_dir(int dirfd)
{
	int saved = 0;
	for (size_t i = 0; i < 3; i++)
		if (unlinkat(dirfd, tls_names[i], 0) < 0 && errno != ENOENT && !saved)
			saved = errno;
	errno = saved;
	return saved ? -1 : 0;
}

/* Copies one source file into dirfd under tls_names[i]; the bytes are
 * wiped from memory afterwards. */
static int copy_one(int dirfd, size_t i, const char *src, const char *shown, struct cp_error **err)
{
	char *bytes = NULL;
	size_t len = 0;
	if (read_source(src, tls_options[i], &bytes, &len, err) < 0)
		return -1;
	int r = write_copy(dirfd, tls_names[i], bytes, len, shown, err);
	if (bytes)
		explicit_bzero(bytes, len);
	free(bytes);
	return r;
}

int node_files_install(const char *state_dir, const char *name, const struct docker_tls_files *src, char **ret_ca,
                       char **ret_cert, char **ret_key, struct cp_error **err)
{
	_cleanup_free_ char *nodes_shown = xasprintf("%s/nodes", state_dir);
	_cleanup_free_ char *shown = xasprintf("%s/nodes/%s", state_dir, name);
	_cleanup_close_ int state_fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (state_fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open the state directory '%s'", state_dir);
	_cleanup_close_ int nodes_fd = -1, dir_fd = -1;
	if (open_private_dir(state_fd, "nodes", nodes_shown, &nodes_fd, err) < 0 ||
	    open_private_dir(nodes_fd, name, shown, &dir_fd, err) < 0)
		return -1;
	if (empty_dir(dir_fd) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "empty '%s' of an earlier attempt", shown);
	const char *paths[3] = {src->ca, src->cert, src->key};
	for (size_t i = 0; i < 3; i++)
		if (copy_one(dir_fd, i, paths[i], shown, err) < 0) {
			empty_dir(dir_fd);
			unlinkat(nodes_fd, name, AT_REMOVEDIR);
			return -1;
		}
	if (fsync(dir_fd) < 0) {
		int saved = errno;
		empty_dir(dir_fd);
		unlinkat(nodes_fd, name, AT_REMOVEDIR);
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, saved, "sync '%s'", shown);
	}
	*ret_ca = xasprintf("%s/%s", shown, NODE_TLS_CA);
	*ret_cert = xasprintf("%s/%s", shown, NODE_TLS_CERT);
	*ret_key = xasprintf("%s/%s", shown, NODE_TLS_KEY);
	return 0;
}

int node_files_remove(const char *state_dir, const char *name, struct cp_error **err)
{
	_cleanup_free_ char *shown = xasprintf("%s/nodes/%s", state_dir, name);
	_cleanup_free_ char *nodes = xasprintf("%s/nodes", state_dir);
	_cleanup_close_ int nodes_fd = open(nodes, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (nodes_fd < 0)
		return errno == ENOENT ? 0 : cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open '%s'", nodes);
	_cleanup_close_ int dir_fd = openat(nodes_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dir_fd < 0)
		return errno == ENOENT ? 0 : cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "open '%s'", shown);
	if (empty_dir(dir_fd) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "remove the TLS files in '%s'", shown);
	if (unlinkat(nodes_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                          "remove '%s' (something else than the TLS files is in it)", shown);
	return 0;
}
