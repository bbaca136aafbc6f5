/* network_ops.c: engine networks made and removed on request (sandbox_expose's
 * per-sandbox networks): create with labels, connect and disconnect a
 * container, remove, list by label. Decides nothing about names or labels;
 * the caller does. Also the bridge interface behind a network (its
 * option, or libnetwork's derived name). The shared sandbox network lives in
 * networks.c. */
#include "engine_internal.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"

#define DOCKER_NETWORK_OP_TIMEOUT_MS 15000L

/* "/networks/<escaped ref><suffix>" (caller frees) or NULL. */
static char *network_path(const char *ref, const char *suffix)
{
	_cleanup_free_ char *esc = docker_escape(ref, NULL);
	return xasprintf("/networks/%s%s", esc, suffix);
}

/* A bridge network's host interface (engine_internal.h). */
int docker_network_bridge_of(struct json_object *network, char *buf, size_t size)
{
	struct json_object *v = NULL, *options = NULL;
	if (json_object_object_get_ex(network, "Options", &options) &&
	    json_object_object_get_ex(options, DOCKER_BRIDGE_NAME_OPTION, &v) &&
	    json_object_is_type(v, json_type_string) && *json_object_get_string(v)) {
		snprintf(buf, size, "%s", json_object_get_string(v));
		return 1;
	}
	/* libnetwork's bridge driver names an unnamed network's bridge "br-"
	 * and the first 12 characters of the network id. */
	if (!json_object_object_get_ex(network, "Id", &v) || !json_object_is_type(v, json_type_string) ||
	    strlen(json_object_get_string(v)) < 12)
		return -1;
	snprintf(buf, size, "br-%.12s", json_object_get_string(v));
	return 0;
}

int docker_network_create(struct docker_engine *engine, const char *name, const char *const *labels, int icc,
                          const char *bridge_name, char **ret_id, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	if (!name || !*name)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "create network: empty name");
	what = xasprintf("create network '%s'", name);
	_cleanup_json_ struct json_object *body = xjson_object();
	struct json_object *options = xjson_object();
	struct json_object *lab = xjson_object();
	xjson_add(body, "Options", options);
	xjson_add(body, "Labels", lab);
	xjson_add(body, "Name", xjson_string(name));
	xjson_add(body, "Driver", xjson_string("bridge"));
	/* CheckDuplicate: a second create of the same name is a 409, not a twin. */
	xjson_add(body, "CheckDuplicate", xjson_bool(1));
	xjson_add(options, "com.docker.network.bridge.enable_icc", xjson_string(icc ? "true" : "false"));
	if (bridge_name)
		xjson_add(options, DOCKER_BRIDGE_NAME_OPTION, xjson_string(bridge_name));
	for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2)
		xjson_add(lab, labels[i], xjson_string(labels[i + 1]));
	_cleanup_json_ struct json_object *reply = NULL;
	if (docker_request(engine, "POST", "/networks/create", body, DOCKER_NETWORK_OP_TIMEOUT_MS, what, NULL, &reply,
	                   err) < 0)
		return -1;
	struct json_object *id = NULL;
	if (!reply || !json_object_object_get_ex(reply, "Id", &id) || !json_object_is_type(id, json_type_string))
		return cp_error_set(err, CP_ERR_INTERNAL, "%s: the engine's answer has no network Id", what);
	if (ret_id) {
		char *copy = xstrdup(json_object_get_string(id));
		*ret_id = copy;
	}
	return 0;
}

int docker_network_connect(struct docker_engine *engine, const char *network, const char *container, const char *alias,
                           struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	_cleanup_free_ char *path = network_path(network, "/connect");
	what = xasprintf("connect container '%s' to network '%s'", container, network);
	_cleanup_json_ struct json_object *body = xjson_object();
	struct json_object *endpoint = xjson_object();
	xjson_add(body, "Container", xjson_string(container));
	xjson_add(body, "EndpointConfig", endpoint);
	if (alias) {
		struct json_object *aliases = xjson_array();
		xjson_append(aliases, xjson_string(alias));
		xjson_add(endpoint, "Aliases", aliases);
	}
	_cleanup_json_ struct json_object *reply = NULL;
	return docker_request(engine, "POST", path, body, DOCKER_NETWORK_OP_TIMEOUT_MS, what, NULL, &reply, err);
}

int docker_network_disconnect(struct docker_engine *engine, const char *network, const char *container,
                              struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	_cleanup_free_ char *path = network_path(network, "/disconnect");
	what = xasprintf("disconnect container '%s' from network '%s'", container, network);
	_cleanup_json_ struct json_object *body = xjson_object();
	xjson_add(body, "Container", xjson_string(container));
	xjson_add(body, "Force", xjson_bool(1));
	_cleanup_json_ struct json_object *reply = NULL;
	return docker_request(engine, "POST", path, body, DOCKER_NETWORK_OP_TIMEOUT_MS, what, NULL, &reply, err);
}

int docker_network_remove(struct docker_engine *engine, const char *network, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	_cleanup_free_ char *path = network_path(network, "");
	what = xasprintf("remove network '%s'", network);
	_cleanup_json_ struct json_object *reply = NULL;
	return docker_request(engine, "DELETE", path, NULL, DOCKER_NETWORK_OP_TIMEOUT_MS, what, NULL, &reply, err);
}

/* GET /networks?filters={"label":[label]}: the engine's list, an array
 * (*ret_reply, caller puts). what names the call in errors. */
static int networks_labelled(struct docker_engine *engine, const char *label, const char *what,
                             struct json_object **ret_reply, struct cp_error **err)
{
	if (!label || !*label)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "%s: empty label", what);
	_cleanup_free_ char *path = docker_filtered_path("/networks?", "label", label);
	return docker_request_list(engine, path, DOCKER_NETWORK_OP_TIMEOUT_MS, what, ret_reply, err);
}

int docker_network_list(struct docker_engine *engine, const char *label, char ***ret_names, size_t *ret_n,
                        struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	what = xasprintf("list networks labelled '%s'", label ? label : "");
	_cleanup_json_ struct json_object *reply = NULL;
	if (networks_labelled(engine, label, what, &reply, err) < 0)
		return -1;
	size_t n = json_object_array_length(reply);
	char **names = xcalloc(n + 1, sizeof(*names));
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		struct json_object *name = NULL;
		if (!json_object_object_get_ex(json_object_array_get_idx(reply, i), "Name", &name) ||
		    !json_object_is_type(name, json_type_string))
			continue;
		names[k] = xstrdup(json_object_get_string(name));
		k++;
	}
	*ret_names = names;
	*ret_n = k;
	return 0;
}

void docker_network_bridges_free(struct docker_network_bridge *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

int docker_network_bridges(struct docker_engine *engine, const char *label, struct docker_network_bridge **ret,
                           size_t *ret_n, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	what = xasprintf("list the bridges of networks labelled '%s'", label ? label : "");
	_cleanup_json_ struct json_object *reply = NULL;
	if (networks_labelled(engine, label, what, &reply, err) < 0)
		return -1;
	size_t n = json_object_array_length(reply), k = 0;
	struct docker_network_bridge *v = xcalloc(n ? n : 1, sizeof(*v));
	for (size_t i = 0; i < n; i++) {
		struct json_object *net = json_object_array_get_idx(reply, i), *name = NULL, *driver = NULL;
		/* Only bridges have an interface on the host. */
		if (!json_object_object_get_ex(net, "Driver", &driver) ||
		    !json_object_is_type(driver, json_type_string) ||
		    strcmp(json_object_get_string(driver), "bridge") ||
		    !json_object_object_get_ex(net, "Name", &name) || !json_object_is_type(name, json_type_string))
			continue;
		int named = docker_network_bridge_of(net, v[k].interface, sizeof(v[k].interface));
		if (named < 0)
			continue;
		v[k].named = named;
		v[k].name = xstrdup(json_object_get_string(name));
		k++;
	}
	*ret = v;
	*ret_n = k;
	return 0;
}

int docker_container_gateways(struct docker_engine *engine, const char *container, char ***ret, struct cp_error **err)
{
	_cleanup_free_ char *what = NULL;
	_cleanup_free_ char *esc = docker_escape(container, NULL);
	_cleanup_free_ char *path = NULL;
	what = xasprintf("find the network gateways of container '%s'", container);
	path = xasprintf("/containers/%s/json", esc);
	_cleanup_json_ struct json_object *reply = NULL;
	if (docker_request(engine, "GET", path, NULL, DOCKER_NETWORK_OP_TIMEOUT_MS, what, NULL, &reply, err) < 0)
		return -1;
	struct json_object *settings = NULL, *networks = NULL;
	if (!reply || !json_object_object_get_ex(reply, "NetworkSettings", &settings) ||
	    !json_object_object_get_ex(settings, "Networks", &networks) ||
	    !json_object_is_type(networks, json_type_object))
		networks = NULL; /* NetworkMode none: no networks at all */
	char **v = xcalloc((networks ? (size_t)json_object_object_length(networks) : 0) + 1, sizeof(*v));
	size_t k = 0;
	if (networks) {
		json_object_object_foreach(networks, name, endpoint)
		{
			(void)name;
			struct json_object *gw = NULL;
			if (!json_object_object_get_ex(endpoint, "Gateway", &gw) ||
			    !json_object_is_type(gw, json_type_string) || !*json_object_get_string(gw))
				continue;
			v[k] = xstrdup(json_object_get_string(gw));
			k++;
		}
	}
	*ret = v;
	return 0;
}

void docker_strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}
