/* expose.c: the sandbox_expose tool. Validates the arguments and shapes the
 * answer (host, host_port, url); the work is lifecycle/expose.c's. Also the
 * "exposures" list sandbox_get shows. */
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/clock.h"
#include "../base/xjson.h"
#include "tools_internal.h"

/* One exposure as tools answer it (caller puts). */
static struct json_object *exposure_json(const struct exposure_record *x)
{
	struct json_object *o = xjson_object();
	char url[300], when[40];
	/* An IPv6 address goes in brackets in a URL (RFC 3986, section 3.2.2). */
	int v6 = strchr(x->host, ':') != NULL;
	snprintf(url, sizeof(url), "http://%s%s%s:%d/", v6 ? "[" : "", x->host, v6 ? "]" : "", x->host_port);
	xjson_add(o, "sandbox_id", xjson_string(x->sandbox_id));
	xjson_add(o, "port", xjson_int64(x->container_port));
	xjson_add(o, "host", xjson_string(x->host));
	xjson_add(o, "host_port", xjson_int64(x->host_port));
	xjson_add(o, "url", xjson_string(url));
	xjson_add(o, "created_at", xjson_string(clock_format_rfc3339(x->created_at_ms, when, sizeof(when))));
	return o;
}

struct json_object *tools_exposures_json(struct tools_app *app, const char *sandbox_id)
{
	struct exposure_record *rows = NULL;
	size_t n = 0;
	struct cp_error *e = NULL;
	if (lifecycle_sandbox_exposures(app->lc, sandbox_id, &rows, &n, &e) < 0) {
		cp_error_free(e);
		return NULL;
	}
	struct json_object *list = xjson_array();
	for (size_t i = 0; i < n; i++) {
		xjson_append(list, exposure_json(&rows[i]));
		exposure_record_clear(&rows[i]);
	}
	free(rows);
	return list;
}

int tool_sandbox_expose(const struct mcp_call *call, const struct mcp_args *args, struct json_object **ret,
                        struct cp_error **err)
{
	struct tools_app *app = call->app;
	const char *id = mcp_args_string(args, "sandbox_id", NULL);
	int64_t port = mcp_args_int(args, "port", 0);
	struct exposure_record x = {0};
	int created = 0;
	if (lifecycle_sandbox_expose(app->lc, id, port, &x, &created, err) < 0)
		return -1;
	struct json_object *o = exposure_json(&x);
	xjson_add(o, "created", xjson_bool(created));
	/* Who can reach it, said plainly (issue 23): a published port has no
	 * owner check, and loopback is shared by every account here. */
	char msg[1200], page[300], rest[100];
	snprintf(rest, sizeof(rest), "sandboxes/%s", id);
	mcp_page_url(app->cfg->host, (unsigned)app->cfg->port, rest, page, sizeof(page));
	snprintf(msg, sizeof(msg),
	         "Port %d of the sandbox is reachable from this machine at %s%s. Anyone who can open a connection "
	         "to %s can use it: every account on this machine (loopback is shared), and other machines too when "
	         "that is not a loopback address; it has no password, so serve nothing secret on it. The server "
	         "inside must listen on 0.0.0.0 (all interfaces), not only 127.0.0.1. The mapping stays until the "
	         "sandbox is destroyed. The person finds the link on the sandbox's page: %s",
	         x.container_port, json_object_get_string(json_object_object_get(o, "url")),
	         created ? "" : " (it was exposed already)", x.host, page);
	xjson_add(o, "message", xjson_string(msg));
	exposure_record_clear(&x);
	*ret = o;
	return 0;
}
