/* health.c: the health loop of issue 28 ("Health and failure"): every
 * NODE_HEALTH_INTERVAL_MS serve asks each node's engine GET /_ping (all
 * nodes at once, each bounded by NODE_HEALTH_PING_MS), feeds the answers to
 * policy_node_health_step, and writes what changed: a node that stopped
 * answering becomes down (since the first missed answer), one that answers
 * again ready (a drained node stays draining), and the labels and last
 * contact from GET /info now and then. Calls on a sandbox ask
 * node_health_answering before they wait on an engine that is gone; the
 * owner's callback hears of every node that went down or came back. Node
 * 'local' is not probed here: this machine's engine has its own checks. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "node.h"

#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/log.h"
#include "../base/periodic.h"
#include "../base/xalloc.h"
#include "../policy/policy.h"

/* One node as the loop keeps it; touched by its probe thread during a
 * pass and under h->lock otherwise. */
struct health_entry {
	char *name, *endpoint, *ca, *cert, *key; /* owned copies of the row's */
	struct docker_engine *engine;            /* owned; NULL until it first opens */
	struct policy_node_health health;
	enum node_state row_state;     /* the registry's, as last read or written */
	int64_t labels_at_ms;          /* when GET /info was last read (monotonic) */
	int64_t contact_written_at_ms; /* when last_contact was last written (monotonic) */
	int seen;                      /* still a row at this pass */
	/* This pass's probe, filled by its thread. */
	int answered, have_labels;
	struct node_labels labels;
	struct cp_error *why; /* owned: why it did not answer */
};

struct node_health {
	struct store *store; /* borrowed */
	node_health_event_fn on_event;
	void *event_ctx;
	pthread_mutex_t lock;
	struct health_entry **entries;
	size_t n;
	struct periodic *loop;
};

static void entry_free(struct health_entry *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->endpoint);
	free(e->ca);
	free(e->cert);
	free(e->key);
	docker_engine_free(e->engine);
	node_labels_clear(&e->labels);
	cp_error_free(e->why);
	free(e);
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* A new entry for row r: presumed answering unless the row says down (a
 * node left down by an earlier serve stays down until it answers). */
static struct health_entry *entry_new(const struct node_record *r)
{
	struct health_entry *e = xcalloc(1, sizeof(*e));
	e->name = xstrdup(r->name);
	e->endpoint = xstrdup(r->endpoint);
	e->ca = r->tls_ca ? xstrdup(r->tls_ca) : NULL;
	e->cert = r->tls_cert ? xstrdup(r->tls_cert) : NULL;
	e->key = r->tls_key ? xstrdup(r->tls_key) : NULL;
	e->row_state = r->state;
	e->health =
	    (struct policy_node_health){.answering = r->state != NODE_DOWN, .last_contact_ms = r->last_contact_ms};
	if (r->state == NODE_DOWN) {
		e->health.failures = POLICY_NODE_DOWN_AFTER;
		e->health.down_since_ms = e->health.first_miss_ms = r->last_contact_ms;
	}
	return e;
}

/* Brings the entries in line with the registry's rows: new rows get an
 * entry, rows gone lose theirs, a row whose endpoint or files changed (a
 * node removed and added again under its name) starts afresh. */
static void sync_rows(struct node_health *h, const struct node_record *rows, size_t n)
{
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n; i++)
		h->entries[i]->seen = 0;
	for (size_t r = 0; r < n; r++) {
		struct health_entry *e = NULL;
		size_t i;
		for (i = 0; i < h->n; i++)
			if (!strcmp(h->entries[i]->name, rows[r].name))
				break;
		if (i < h->n) {
			e = h->entries[i];
			if (!same_str(e->endpoint, rows[r].endpoint) || !same_str(e->ca, rows[r].tls_ca) ||
			    !same_str(e->cert, rows[r].tls_cert) || !same_str(e->key, rows[r].tls_key)) {
				entry_free(e);
				e = h->entries[i] = entry_new(&rows[r]);
			}
			e->row_state = rows[r].state; /* drain and resume come from the CLI */
		} else {
			h->entries = xrealloc(h->entries, (h->n + 1) * sizeof(*h->entries));
			e = h->entries[h->n++] = entry_new(&rows[r]);
		}
		e->seen = 1;
	}
	size_t kept = 0;
	for (size_t i = 0; i < h->n; i++) {
		if (h->entries[i]->seen)
			h->entries[kept++] = h->entries[i];
		else
			entry_free(h->entries[i]);
	}
	h->n = kept;
	pthread_mutex_unlock(&h->lock);
}

/* One node's probe, on its own thread: opens the engine when it has none,
 * asks GET /_ping, and GET /info when the labels are due. */
static void *probe(void *arg)
{
	struct health_entry *e = arg;
	e->answered = e->have_labels = 0;
	cp_error_free(e->why);
	e->why = NULL;
	if (!e->engine) {
		struct docker_tls_files tls = {.ca = e->ca, .cert = e->cert, .key = e->key};
		if (docker_engine_new_tls(e->endpoint, &tls, &e->engine, &e->why) < 0)
			return NULL;
	}
	if (docker_engine_ping(e->engine, NODE_HEALTH_PING_MS, &e->why) < 0)
		return NULL;
	e->answered = 1;
	int64_t now = clock_monotonic_ms();
	if (!e->health.answering || !e->labels_at_ms || now - e->labels_at_ms >= NODE_HEALTH_LABELS_MS) {
		struct docker_engine_facts facts = {0};
		struct cp_error *ferr = NULL;
		if (docker_engine_facts(e->engine, &facts, &ferr) == 0) {
			node_labels_clear(&e->labels);
			node_labels_from_facts(&facts, &e->labels);
			e->have_labels = 1;
			e->labels_at_ms = now;
		}
		docker_engine_facts_clear(&facts);
		cp_error_free(ferr);
	}
	return NULL;
}

/* Writes what one probe changed and tells the owner. Runs on the loop's
 * thread after every probe of the pass ended. */
static void settle(struct node_health *h, struct health_entry *e, int64_t now_ms)
{
	pthread_mutex_lock(&h->lock);
	enum policy_node_health_event ev = policy_node_health_step(&e->health, e->answered, now_ms);
	int64_t down_since = e->health.down_since_ms;
	enum node_state before = e->row_state;
	enum node_state after = node_state_from_policy(policy_node_state_after(node_state_to_policy(before), ev));
	pthread_mutex_unlock(&h->lock);
	_cleanup_error_ struct cp_error *err = NULL;
	if (after != before) {
		if (store_node_set_state(h->store, e->name, after, NULL, &err) < 0) {
			log_warn("node", "record node '%s' as %s: %s", e->name, node_state_to_string(after),
			         err->message);
			cp_error_free(TAKE_PTR(err));
		} else {
			pthread_mutex_lock(&h->lock);
			e->row_state = after;
			pthread_mutex_unlock(&h->lock);
		}
	}
	int64_t mono = clock_monotonic_ms();
	if (e->answered && (e->have_labels || ev == POLICY_NODE_HEALTH_BACK || !e->contact_written_at_ms ||
	                    mono - e->contact_written_at_ms >= NODE_HEALTH_CONTACT_MS)) {
		if (store_node_set_contact(h->store, e->name, &e->labels, now_ms, &err) < 0) {
			log_warn("node", "record the contact with node '%s': %s", e->name, err->message);
			cp_error_free(TAKE_PTR(err));
		} else {
			e->contact_written_at_ms = mono;
		}
	}
	if (ev == POLICY_NODE_HEALTH_DOWN)
		log_warn("node",
		         "node '%s' (%s) has not answered for %lld ms (%s); its sandboxes answer "
		         "UNAVAILABLE and new sandboxes go to other nodes until it answers again",
		         e->name, e->endpoint, (long long)(now_ms - down_since),
		         e->why ? e->why->message : "no answer");
	else if (ev == POLICY_NODE_HEALTH_BACK)
		log_info("node", "node '%s' (%s) answers again", e->name, e->endpoint);
	if (ev != POLICY_NODE_HEALTH_SAME && h->on_event)
		h->on_event(h->event_ctx, e->name, ev);
}

/* Reads the node rows and syncs the entries with them; -1 (logged) when
 * the registry cannot be read. */
static int read_rows(struct node_health *h)
{
	struct node_record *rows = NULL;
	size_t n = 0;
	_cleanup_error_ struct cp_error *err = NULL;
	if (store_node_list(h->store, &rows, &n, &err) < 0) {
		log_warn("node", "list the nodes for their health: %s", err->message);
		return -1;
	}
	sync_rows(h, rows, n);
	for (size_t i = 0; i < n; i++)
		node_record_clear(&rows[i]);
	free(rows);
	return 0;
}

/* One pass: the rows, every probe at once, then what they changed. */
static long pass(void *ctx)
{
	struct node_health *h = ctx;
	if (read_rows(h) < 0)
		return -1;
	/* The entries are only added or removed here, on this thread: the
	 * array is stable until the pass ends. */
	pthread_mutex_lock(&h->lock);
	size_t m = h->n;
	struct health_entry **entries = NULL;
	if (m) {
		entries = xcalloc(m, sizeof(*entries));
		memcpy(entries, h->entries, m * sizeof(*entries));
	}
	pthread_mutex_unlock(&h->lock);
	pthread_t *threads = m ? xcalloc(m, sizeof(*threads)) : NULL;
	int *started = m ? xcalloc(m, sizeof(*started)) : NULL;
	for (size_t i = 0; i < m; i++)
		started[i] = pthread_create(&threads[i], NULL, probe, entries[i]) == 0;
	for (size_t i = 0; i < m; i++) {
		if (started[i])
			pthread_join(threads[i], NULL);
		else
			probe(entries[i]); /* no thread to spare: in line */
	}
	int64_t now = clock_now_ms();
	for (size_t i = 0; i < m; i++)
		settle(h, entries[i], now);
	free(started);
	free(threads);
	free(entries);
	return -1;
}

int node_health_start(struct store *store, node_health_event_fn on_event, void *event_ctx, struct node_health **ret)
{
	struct node_health *h = xcalloc(1, sizeof(*h));
	h->store = store;
	h->on_event = on_event;
	h->event_ctx = event_ctx;
	pthread_mutex_init(&h->lock, NULL);
	read_rows(h); /* rows left down are down before the first pass ends */
	h->loop = periodic_start("node health", 0, NODE_HEALTH_INTERVAL_MS, pass, h);
	if (!h->loop) {
		for (size_t i = 0; i < h->n; i++)
			entry_free(h->entries[i]);
		free(h->entries);
		pthread_mutex_destroy(&h->lock);
		free(h);
		*ret = NULL;
		return -1;
	}
	*ret = h;
	return 0;
}

void node_health_stop(struct node_health *h)
{
	if (!h)
		return;
	periodic_stop(h->loop);
	for (size_t i = 0; i < h->n; i++)
		entry_free(h->entries[i]);
	free(h->entries);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

int node_health_answering(struct node_health *h, const char *node, int64_t *ret_down_since_ms)
{
	if (ret_down_since_ms)
		*ret_down_since_ms = 0;
	if (!h || !node || !strcmp(node, STORE_NODE_LOCAL))
		return 1;
	int answering = 1;
	pthread_mutex_lock(&h->lock);
	for (size_t i = 0; i < h->n; i++) {
		if (strcmp(h->entries[i]->name, node))
			continue;
		answering = h->entries[i]->health.answering;
		if (!answering && ret_down_since_ms)
			*ret_down_since_ms = h->entries[i]->health.down_since_ms;
		break;
	}
	pthread_mutex_unlock(&h->lock);
	return answering;
}
