/* nft.c: the only libnftables code (Debian libnftables-dev; the API of
 * libnftables(3), JSON output per libnftables-json(5)). Applies, reads and
 * removes table inet chat2sbx in the calling process's network namespace;
 * never lists, changes or flushes anything else of the ruleset (the
 * engine's iptables-nft tables are its own). Each call opens its own
 * context; one process-wide lock keeps libnftables' calls apart. */
#include "firewall.h"

#include <linux/capability.h>
#include <nftables/libnftables.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <json-c/json.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"

static pthread_mutex_t nft_lock = PTHREAD_MUTEX_INITIALIZER;

int firewall_permitted(void)
{
	struct __user_cap_header_struct head = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &head, data) != 0)
		return 0;
	return (data[CAP_NET_ADMIN / 32].effective >> (CAP_NET_ADMIN % 32)) & 1;
}

/* The first line of libnftables' error buffer that says something (it
 * prints "Error: ...", then the offending input and a caret line), into buf. */
static const char *first_error(const char *text, char *buf, size_t size)
{
	const char *p = text ? strstr(text, "Error:") : NULL;
	if (!p)
		p = text && *text ? text : "libnftables gave no reason";
	snprintf(buf, size, "%.*s", (int)strcspn(p, "\n"), p);
	return buf;
}

/* Runs cmd through libnftables. json: JSON output; dry_run: check only.
 * *ret_output (may be NULL; caller frees) gets the output. On failure
 * (libnftables returned non-zero) fails with code and "<what>: <its first
 * error line>". */
static int run(const char *cmd, int json, int dry_run, enum cp_error_code code, const char *what, char **ret_output,
               struct cp_error **err)
{
	if (!firewall_permitted())
		return cp_error_set(err, CP_ERR_DENIED,
		                    "%s: reading or changing the machine's nftables ruleset needs root "
		                    "(CAP_NET_ADMIN), which this process does not have",
		                    what);
	pthread_mutex_lock(&nft_lock);
	struct nft_ctx *ctx = nft_ctx_new(NFT_CTX_DEFAULT);
	if (!ctx) {
		pthread_mutex_unlock(&nft_lock);
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: libnftables could not make a context", what);
	}
	nft_ctx_buffer_output(ctx);
	nft_ctx_buffer_error(ctx);
	if (json)
		nft_ctx_output_set_flags(ctx, NFT_CTX_OUTPUT_JSON);
	nft_ctx_set_dry_run(ctx, dry_run);
	int rc = nft_run_cmd_from_buffer(ctx, cmd);
	char reason[512];
	int r = 0;
	if (rc != 0) {
		r = cp_error_set(err, code, "%s: %s", what,
		                 first_error(nft_ctx_get_error_buffer(ctx), reason, sizeof(reason)));
	} else if (ret_output) {
		const char *out = nft_ctx_get_output_buffer(ctx);
		*ret_output = xstrdup(out ? out : "");
	}
	nft_ctx_free(ctx);
	pthread_mutex_unlock(&nft_lock);
	return r;
}

/* Whether the namespace has table inet chat2sbx, from `list tables`. */
static int table_present(int *ret_present, struct cp_error **err)
{
	_cleanup_free_ char *out = NULL;
	if (run("list tables", 1, 0, CP_ERR_UNAVAILABLE, "list the nftables tables", &out, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *root = json_tokener_parse(out);
	struct json_object *items = NULL;
	if (!root || !json_object_object_get_ex(root, "nftables", &items) ||
	    !json_object_is_type(items, json_type_array))
		return cp_error_set(err, CP_ERR_INTERNAL, "list the nftables tables: libnftables' JSON has no list");
	*ret_present = 0;
	for (size_t i = 0; i < json_object_array_length(items); i++) {
		struct json_object *t = NULL, *family = NULL, *name = NULL;
		if (json_object_object_get_ex(json_object_array_get_idx(items, i), "table", &t) &&
		    json_object_object_get_ex(t, "family", &family) && json_object_object_get_ex(t, "name", &name) &&
		    !strcmp(json_object_get_string(family), FIREWALL_FAMILY) &&
		    !strcmp(json_object_get_string(name), FIREWALL_TABLE))
			*ret_present = 1;
	}
	return 0;
}

int firewall_ruleset_check(const struct firewall_ruleset *rs, struct cp_error **err)
{
	return run(rs->text, 0, 1, CP_ERR_INVALID_ARGUMENT,
	           "check the firewall table " FIREWALL_FAMILY " " FIREWALL_TABLE, NULL, err);
}

int firewall_ruleset_apply(const struct firewall_ruleset *rs, struct cp_error **err)
{
	/* One buffer is one netlink batch: the add, delete and definition
	 * commit together or not at all (libnftables(3), nft(8) "atomic
	 * rule replacement"). */
	return run(rs->text, 0, 0, CP_ERR_UNAVAILABLE, "install the firewall table " FIREWALL_FAMILY " " FIREWALL_TABLE,
	           NULL, err);
}

int firewall_state_read(const struct firewall_ruleset *rs, enum firewall_state *ret, char *detail, size_t size,
                        struct cp_error **err)
{
	int present = 0;
	if (table_present(&present, err) < 0)
		return -1;
	if (!present) {
		snprintf(detail, size, "there is no table %s %s", FIREWALL_FAMILY, FIREWALL_TABLE);
		*ret = FIREWALL_MISSING;
		return 0;
	}
	_cleanup_free_ char *out = NULL;
	if (run("list table " FIREWALL_FAMILY " " FIREWALL_TABLE, 1, 0, CP_ERR_UNAVAILABLE,
	        "read the firewall table " FIREWALL_FAMILY " " FIREWALL_TABLE, &out, err) < 0)
		return -1;
	return firewall_listing_judge(out, rs, ret, detail, size, err);
}

int firewall_remove(int *ret_removed, struct cp_error **err)
{
	int present = 0;
	if (table_present(&present, err) < 0)
		return -1;
	/* Added first, so the delete never fails on an absent table, and
	 * both go in one batch. */
	if (run("table " FIREWALL_FAMILY " " FIREWALL_TABLE "\ndelete table " FIREWALL_FAMILY " " FIREWALL_TABLE "\n",
	        0, 0, CP_ERR_UNAVAILABLE, "remove the firewall table " FIREWALL_FAMILY " " FIREWALL_TABLE, NULL,
	        err) < 0)
		return -1;
	if (ret_removed)
		*ret_removed = present;
	return 0;
}
