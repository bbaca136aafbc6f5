/* checks.c: the pure decisions of doctor and status: which capabilities are
 * dangerous, what in a mount table betrays the engine socket or a credential
 * directory, and when `status` says "not ready". No I/O, so the unit tests
 * cover every row. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h" /* template/helper/proto.h: PROTO_CHANNEL_DIR */
#include "ops.h"

int ops_capabilities_parse(const char *status_text, uint64_t *ret_mask)
{
	const char *p = status_text ? strstr(status_text, "CapEff:") : NULL;
	if (!p)
		return -1;
	p += strlen("CapEff:");
	while (*p == ' ' || *p == '\t')
		p++;
	char *end = NULL;
	unsigned long long v = strtoull(p, &end, 16);
	if (end == p || (*end && *end != '\n' && *end != '\r' && *end != ' '))
		return -1;
	*ret_mask = (uint64_t)v;
	return 0;
}

/* Numbers from linux/capability.h. */
static const struct {
	int bit;
	const char *name;
} dangerous_caps[] = {
    {2, "CAP_DAC_READ_SEARCH"}, {9, "CAP_LINUX_IMMUTABLE"},
    {12, "CAP_NET_ADMIN"},      {16, "CAP_SYS_MODULE"},
    {17, "CAP_SYS_RAWIO"},      {19, "CAP_SYS_PTRACE"},
    {21, "CAP_SYS_ADMIN"},      {22, "CAP_SYS_BOOT"},
    {25, "CAP_SYS_TIME"},       {32, "CAP_MAC_OVERRIDE"},
    {33, "CAP_MAC_ADMIN"},      {34, "CAP_SYSLOG"},
    {38, "CAP_PERFMON"},        {39, "CAP_BPF"},
};

int ops_capabilities_dangerous(uint64_t mask, char *buf, size_t size)
{
	int n = 0;
	size_t o = 0;
	if (size)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof(dangerous_caps) / sizeof(dangerous_caps[0]); i++) {
		if (!(mask & ((uint64_t)1 << dangerous_caps[i].bit)))
			continue;
		if (o < size)
			o += (size_t)snprintf(buf + o, size - o, "%s%s", n ? "," : "", dangerous_caps[i].name);
		n++;
	}
	return n;
}

/* Walks mountinfo lines; fn gets the root and mount point fields (octal
 * escapes such as \040 left as they are) and returns 1 to stop. */
static int each_mount(const char *mountinfo, int (*fn)(void *ud, const char *root, const char *point, const char *line),
                      void *ud)
{
	const char *p = mountinfo;
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char line[8192];
		snprintf(line, sizeof(line), "%.*s", (int)(len < sizeof(line) ? len : sizeof(line) - 1), p);
		char root[4096], point[4096];
		if (sscanf(line, "%*s %*s %*s %4095s %4095s", root, point) == 2 && fn(ud, root, point, line))
			return 1;
		p = nl ? nl + 1 : NULL;
	}
	return 0;
}

static const char *last_component(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

struct socket_search {
	const char *basename;
	char *buf;
	size_t size;
};

static int socket_match(void *ud, const char *root, const char *point, const char *line)
{
	(void)line;
	struct socket_search *s = ud;
	const char *names[] = {"docker.sock", s->basename};
	for (size_t i = 0; i < 2; i++) {
		if (!names[i] || !*names[i])
			continue;
		if (!strcmp(last_component(point), names[i]) || !strcmp(last_component(root), names[i])) {
			snprintf(s->buf, s->size, "%s (from %s)", point, root);
			return 1;
		}
	}
	return 0;
}

int ops_mountinfo_find_socket(const char *mountinfo, const char *socket_basename, char *buf, size_t size)
{
	struct socket_search s = {socket_basename, buf, size};
	if (size)
		buf[0] = '\0';
	return each_mount(mountinfo, socket_match, &s);
}

static const char *const credential_dirs[] = {".aws",  ".azure",   ".config", ".docker", ".gnupg",
                                              ".kube", ".secrets", ".ssh",    ".local"};

static int has_credential_component(const char *path)
{
	const char *p = path;
	while (*p) {
		while (*p == '/')
			p++;
		size_t len = strcspn(p, "/");
		for (size_t i = 0; i < sizeof(credential_dirs) / sizeof(credential_dirs[0]); i++)
			if (len == strlen(credential_dirs[i]) && !strncmp(p, credential_dirs[i], len))
				return 1;
		p += len;
	}
	return 0;
}

struct credential_search {
	const char *home;
	const char *skip_target;
	char *buf;
	size_t size;
};

static int credential_match(void *ud, const char *root, const char *point, const char *line)
{
	(void)line;
	struct credential_search *s = ud;
	if ((s->skip_target && !strcmp(point, s->skip_target)) || !strcmp(point, PROTO_CHANNEL_DIR))
		return 0; /* chat2sbx's own: the helper, the direct channel's empty directory */
	int home = s->home && *s->home && strcmp(s->home, "/") && !strcmp(root, s->home);
	if (!home && !has_credential_component(root) && !has_credential_component(point))
		return 0;
	snprintf(s->buf, s->size, "%s (from %s)%s", point, root, home ? ": the host home directory" : "");
	return 1;
}

int ops_mountinfo_find_credentials(const char *mountinfo, const char *home, const char *skip_target, char *buf,
                                   size_t size)
{
	struct credential_search s = {home, skip_target, buf, size};
	if (size)
		buf[0] = '\0';
	return each_mount(mountinfo, credential_match, &s);
}

int ops_readiness_exit_status(const struct ops_readiness *r, const char **ret_reason)
{
	const char *reason = NULL;
	if (r->engine_denied)
		reason = "this user may not use the Docker Engine's socket (ENGINE says how to get the right)";
	else if (!r->service_up)
		reason = "the service is not running (chat2sbx serve)";
	else if (!r->mcp_answering)
		reason = "the MCP endpoint does not answer initialize";
	else if (!r->engine_up)
		reason = "the Docker Engine does not answer";
	else if (!r->template_present)
		reason = "the template image is missing (chat2sbx setup)";
	else if (r->tunnel_enabled && !r->tunnel_ready)
		reason = "the tunnel is enabled but not ready";
	else if (r->firewall_missing)
		reason = "the host-edge firewall is not in place (sandboxes reach this host's services)";
	if (ret_reason)
		*ret_reason = reason;
	return reason ? OPS_EXIT_NOT_READY : 0;
}
