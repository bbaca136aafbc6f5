/* check.c: the tunnel's configuration check (tunnel.h), shared by serve,
 * setup and status. It inspects the client executable, the tunnel id and the
 * key file's metadata; it never opens or reads the key itself and never
 * echoes the tunnel-id file's content in an error. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "tunnel/tunnel.h"

#define LOCAL_ONLY "or serve local-only with CHAT2SBX_ENABLE_TUNNEL=0"
#define TUNNEL_ID_PREFIX "tunnel_"
#define TUNNEL_ID_HEX 32

static int check_client(const struct config *cfg, struct cp_error **err)
{
	struct stat st;
	if (stat(cfg->tunnel_client, &st) < 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the tunnel is enabled but the tunnel client '%s' does not exist; install "
		                    "OpenAI's tunnel-client there or point CHAT2SBX_TUNNEL_CLIENT at it, " LOCAL_ONLY,
		                    cfg->tunnel_client);
	if (!S_ISREG(st.st_mode) || access(cfg->tunnel_client, X_OK) < 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the tunnel is enabled but the tunnel client '%s' is not an executable file; "
		                    "run 'chmod +x %s' or point CHAT2SBX_TUNNEL_CLIENT at the client, " LOCAL_ONLY,
		                    cfg->tunnel_client, cfg->tunnel_client);
	return 0;
}

/* Accepts exactly "tunnel_" + 32 of [0-9a-f], with at most one "\n" after. */
static int tunnel_id_valid(const char *s, size_t len)
{
	size_t want = strlen(TUNNEL_ID_PREFIX) + TUNNEL_ID_HEX;
	if (len == want + 1 && s[want] == '\n')
		len = want;
	if (len != want || strncmp(s, TUNNEL_ID_PREFIX, strlen(TUNNEL_ID_PREFIX)) != 0)
		return 0;
	for (size_t i = strlen(TUNNEL_ID_PREFIX); i < want; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	return 1;
}

int tunnel_id_read(const struct config *cfg, char *buf, size_t size, struct cp_error **err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/tunnel-id", cfg->secret_dir);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                          "the tunnel is enabled but the tunnel id file '%s' cannot be read; store "
		                          "the id from OpenAI's Tunnels page there (CHAT2SBX_SECRET_DIR), " LOCAL_ONLY,
		                          path);
	char text[64];
	ssize_t n = read(fd, text, sizeof(text));
	if (n < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "read the tunnel id file '%s'", path);
	if (!tunnel_id_valid(text, (size_t)n))
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the tunnel id file '%s' is malformed: it must hold exactly 'tunnel_' followed by "
		                    "32 lowercase hexadecimal characters (one trailing newline allowed); write the id "
		                    "from OpenAI's Tunnels page there, " LOCAL_ONLY,
		                    path);
	size_t len = strlen(TUNNEL_ID_PREFIX) + TUNNEL_ID_HEX;
	if (size <= len)
		return cp_error_set(err, CP_ERR_INTERNAL, "tunnel id buffer too small");
	memcpy(buf, text, len);
	buf[len] = '\0';
	return 0;
}

static int check_key(const struct config *cfg, struct cp_error **err)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/key", cfg->secret_dir);
	struct stat st;
	if (stat(path, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                          "the tunnel is enabled but the runtime key file '%s' is missing; store the "
		                          "runtime API key there with mode 0600 (CHAT2SBX_SECRET_DIR), " LOCAL_ONLY,
		                          path);
	if (!S_ISREG(st.st_mode))
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the runtime key file '%s' is not a regular file; replace it with a file holding "
		                    "the key (mode 0600), " LOCAL_ONLY,
		                    path);
	if (st.st_uid != getuid())
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the runtime key file '%s' is owned by uid %u, not by you (uid %u); run 'chown "
		                    "%u %s', " LOCAL_ONLY,
		                    path, (unsigned)st.st_uid, (unsigned)getuid(), (unsigned)getuid(), path);
	mode_t mode = st.st_mode & 07777;
	if (mode != 0600 && mode != 0400)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the runtime key file '%s' has mode %04o; it must be readable by you only: run "
		                    "'chmod 600 %s', " LOCAL_ONLY,
		                    path, (unsigned)mode, path);
	if (st.st_size == 0)
		return cp_error_set(err, CP_ERR_UNAVAILABLE,
		                    "the runtime key file '%s' is empty; store the runtime API key there, " LOCAL_ONLY,
		                    path);
	if (access(path, R_OK) < 0)
		return cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno,
		                          "the runtime key file '%s' is not readable; run 'chmod 600 %s'", path, path);
	return 0;
}

int tunnel_config_check(const struct config *cfg, struct cp_error **err)
{
	if (!cfg->enable_tunnel)
		return 0;
	char id[64];
	if (check_client(cfg, err) < 0 || tunnel_id_read(cfg, id, sizeof(id), err) < 0 || check_key(cfg, err) < 0)
		return -1;
	return 0;
}
