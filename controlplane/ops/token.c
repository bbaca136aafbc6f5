/* token.c: the MCP bearer token in STATE_DIR/token (issue 12): 32 random
 * bytes as 64 lowercase hex characters, made at serve's first start, 0600,
 * read by serve, `chat2sbx token`, `status` and `doctor`. The token is a
 * secret: it is never logged, never audited and never part of an answer;
 * only its file's path is named. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/id.h"
#include "ops.h"

#define TOKEN_BYTES 32

void ops_mcp_token_path(const char *state_dir, char *buf, size_t size)
{
	snprintf(buf, size, "%s/" OPS_MCP_TOKEN_FILE, state_dir);
}

/* 64 lowercase hex characters, optionally followed by one newline. */
static int token_text_valid(const char *text, size_t len)
{
	if (len == OPS_MCP_TOKEN_LEN + 1 && text[OPS_MCP_TOKEN_LEN] == '\n')
		len--;
	if (len != OPS_MCP_TOKEN_LEN)
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f')))
			return 0;
	return 1;
}

/* Reads the token from an open file after checking it is a regular file of
 * this user that nobody else can read. */
static int read_token(int fd, const char *path, char ret[OPS_MCP_TOKEN_LEN + 1], struct cp_error **err)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "inspect the MCP token file '%s'", path);
	if (!S_ISREG(st.st_mode))
		return cp_error_set(err, CP_ERR_DENIED,
		                    "the MCP token file '%s' is not a regular file; remove it and "
		                    "restart serve to make a new token",
		                    path);
	if (st.st_uid != geteuid())
		return cp_error_set(err, CP_ERR_DENIED,
		                    "the MCP token file '%s' belongs to uid %u, not to this user (uid %u); remove it "
		                    "and restart serve to make a new token",
		                    path, (unsigned)st.st_uid, (unsigned)geteuid());
	if (st.st_mode & 077)
		return cp_error_set(err, CP_ERR_DENIED,
		                    "the MCP token file '%s' has mode %04o, so other users may have read it; remove it "
		                    "and restart serve to make a new token (it is made 0600)",
		                    path, (unsigned)(st.st_mode & 07777));
	char text[OPS_MCP_TOKEN_LEN + 2];
	ssize_t n = pread(fd, text, sizeof(text), 0);
	if (n < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "read the MCP token file '%s'", path);
	if (!token_text_valid(text, (size_t)n))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "the MCP token file '%s' does not hold a token (64 hex characters); remove it and "
		                    "restart serve to make a new one",
		                    path);
	memcpy(ret, text, OPS_MCP_TOKEN_LEN);
	ret[OPS_MCP_TOKEN_LEN] = '\0';
	explicit_bzero(text, sizeof(text));
	return 0;
}

int ops_mcp_token_read(const char *state_dir, char ret[OPS_MCP_TOKEN_LEN + 1], struct cp_error **err)
{
	char path[4200];
	ops_mcp_token_path(state_dir, path, sizeof(path));
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT)
		return cp_error_set(err, CP_ERR_NOT_FOUND,
		                    "there is no MCP token yet ('%s'); chat2sbx serve makes it at its first start",
		                    path);
	if (fd < 0)
		return cp_error_set_errno(err, errno == ELOOP ? CP_ERR_DENIED : CP_ERR_UNAVAILABLE, errno,
		                          "open the MCP token file '%s'", path);
	return read_token(fd, path, ret, err);
}

/* Writes a new token to path through a 0600 temporary file in the same
 * directory and a rename, so a crash leaves either no token or a whole one. */
static int make_token(const char *state_dir, const char *path, char ret[OPS_MCP_TOKEN_LEN + 1], struct cp_error **err)
{
	unsigned char raw[TOKEN_BYTES];
	if (id_random_bytes(raw, sizeof(raw), err) < 0)
		return cp_error_prefix(err, "make the MCP token");
	static const char hex[] = "0123456789abcdef";
	char text[OPS_MCP_TOKEN_LEN + 1];
	for (size_t i = 0; i < TOKEN_BYTES; i++) {
		text[2 * i] = hex[raw[i] >> 4];
		text[2 * i + 1] = hex[raw[i] & 15];
	}
	text[OPS_MCP_TOKEN_LEN] = '\n';
	explicit_bzero(raw, sizeof(raw));
	char tmp[4300];
	snprintf(tmp, sizeof(tmp), "%s/.token.XXXXXX", state_dir);
	_cleanup_close_ int fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 */
	int r = -1;
	if (fd < 0)
		cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "make the MCP token file '%s'", path);
	else if (write(fd, text, sizeof(text)) != (ssize_t)sizeof(text) || fsync(fd) < 0)
		cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "write the MCP token file '%s'", path);
	else if (rename(tmp, path) < 0)
		cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "write the MCP token file '%s'", path);
	else
		r = 0;
	if (r < 0 && fd >= 0)
		unlink(tmp);
	if (r == 0) {
		memcpy(ret, text, OPS_MCP_TOKEN_LEN);
		ret[OPS_MCP_TOKEN_LEN] = '\0';
	}
	explicit_bzero(text, sizeof(text));
	return r;
}

int ops_mcp_token_ensure(const char *state_dir, char ret[OPS_MCP_TOKEN_LEN + 1], int *ret_created,
                         struct cp_error **err)
{
	char path[4200];
	ops_mcp_token_path(state_dir, path, sizeof(path));
	struct cp_error *e = NULL;
	if (ops_mcp_token_read(state_dir, ret, &e) == 0) {
		if (ret_created)
			*ret_created = 0;
		return 0;
	}
	if (e->code != CP_ERR_NOT_FOUND) {
		*err = e;
		return -1;
	}
	cp_error_free(e);
	if (make_token(state_dir, path, ret, err) < 0)
		return -1;
	if (ret_created)
		*ret_created = 1;
	return 0;
}
