/* node.h: other machines' Docker Engines as nodes (issue 28), as the
 * operator's commands see them: adding one (its TLS files copied under
 * STATE_DIR/nodes/<name>/, the engine asked _ping and /info over mutual
 * TLS, the row written), removing one with its files, and this machine's
 * engine shown as node 'local'. Uses config/, store/, docker/ and policy/;
 * the CLI calls it with or without serve running (the registry is shared). */
#ifndef CP_NODE_H
#define CP_NODE_H

#include <stdint.h>

#include "../base/error.h"
#include "../config/config.h"
#include "../docker/docker.h"
#include "../policy/policy.h"
#include "../store/store.h"

/* The names of a node's TLS files in its directory. */
#define NODE_TLS_CA "ca.pem"
#define NODE_TLS_CERT "cert.pem"
#define NODE_TLS_KEY "key.pem"
/* A TLS file larger than this is not a certificate or key: refused. */
#define NODE_TLS_FILE_MAX (64 * 1024)

/* Copies the three files of src (paths borrowed; each must be a regular
 * file of at most NODE_TLS_FILE_MAX bytes, read through a symbolic link if
 * it is one) into state_dir/nodes/<name>/ as NODE_TLS_CA, NODE_TLS_CERT and
 * NODE_TLS_KEY: the directories 0700 and this user's, made or checked
 * without following a symbolic link (a link there is refused, never
 * written through), each file created new (O_EXCL, O_NOFOLLOW) 0600 and
 * synced. A directory left by an add that was interrupted is emptied of
 * those three names first. name must have passed policy_node_name_check.
 * On success ret_ca, ret_cert and ret_key (caller frees each) are the
 * copies' paths. On failure nothing of name's directory is left;
 * INVALID_ARGUMENT naming the option (--tls-ca, ...) for a source that is
 * missing, not a regular file or too big; UNAVAILABLE for the state
 * directory. Never reads a file's bytes into a message or a log. Blocks on
 * the file system only. */
int node_files_install(const char *state_dir, const char *name, const struct docker_tls_files *src, char **ret_ca,
                       char **ret_cert, char **ret_key, struct cp_error **err);

/* Removes state_dir/nodes/<name>/ and the three files in it, without
 * following a symbolic link; what is already gone is not an error.
 * UNAVAILABLE naming the path when something cannot be removed. */
int node_files_remove(const char *state_dir, const char *name, struct cp_error **err);

/* `chat2sbx node add`: checks name (policy_node_name_check) and endpoint
 * (docker_endpoint_parse: tcp://HOST:PORT with all three TLS files, plain
 * TCP refused), refuses a name or endpoint taken (CONFLICT), copies the
 * files (node_files_install), opens the engine over mutual TLS with the
 * copies, asks GET /_ping and GET /info, and inserts the row (state ready,
 * the labels from /info, last contact now_ms, and host_roots: NULL or the
 * ':'-separated directories of the node under which direct workspaces may
 * be asked for, each policy_node_path_shape's, else INVALID_ARGUMENT).
 * *ret (caller clears) is the row. Any failure leaves no row and no files, with the engine's reason
 * (docker_engine_new_tls's codes: DENIED for a certificate either side
 * refused, UNAVAILABLE for an engine that does not answer). Blocks up to
 * about 25 s (three engine calls). */
int node_add(const struct config *cfg, struct store *store, const char *name, const char *endpoint,
             const struct docker_tls_files *tls, const char *host_roots, int64_t now_ms, struct node_record *ret,
             struct cp_error **err);

/* `chat2sbx node remove`: deletes the row (store_node_delete: CONFLICT while
 * a sandbox on it holds a container) and then its TLS files. *ret (may be
 * NULL; caller clears) is the row removed. A row deleted whose files could
 * not be removed fails with that (UNAVAILABLE) and the row stays deleted. */
int node_remove(const struct config *cfg, struct store *store, const char *name, struct node_record *ret,
                struct cp_error **err);

/* Node 'local', this machine's engine, as a record (no registry row): name
 * "local", endpoint "unix://<socket>", no TLS files, state ready, the
 * labels from its GET /info and last contact now_ms. *ret (caller clears).
 * UNAVAILABLE when the engine does not answer (the record is then not
 * set). Blocks at most about 15 s. */
int node_local_record(const struct config *cfg, int64_t now_ms, struct node_record *ret, struct cp_error **err);

/* The labels of an engine's facts: runtimes, memory, CPUs and version
 * copied into *ret (caller clears), kvm -1 (not known: /info does not
 * tell). Pure. */
void node_labels_from_facts(const struct docker_engine_facts *facts, struct node_labels *ret);

/* A node row's state as placement and the health state machine name it
 * (policy.h), and back: ready, draining and down map one to one. Pure. */
enum policy_node_state node_state_to_policy(enum node_state s);
enum node_state node_state_from_policy(enum policy_node_state s);

/* ---- the health loop (health.c; issue 28, "Health and failure") ---- */

/* How often each node's engine is asked GET /_ping (ms), how long one ping
 * may take (ms), how often GET /info refreshes its labels (ms), and how
 * often an answering node's last contact is written (ms). A node is down
 * after POLICY_NODE_DOWN_AFTER misses in a row: within about
 * NODE_HEALTH_INTERVAL_MS * 2 + NODE_HEALTH_PING_MS of its last answer. */
#define NODE_HEALTH_INTERVAL_MS 2000L
#define NODE_HEALTH_PING_MS 2000L
#define NODE_HEALTH_LABELS_MS 30000L
#define NODE_HEALTH_CONTACT_MS 10000L

struct node_health;
/* Called on the loop's thread when node (borrowed for the call) went down
 * (POLICY_NODE_HEALTH_DOWN) or answers again (POLICY_NODE_HEALTH_BACK),
 * after the registry's state was written. Must not call node_health_stop. */
typedef void (*node_health_event_fn)(void *ctx, const char *node, enum policy_node_health_event event);

/* Reads the node rows (a row left down by an earlier serve counts as not
 * answering from here until its first answer), then starts the loop on its
 * own thread: a pass at once and then every NODE_HEALTH_INTERVAL_MS. Each
 * pass reads the node rows (store borrowed
 * until node_health_stop), pings every node's engine at once over mutual
 * TLS (one short-lived thread each), and writes a changed state
 * (policy_node_state_after: ready <-> down; draining stays) and, for a
 * node that answered, its last contact (at most every
 * NODE_HEALTH_CONTACT_MS) and its labels from GET /info (every
 * NODE_HEALTH_LABELS_MS and when it comes back). on_event
 * (may be NULL) and event_ctx are borrowed until node_health_stop. *ret is
 * the caller's (node_health_stop); -1 (and a log line) when the thread
 * cannot start, *ret then NULL. Never logs or returns a TLS file's bytes. */
int node_health_start(struct store *store, node_health_event_fn on_event, void *event_ctx, struct node_health **ret);
/* Stops the loop (a pass under way ends first: at most about
 * NODE_HEALTH_PING_MS plus GET /info's 10 s) and frees h. Accepts NULL. */
void node_health_stop(struct node_health *h);
/* 1 when node answers as far as the loop knows (always for 'local', for a
 * node it has not probed yet and for a NULL h); 0 when it is down, with
 * *ret_down_since_ms (may be NULL; wall clock ms) the first missed answer.
 * Thread-safe; never blocks on an engine. */
int node_health_answering(struct node_health *h, const char *node, int64_t *ret_down_since_ms);

#endif
