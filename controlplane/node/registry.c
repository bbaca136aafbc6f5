/* registry.c: adding and removing nodes as the operator does (issue 28),
 * and node 'local' shown beside them. An add proves the node before it is
 * written: the copied TLS files open a verified connection, the engine
 * answers _ping and /info; anything less leaves no row and no files. No SQL
 * here (store/), no libcurl (docker/). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

#include "../base/cleanup.h"
#include "../base/xalloc.h"
#include "../policy/policy.h"

#define NODE_PING_TIMEOUT_MS 5000L

static void cleanup_enginep(struct docker_engine **e)
{
	docker_engine_free(*e);
}
static void cleanup_factsp(struct docker_engine_facts *f)
{
	docker_engine_facts_clear(f);
}

enum policy_node_state node_state_to_policy(enum node_state s)
{
	return s == NODE_READY ? POLICY_NODE_READY : s == NODE_DRAINING ? POLICY_NODE_DRAINING : POLICY_NODE_DOWN;
}

enum node_state node_state_from_policy(enum policy_node_state s)
{
	return s == POLICY_NODE_READY ? NODE_READY : s == POLICY_NODE_DRAINING ? NODE_DRAINING : NODE_DOWN;
}

void node_labels_from_facts(const struct docker_engine_facts *facts, struct node_labels *ret)
{
	*ret = (struct node_labels){
	    .runtimes = xstrdup(facts->runtimes ? facts->runtimes : ""),
	    .kvm = -1,
	    .memory_bytes = facts->memory_bytes,
	    .cpus = facts->cpus,
	    .engine_version = facts->engine_version ? xstrdup(facts->engine_version) : NULL,
	};
}

/* Opens the engine at endpoint with the files tls, pings it and reads its
 * facts into *ret (caller clears). */
static int contact(const char *endpoint, const struct docker_tls_files *tls, struct docker_engine_facts *ret,
                   struct cp_error **err)
{
	_cleanup_(cleanup_enginep) struct docker_engine *engine = NULL;
	if (docker_engine_new_tls(endpoint, tls, &engine, err) < 0 ||
	    docker_engine_ping(engine, NODE_PING_TIMEOUT_MS, err) < 0 || docker_engine_facts(engine, ret, err) < 0)
		return -1;
	return 0;
}

/* The part of node_add after the files are in place; the caller removes
 * them when it fails. */
static int add_with_files(struct store *store, struct node_record *n, struct cp_error **err)
{
	struct docker_tls_files copies = {.ca = n->tls_ca, .cert = n->tls_cert, .key = n->tls_key};
	_cleanup_(cleanup_factsp) struct docker_engine_facts facts = {0};
	if (contact(n->endpoint, &copies, &facts, err) < 0)
		return -1;
	node_labels_from_facts(&facts, &n->labels);
	return store_node_insert(store, n, err);
}

/* Each of the ':'-separated roots (NULL or "" none) shaped as a node path. */
static int roots_check(const char *host_roots, struct cp_error **err)
{
	size_t n = 0;
	char **roots = policy_roots_split(host_roots ? host_roots : "", &n);
	int r = 0;
	for (size_t i = 0; i < n && r == 0; i++)
		r = policy_node_path_shape(roots[i], "--host-root", err);
	policy_roots_free(roots);
	return r;
}

int node_add(const struct config *cfg, struct store *store, const char *name, const char *endpoint,
             const struct docker_tls_files *tls, const char *host_roots, int64_t now_ms, struct node_record *ret,
             struct cp_error **err)
{
	int has_tls = tls && tls->ca && *tls->ca && tls->cert && *tls->cert && tls->key && *tls->key;
	_cleanup_free_ char *host = NULL;
	int port = 0;
	if (policy_node_name_check(name, err) < 0 || docker_endpoint_parse(endpoint, has_tls, &host, &port, err) < 0 ||
	    roots_check(host_roots, err) < 0)
		return cp_error_prefix(err, "add node '%s'", name ? name : "");

	struct node_record n = {0};
	struct cp_error *e = NULL;
	if (store_node_get(store, name, &n, &e) == 0) {
		node_record_clear(&n);
		cp_error_set(err, CP_ERR_CONFLICT,
		             "add node '%s': a node of that name exists already; choose another name, or remove it "
		             "first ('chat2sbx node remove %s')",
		             name, name);
		return cp_error_set_detail(err, CP_DETAIL_ALREADY_EXISTS);
	}
	if (e->code != CP_ERR_NOT_FOUND) {
		*err = e;
		return cp_error_prefix(err, "add node '%s'", name);
	}
	cp_error_free(e);

	n = (struct node_record){
	    .name = xstrdup(name),
	    .endpoint = xstrdup(endpoint),
	    .state = NODE_READY,
	    .last_contact_ms = now_ms,
	    .created_at_ms = now_ms,
	    .host_roots = host_roots && *host_roots ? xstrdup(host_roots) : NULL,
	};
	if (node_files_install(cfg->state_dir, name, tls, &n.tls_ca, &n.tls_cert, &n.tls_key, err) < 0) {
		node_record_clear(&n);
		return cp_error_prefix(err, "add node '%s'", name);
	}
	if (add_with_files(store, &n, err) < 0) {
		struct cp_error *ignored = NULL;
		node_files_remove(cfg->state_dir, name, &ignored);
		cp_error_free(ignored);
		node_record_clear(&n);
		return cp_error_prefix(err, "add node '%s'", name);
	}
	*ret = n;
	return 0;
}

int node_remove(const struct config *cfg, struct store *store, const char *name, struct node_record *ret,
                struct cp_error **err)
{
	struct node_record n = {0};
	if (store_node_delete(store, name, &n, err) < 0)
		return -1;
	if (node_files_remove(cfg->state_dir, name, err) < 0) {
		node_record_clear(&n);
		return cp_error_prefix(err, "node '%s' is removed from the registry, but its TLS files are not", name);
	}
	if (ret)
		*ret = n;
	else
		node_record_clear(&n);
	return 0;
}

int node_local_record(const struct config *cfg, int64_t now_ms, struct node_record *ret, struct cp_error **err)
{
	_cleanup_(cleanup_enginep) struct docker_engine *engine = NULL;
	_cleanup_(cleanup_factsp) struct docker_engine_facts facts = {0};
	if (docker_engine_new(cfg->docker_socket, &engine, err) < 0 || docker_engine_facts(engine, &facts, err) < 0)
		return -1;
	struct node_record n = {
	    .name = xstrdup(STORE_NODE_LOCAL),
	    .endpoint = xasprintf("unix://%s", cfg->docker_socket),
	    .state = NODE_READY,
	    .last_contact_ms = now_ms,
	    .created_at_ms = 0,
	};
	node_labels_from_facts(&facts, &n.labels);
	*ret = n;
	return 0;
}
