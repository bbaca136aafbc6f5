/* channel.c: the control plane's end of one helper channel. Owns the attach
 * stream's fd, a reader thread (demultiplex → split lines → hand each answer
 * to the caller waiting on its id) and the table of calls in flight. Moves
 * JSON-RPC frames only, and never decides anything about a sandbox (that is
 * tools/ and policy/) nor reads a tool's fields: whether an answer carries a
 * delivery range is asked of the channel's struct helper_receipts (supplied
 * by the tool that owns the range), and the channel only tells the helper
 * whether that answer reached a caller (ack) or not (nack). The one thing it
 * adds to params is its attach_id in hello (proto.h). */
#include "helper.h"

#include <errno.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

#include "../../template/helper/proto.h"
#include "../base/buf.h"
#include "../base/cancel.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/fdio.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../base/xjson.h"
#include "../docker/docker.h"

/* A helper log line longer than this is logged in pieces. */
#define HELPER_MAX_LOG_LINE (16u * 1024)
/* A line buffer grown past this by one large answer is released afterwards. */
#define HELPER_KEEP_LINE_BUFFER (1u * 1024 * 1024)
/* Acknowledgements waiting for the wire, at most; beyond, the oldest is
 * dropped (for bash, proto.h: a lost ack repeats output after a
 * re-attach; a lost nack loses it until then). */
#define HELPER_ACK_QUEUE_MAX 256
/* A request line up to this many bytes is copied to go out in one write. */
#define HELPER_SMALL_REQUEST 4096
/* How long one acknowledgement may wait for the helper to read it (ms). */
#define HELPER_ACK_SEND_MS 2000

/* One notification waiting to be written (proto.h): an acknowledgement
 * (receipts->ack_method), its refusal (receipts->nack_method), or the
 * attach that opens every channel. */
enum ack_kind { ACK_NACK, ACK_ACK, ACK_ATTACH };
struct ack {
	enum ack_kind kind;
	char *key; /* receipts->key_name's value; NULL for ACK_ATTACH */
	int64_t start, end;
};

/* One call in flight. Lives on the caller's stack; linked in ch->pending
 * only while the caller holds or waits on ch->lock, so the reader never sees
 * a dangling entry. */
struct pending {
	int64_t id;
	pthread_cond_t cond; /* CLOCK_MONOTONIC */
	int done;
	struct json_object *response; /* owned once done */
	struct pending *next;
};

struct helper_channel {
	int fd;
	char *name; /* the sandbox id, shown as "sandbox '<name>'" */
	/* What answers carry a range to acknowledge (borrowed; NULL = none). */
	const struct helper_receipts *receipts;
	pthread_t reader;
	int refs; /* atomic */

	pthread_mutex_t lock; /* guards pending, next_id, alive, close_reason, writing */
	struct pending *pending;
	int64_t next_id;
	int alive;
	char *close_reason; /* set once, freed with the channel */
	/* One request on the wire at a time. A flag and a CLOCK_MONOTONIC
	 * condition rather than a second mutex, so waiting for the wire has the
	 * call's deadline too. */
	int writing;
	pthread_cond_t write_cond;
	/* Acknowledgements to write, oldest first (guarded by lock); written by
	 * whoever holds the wire (writing) before it lets go. */
	struct ack acks[HELPER_ACK_QUEUE_MAX];
	size_t nacks;
	char attach_id[33]; /* sent in hello: tells the helper a new attachment */

	/* The direct channel (proto.h, channel.connect; direct.c): once set,
	 * requests and acknowledgements go over this connected socket instead
	 * of the attach stream, and a second reader thread reads its answers.
	 * -1: none. Set once, under lock while holding the wire. */
	int direct_fd;
	int direct_started; /* direct_reader runs (joined at destroy) */
	pthread_t direct_reader;

	/* Reader-thread state, touched by nothing else. */
	struct docker_demux demux;
	struct cp_buf out_line;
	struct cp_buf err_line;
	int out_overflow; /* 1: a frame over PROTO_MAX_REPLY_FRAME */
	/* The direct reader thread's own line state. */
	struct cp_buf direct_line;
	int direct_overflow;
};

/* Marks the channel dead (first reason wins), wakes every waiting caller and
 * shuts the socket down so the reader's recv returns. Safe from any thread. */
static void __attribute__((format(printf, 2, 3))) channel_kill(struct helper_channel *ch, const char *fmt, ...)
{
	pthread_mutex_lock(&ch->lock);
	if (!ch->alive) {
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	ch->alive = 0;
	va_list ap;
	va_start(ap, fmt);
	ch->close_reason = xvasprintf(fmt, ap);
	va_end(ap);
	for (struct pending *p = ch->pending; p; p = p->next)
		pthread_cond_broadcast(&p->cond);
	pthread_cond_broadcast(&ch->write_cond);
	log_debug("helper", "sandbox '%s': channel closed: %s", ch->name,
	          ch->close_reason ? ch->close_reason : "out of memory");
	int direct = ch->direct_fd;
	pthread_mutex_unlock(&ch->lock);
	shutdown(ch->fd, SHUT_RDWR);
	if (direct >= 0)
		shutdown(direct, SHUT_RDWR);
}

/* Where requests and acknowledgements go: the direct socket once there is
 * one, else the attach stream. Read by the wire's holder (writing), which
 * direct_fd is only ever set under. */
static int wire_fd(const struct helper_channel *ch)
{
	return ch->direct_fd >= 0 ? ch->direct_fd : ch->fd;
}

static const char *reason_of(struct helper_channel *ch)
{
	return ch->close_reason ? ch->close_reason : "the channel is closed";
}

/* The delivery range an answer msg carries, as ch->receipts reads it from
 * its result: 1 with the borrowed key and [start, end), else 0. */
static int delivery_range(struct helper_channel *ch, struct json_object *msg, const char **ret_key, int64_t *ret_start,
                          int64_t *ret_end)
{
	struct json_object *res = NULL;
	if (!ch->receipts || !json_object_object_get_ex(msg, "result", &res) ||
	    !json_object_is_type(res, json_type_object))
		return 0;
	return ch->receipts->range(res, ret_key, ret_start, ret_end) == 1 && *ret_start >= 0 && *ret_end > *ret_start;
}

/* Queues an acknowledgement (ch->lock held). A range continuing the last
 * queued one of the same kind and key extends it. */
static void ack_push_locked(struct helper_channel *ch, enum ack_kind kind, const char *key, int64_t start, int64_t end)
{
	if (ch->nacks && key) {
		struct ack *last = &ch->acks[ch->nacks - 1];
		if (last->kind == kind && last->key && last->end == start && strcmp(last->key, key) == 0) {
			last->end = end;
			return;
		}
	}
	char *copy = key ? xstrdup(key) : NULL;
	if (ch->nacks == HELPER_ACK_QUEUE_MAX) {
		log_debug("helper", "sandbox '%s': acknowledgement queue full; dropped the oldest", ch->name);
		free(ch->acks[0].key);
		memmove(ch->acks, ch->acks + 1, (HELPER_ACK_QUEUE_MAX - 1) * sizeof(ch->acks[0]));
		ch->nacks--;
	}
	ch->acks[ch->nacks++] = (struct ack){.kind = kind, .key = copy, .start = start, .end = end};
}

/* Writes every queued acknowledgement. The caller owns the wire (writing)
 * and not the lock; returns with the lock held and the queue empty (or the
 * channel dead), so the caller can let go of the wire before anything new
 * is queued unseen. A write that fails before its first byte drops the
 * acknowledgement; one cut mid-line kills the channel. */
static void acks_drain_locked_return(struct helper_channel *ch)
{
	pthread_mutex_lock(&ch->lock);
	while (ch->nacks && ch->alive) {
		struct ack a = ch->acks[0];
		memmove(ch->acks, ch->acks + 1, (ch->nacks - 1) * sizeof(ch->acks[0]));
		ch->nacks--;
		pthread_mutex_unlock(&ch->lock);
		_cleanup_json_ struct json_object *n = xjson_object();
		struct json_object *params = xjson_object();
		const char *method = "attach";
		if (a.kind == ACK_ATTACH) {
			xjson_add(params, "attach_id", xjson_string(ch->attach_id));
		} else {
			/* Queued only when receipts were given (dispatch_frame). */
			method = a.kind == ACK_ACK ? ch->receipts->ack_method : ch->receipts->nack_method;
			xjson_add(params, ch->receipts->key_name, xjson_string(a.key));
			xjson_add(params, "start", xjson_int64(a.start));
			xjson_add(params, "end", xjson_int64(a.end));
		}
		xjson_add(n, "jsonrpc", xjson_string("2.0"));
		xjson_add(n, "method", xjson_string(method));
		xjson_add(n, "params", params);
		size_t len = 0, sent = 0;
		const char *text = json_object_to_json_string_length(n, JSON_C_TO_STRING_PLAIN, &len);
		int64_t deadline = clock_monotonic_ms() + HELPER_ACK_SEND_MS;
		int r = text ? fdio_send_all(wire_fd(ch), text, len, deadline, &sent) : -1;
		if (r == 0)
			r = fdio_send_all(wire_fd(ch), "\n", 1, deadline, &sent);
		if (r < 0 && sent > 0)
			channel_kill(ch, "an acknowledgement was cut off mid-line after %zu bytes", sent);
		else if (r < 0)
			log_debug("helper", "sandbox '%s': dropped a '%s' notification", ch->name, method);
		free(a.key);
		pthread_mutex_lock(&ch->lock);
	}
}

/* Writes the queued acknowledgements now unless a request is on the wire
 * (its writer sends them before letting go). Never blocks on another
 * writer; a write blocks at most HELPER_ACK_SEND_MS per acknowledgement. */
static void acks_flush(struct helper_channel *ch)
{
	pthread_mutex_lock(&ch->lock);
	if (ch->writing || !ch->alive || !ch->nacks) {
		pthread_mutex_unlock(&ch->lock);
		return;
	}
	ch->writing = 1;
	pthread_mutex_unlock(&ch->lock);
	acks_drain_locked_return(ch);
	ch->writing = 0;
	pthread_cond_signal(&ch->write_cond);
	pthread_mutex_unlock(&ch->lock);
}

/* Hands one complete stdout line (an answer) to the call waiting on its id. */
static void dispatch_frame(struct helper_channel *ch, const char *line, size_t len)
{
	while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
		len--;
	if (!len)
		return;
	json_tokener *tok = json_tokener_new();
	if (!tok)
		return;
	struct json_object *msg = json_tokener_parse_ex(tok, line, (int)len);
	int complete =
	    msg && json_tokener_get_error(tok) == json_tokener_success && json_tokener_get_parse_end(tok) == len;
	json_tokener_free(tok);
	struct json_object *idv = NULL;
	if (!complete || !json_object_object_get_ex(msg, "id", &idv) || !json_object_is_type(idv, json_type_int)) {
		log_debug("helper", "sandbox '%s': dropped a %zu-byte line that is not an answer", ch->name, len);
		json_object_put(msg);
		return;
	}
	int64_t id = json_object_get_int64(idv);
	const char *key = NULL;
	int64_t start = 0, end = 0;
	int range = delivery_range(ch, msg, &key, &start, &end);
	pthread_mutex_lock(&ch->lock);
	struct pending *p = ch->pending;
	while (p && (p->id != id || p->done))
		p = p->next;
	/* Matched under the lock, the caller takes the answer for sure
	 * (wait_answer looks at done first): it was delivered. */
	if (range)
		ack_push_locked(ch, p ? ACK_ACK : ACK_NACK, key, start, end);
	if (p) {
		p->response = TAKE_PTR(msg);
		p->done = 1;
		pthread_cond_signal(&p->cond);
	}
	pthread_mutex_unlock(&ch->lock);
	if (range)
		acks_flush(ch);
	if (msg) {
		/* Its caller timed out and left: the answer has nobody to go to. */
		log_debug("helper", "sandbox '%s': dropped a late answer to request %lld", ch->name, (long long)id);
		json_object_put(msg);
	}
}

static void flush_log_line(struct helper_channel *ch)
{
	if (ch->err_line.len)
		log_debug("helper", "sandbox '%s': %.*s", ch->name, (int)ch->err_line.len, ch->err_line.data);
	cp_buf_consume(&ch->err_line, ch->err_line.len);
}

/* The helper's stderr: its own log, line by line at debug. */
static void on_stderr(struct helper_channel *ch, const char *data, size_t len)
{
	if (!log_enabled(LOG_LEVEL_DEBUG, "helper"))
		return;
	while (len) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		size_t room = HELPER_MAX_LOG_LINE - ch->err_line.len;
		if (take >= room) {
			cp_buf_append(&ch->err_line, data, room);
			flush_log_line(ch);
			data += room;
			len -= room;
			continue;
		}
		cp_buf_append(&ch->err_line, data, take);
		if (!nl)
			return;
		flush_log_line(ch);
		data += take + 1;
		len -= take + 1;
	}
}

/* Splits answers, one per line, out of data (len bytes) into line (the
 * piece of an unfinished line) and dispatches each. A line over
 * PROTO_MAX_REPLY_FRAME sets *overflow and drops the rest. */
static void lines_feed(struct helper_channel *ch, struct cp_buf *line, int *overflow, const char *data, size_t len)
{
	while (len && !*overflow) {
		const char *nl = memchr(data, '\n', len);
		size_t take = nl ? (size_t)(nl - data) : len;
		if (take > PROTO_MAX_REPLY_FRAME - line->len) {
			*overflow = 1;
			cp_buf_free(line);
			return;
		}
		if (nl && line->len == 0) {
			dispatch_frame(ch, data, take); /* whole line in this piece: no copy */
		} else {
			if (cp_buf_append(line, data, take) < 0) { /* only past its max */
				*overflow = 1;
				cp_buf_free(line);
				return;
			}
			if (!nl)
				return;
			dispatch_frame(ch, line->data, line->len);
			if (line->cap > HELPER_KEEP_LINE_BUFFER)
				cp_buf_free(line);
			else
				cp_buf_consume(line, line->len);
		}
		data += take + 1;
		len -= take + 1;
	}
}

/* Demultiplexer callback: stdout carries answers, one per line. */
static void on_stream(void *userdata, enum docker_stream stream, const char *data, size_t len)
{
	struct helper_channel *ch = userdata;
	if (stream == DOCKER_STREAM_STDERR) {
		on_stderr(ch, data, len);
		return;
	}
	if (stream == DOCKER_STREAM_STDOUT)
		lines_feed(ch, &ch->out_line, &ch->out_overflow, data, len);
}

/* The direct socket's reader: plain lines, no multiplexing. Its end ends
 * the channel, as the attach stream's does: the helper drops it only when
 * another control plane attached or it stopped. */
static void *direct_main(void *arg)
{
	struct helper_channel *ch = arg;
	char buf[64 * 1024];
	for (;;) {
		ssize_t n = recv(ch->direct_fd, buf, sizeof(buf), 0);
		if (n == 0) {
			channel_kill(ch, "the helper's direct channel ended (the container stopped, or another "
			                 "control plane attached to it)");
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			channel_kill(ch, "read from the helper's direct channel: %s", strerror(errno));
			break;
		}
		lines_feed(ch, &ch->direct_line, &ch->direct_overflow, buf, (size_t)n);
		if (ch->direct_overflow) {
			channel_kill(ch, "the helper sent a frame over the %u MiB limit", PROTO_MAX_REPLY_FRAME >> 20);
			break;
		}
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct helper_channel *ch = arg;
	char buf[64 * 1024];
	for (;;) {
		ssize_t n = recv(ch->fd, buf, sizeof(buf), 0);
		if (n == 0) {
			channel_kill(ch, "the helper's stream ended (the container stopped or the engine closed the "
			                 "attach connection)");
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			channel_kill(ch, "read from the helper: %s", strerror(errno));
			break;
		}
		if (docker_demux_feed(&ch->demux, buf, (size_t)n) < 0) {
			channel_kill(ch, "the attach stream is corrupt (unknown stream type %u)", ch->demux.header[0]);
			break;
		}
		if (ch->out_overflow) {
			channel_kill(ch, "the helper sent a frame over the %u MiB limit", PROTO_MAX_REPLY_FRAME >> 20);
			break;
		}
	}
	flush_log_line(ch);
	return NULL;
}

static void channel_destroy(struct helper_channel *ch)
{
	channel_kill(ch, "the channel was closed");
	pthread_join(ch->reader, NULL);
	if (ch->direct_started)
		pthread_join(ch->direct_reader, NULL);
	close(ch->fd);
	if (ch->direct_fd >= 0)
		close(ch->direct_fd);
	cp_buf_free(&ch->direct_line);
	cp_buf_free(&ch->out_line);
	cp_buf_free(&ch->err_line);
	pthread_mutex_destroy(&ch->lock);
	pthread_cond_destroy(&ch->write_cond);
	for (size_t i = 0; i < ch->nacks; i++)
		free(ch->acks[i].key);
	free(ch->close_reason);
	free(ch->name);
	free(ch);
}

/* 32 hex digits naming this attachment (hello's attach_id, proto.h). */
static void attach_id_new(char out[33])
{
	unsigned char raw[16];
	if (getrandom(raw, sizeof(raw), GRND_NONBLOCK) != (ssize_t)sizeof(raw)) {
		/* No entropy yet: the clock and the address tell attachments apart. */
		static int counter;
		uint64_t mix = (uint64_t)clock_monotonic_ms() ^ ((uint64_t)(uintptr_t)out << 16) ^
		               (uint64_t)__atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
		for (size_t i = 0; i < sizeof(raw); i++)
			raw[i] = (unsigned char)(mix >> (8 * (i % 8))) ^ (unsigned char)(i * 37);
	}
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < sizeof(raw); i++) {
		out[2 * i] = hex[raw[i] >> 4];
		out[2 * i + 1] = hex[raw[i] & 15];
	}
	out[32] = '\0';
}

/* Takes ownership of fd (closed here even on failure) and starts the reader
 * thread (helper.h). name is the sandbox id ("sbx_…"), copied; messages say
 * "sandbox '<name>'". *ret_channel holds one reference. Errors:
 * INVALID_ARGUMENT for a bad fd, INTERNAL when the reader thread cannot be
 * started. Never blocks. */
int helper_channel_new(int fd, const char *name, const struct helper_receipts *receipts,
                       struct helper_channel **ret_channel, struct cp_error **err)
{
	_cleanup_close_ int owned = fd;
	if (fd < 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "open the helper channel: bad descriptor");
	if (!name)
		name = "?";
	struct helper_channel *ch = xcalloc(1, sizeof(*ch));
	ch->name = xstrdup(name);
	ch->receipts = receipts;
	pthread_mutex_init(&ch->lock, NULL);
	clock_cond_init(&ch->write_cond);
	cp_buf_init(&ch->out_line, PROTO_MAX_REPLY_FRAME);
	cp_buf_init(&ch->err_line, HELPER_MAX_LOG_LINE);
	cp_buf_init(&ch->direct_line, PROTO_MAX_REPLY_FRAME);
	ch->direct_fd = -1;
	docker_demux_init(&ch->demux, on_stream, ch);
	ch->alive = 1;
	attach_id_new(ch->attach_id);
	/* Ids start at a point of their own per attachment: an answer the
	 * helper wrote for an earlier attachment (buffered while nobody was
	 * attached) then matches no call of this one and is dropped (and
	 * nacked) instead of answering the wrong call. Below 2^40: exact in
	 * every JSON reader. */
	ch->next_id = 1 + (int64_t)(strtoull(ch->attach_id + 22, NULL, 16) & ((1ull << 40) - 1));
	ch->refs = 1;
	ch->fd = TAKE_FD(owned); /* the channel owns the stream from here */
	/* The first line on the stream: whoever attached (reconcile, a
	 * re-attach, a create), the helper learns a new control plane is there. */
	ack_push_locked(ch, ACK_ATTACH, NULL, 0, 0);
	int rc = pthread_create(&ch->reader, NULL, reader_main, ch);
	if (rc != 0) {
		close(ch->fd);
		pthread_mutex_destroy(&ch->lock);
		pthread_cond_destroy(&ch->write_cond);
		free(ch->name);
		free(ch);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, rc,
		                          "open the helper channel of sandbox '%s': start "
		                          "the reader thread",
		                          name);
	}
	acks_flush(ch);
	*ret_channel = ch;
	return 0;
}

/* Adds a reference; returns ch. Thread-safe. */
struct helper_channel *helper_channel_ref(struct helper_channel *ch)
{
	__atomic_add_fetch(&ch->refs, 1, __ATOMIC_RELAXED);
	return ch;
}

/* Drops a reference; the last one closes the stream, joins the reader and
 * frees. Accepts NULL. Blocks only for the join (the reader wakes at once
 * because the socket is shut down). */
void helper_channel_unref(struct helper_channel *ch)
{
	if (ch && __atomic_sub_fetch(&ch->refs, 1, __ATOMIC_ACQ_REL) == 0)
		channel_destroy(ch);
}

/* Closes the channel now (every pending call fails with UNAVAILABLE) and
 * drops the caller's reference; memory goes when the last reference does, so
 * calls holding their own reference fail cleanly instead of touching freed
 * memory. Accepts NULL. */
void helper_channel_free(struct helper_channel *ch)
{
	if (!ch)
		return;
	channel_kill(ch, "the channel was closed");
	helper_channel_unref(ch);
}

/* True while the stream is open (helper.h). Thread-safe; never blocks long. */
int helper_channel_alive(struct helper_channel *ch)
{
	pthread_mutex_lock(&ch->lock);
	int alive = ch->alive;
	pthread_mutex_unlock(&ch->lock);
	return alive;
}

/* Why the channel closed, NULL while alive. The string is set once and lives
 * as long as the channel, so the borrowed pointer stays valid while the
 * caller holds a reference. */
const char *helper_channel_close_reason(struct helper_channel *ch)
{
	pthread_mutex_lock(&ch->lock);
	const char *r = ch->alive ? NULL : reason_of(ch);
	pthread_mutex_unlock(&ch->lock);
	return r;
}

/* Moves ch's requests onto fd, a connected direct socket (helper.h). */
int helper_channel_direct_set(struct helper_channel *ch, int fd, struct cp_error **err)
{
	_cleanup_close_ int owned = fd;
	pthread_mutex_lock(&ch->lock);
	/* Every writer has a deadline, so the wire comes free. */
	while (ch->writing && ch->alive)
		pthread_cond_wait(&ch->write_cond, &ch->lock);
	int rc = 0;
	if (!ch->alive)
		rc = cp_error_set(err, CP_ERR_UNAVAILABLE, "the helper of sandbox '%s' is not answering: %s", ch->name,
		                  reason_of(ch));
	else if (ch->direct_fd >= 0)
		rc = cp_error_set(err, CP_ERR_CONFLICT, "sandbox '%s' already has a direct channel", ch->name);
	if (rc == 0) {
		ch->direct_fd = TAKE_FD(owned);
		int e = pthread_create(&ch->direct_reader, NULL, direct_main, ch);
		if (e != 0) {
			owned = ch->direct_fd;
			ch->direct_fd = -1;
			rc = cp_error_set_errno(err, CP_ERR_INTERNAL, e,
			                        "start the direct channel reader of sandbox '%s'", ch->name);
		} else {
			ch->direct_started = 1;
		}
	}
	pthread_mutex_unlock(&ch->lock);
	return rc;
}

/* Sends one request line; waits (until deadline) while another is on the wire. */
static int send_request(struct helper_channel *ch, int64_t id, const char *method, const char *text, size_t len,
                        int64_t deadline, struct cp_error **err)
{
	struct timespec abs = clock_monotonic_timespec(deadline);
	pthread_mutex_lock(&ch->lock);
	int rc = 0;
	while (ch->writing && ch->alive && rc != ETIMEDOUT)
		rc = pthread_cond_timedwait(&ch->write_cond, &ch->lock, &abs);
	if (!ch->alive) {
		cp_error_set(err, CP_ERR_UNAVAILABLE, "the helper of sandbox '%s' is not answering: %s", ch->name,
		             reason_of(ch));
		pthread_mutex_unlock(&ch->lock);
		return -1;
	}
	if (ch->writing) {
		pthread_mutex_unlock(&ch->lock);
		return cp_error_set(err, CP_ERR_TIMEOUT, "the helper of sandbox '%s' did not take '%s' in time",
		                    ch->name, method);
	}
	ch->writing = 1;
	pthread_mutex_unlock(&ch->lock);
	/* Acknowledgements queued before this request go first: an answer
	 * handed to a caller is acknowledged before anything that caller (or
	 * anyone after it) asks next. */
	acks_drain_locked_return(ch);
	pthread_mutex_unlock(&ch->lock);

	/* One write for a small request (the line and its newline), so the
	 * helper wakes once; a large one goes as it is, then the newline. */
	size_t sent = 0;
	char small[HELPER_SMALL_REQUEST + 1];
	int r;
	if (len <= HELPER_SMALL_REQUEST) {
		memcpy(small, text, len);
		small[len] = '\n';
		r = fdio_send_all(wire_fd(ch), small, len + 1, deadline, &sent);
	} else {
		r = fdio_send_all(wire_fd(ch), text, len, deadline, &sent);
		if (r == 0)
			r = fdio_send_all(wire_fd(ch), "\n", 1, deadline, &sent);
	}
	int saved = errno;

	if (r == 0)
		acks_drain_locked_return(ch);
	else
		pthread_mutex_lock(&ch->lock);
	ch->writing = 0;
	pthread_cond_signal(&ch->write_cond);
	pthread_mutex_unlock(&ch->lock);
	if (r == 0)
		return 0;
	if (saved == ETIMEDOUT && sent == 0)
		return cp_error_set(err, CP_ERR_TIMEOUT,
		                    "the helper of sandbox '%s' did not read request %lld ('%s') "
		                    "in time",
		                    ch->name, (long long)id, method);
	if (saved == ETIMEDOUT) {
		/* Half a line is on the wire: every later frame would be garbage. */
		channel_kill(ch, "request %lld ('%s') was cut off mid-line after %zu bytes", (long long)id, method,
		             sent);
		return cp_error_set(err, CP_ERR_TIMEOUT, "the helper of sandbox '%s' stopped reading during '%s'",
		                    ch->name, method);
	}
	channel_kill(ch, "write to the helper: %s", strerror(saved));
	/* The first reason wins: a close that caused the failed write names itself. */
	pthread_mutex_lock(&ch->lock);
	cp_error_set(err, CP_ERR_UNAVAILABLE, "the helper of sandbox '%s' is not answering: %s", ch->name,
	             reason_of(ch));
	pthread_mutex_unlock(&ch->lock);
	return -1;
}

/* The helper's data.code ("NOT_FOUND") → our code; INTERNAL when unknown. */
static enum cp_error_code code_from_name(const char *name)
{
	for (int c = CP_ERR_INVALID_ARGUMENT; name && c <= CP_ERR_INTERNAL; c++)
		if (strcmp(name, cp_error_code_name((enum cp_error_code)c)) == 0)
			return (enum cp_error_code)c;
	return CP_ERR_INTERNAL;
}

/* Turns a JSON-RPC response into *ret_result or *err (proto.h). */
static int take_response(struct helper_channel *ch, const char *method, struct json_object *resp,
                         struct json_object **ret_result, struct cp_error **err)
{
	struct json_object *error = NULL, *result = NULL, *v = NULL, *data = NULL;
	if (json_object_object_get_ex(resp, "error", &error) && json_object_is_type(error, json_type_object)) {
		const char *message = "the helper reported an error without a message";
		if (json_object_object_get_ex(error, "message", &v) && json_object_is_type(v, json_type_string))
			message = json_object_get_string(v);
		enum cp_error_code code = CP_ERR_INTERNAL;
		if (json_object_object_get_ex(error, "data", &data) && json_object_object_get_ex(data, "code", &v) &&
		    json_object_is_type(v, json_type_string))
			code = code_from_name(json_object_get_string(v));
		return cp_error_set(err, code, "%s", message);
	}
	if (!json_object_object_get_ex(resp, "result", &result))
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "the helper of sandbox '%s' answered '%s' with neither "
		                    "result nor error",
		                    ch->name, method);
	/* Every result in proto.h is an object; anything else is a broken or
	 * forged answer and must never reach code that adds members to it. */
	if (!json_object_is_type(result, json_type_object))
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "the helper of sandbox '%s' answered '%s' with a malformed result "
		                    "(not an object)",
		                    ch->name, method);
	*ret_result = json_object_get(result); /* the caller's own reference */
	return 0;
}

/* A cancel wakes the caller waiting on one pending call. */
struct cancel_wake {
	struct helper_channel *ch;
	struct pending *p;
};

static void on_cancel(void *arg)
{
	struct cancel_wake *cw = arg;
	pthread_mutex_lock(&cw->ch->lock);
	pthread_cond_broadcast(&cw->p->cond);
	pthread_mutex_unlock(&cw->ch->lock);
}

/* Waits on p until answered, the channel dies, cancel fires or deadline
 * passes; unlinks p. Returns the response (owned) or NULL with *err set. */
static struct json_object *wait_answer(struct helper_channel *ch, struct pending *p, const char *method,
                                       long timeout_ms, int64_t deadline, struct cp_cancel *cancel,
                                       struct cp_error **err)
{
	struct timespec abs = clock_monotonic_timespec(deadline);
	struct cancel_wake cw = {ch, p};
	struct cp_cancel_waiter waiter = {.wake = on_cancel, .arg = &cw};
	/* Registered before the lock is taken: the token's lock comes first. */
	cp_cancel_watch(cancel, &waiter);
	pthread_mutex_lock(&ch->lock);
	while (!p->done && ch->alive && !cp_cancel_fired(cancel))
		if (pthread_cond_timedwait(&p->cond, &ch->lock, &abs) == ETIMEDOUT)
			break;
	struct json_object *resp = p->done ? TAKE_PTR(p->response) : NULL;
	if (!resp && !ch->alive)
		cp_error_set(err, CP_ERR_UNAVAILABLE, "the helper of sandbox '%s' is not answering: %s", ch->name,
		             reason_of(ch));
	else if (!resp && cp_cancel_fired(cancel))
		cp_error_set(err, CP_ERR_UNAVAILABLE,
		             "the wait for '%s' on sandbox '%s' was cancelled by the client; the helper goes on "
		             "with the request",
		             method, ch->name);
	else if (!resp)
		cp_error_set(err, CP_ERR_TIMEOUT, "the helper of sandbox '%s' did not answer '%s' within %ld ms",
		             ch->name, method, timeout_ms);
	for (struct pending **pp = &ch->pending; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	pthread_mutex_unlock(&ch->lock);
	cp_cancel_unwatch(cancel, &waiter);
	return resp;
}

/* One JSON-RPC call (helper.h has the contract; the frame format is
 * template/helper/proto.h). method and params are borrowed. A request over
 * PROTO_MAX_FRAME fails with LIMIT before anything is sent. timeout_ms (> 0,
 * else INVALID_ARGUMENT) bounds the whole call, write included. */
int helper_channel_call(struct helper_channel *ch, const char *method, struct json_object *params, long timeout_ms,
                        struct json_object **ret_result, struct cp_error **err)
{
	return helper_channel_call_cancel(ch, method, params, timeout_ms, NULL, ret_result, err);
}

/* helper_channel_call whose wait for the answer also ends when cancel fires
 * (helper.h). The request is written whole first (a half-written line would
 * corrupt the channel), so a cancel ends only the wait. */
int helper_channel_call_cancel(struct helper_channel *ch, const char *method, struct json_object *params,
                               long timeout_ms, struct cp_cancel *cancel, struct json_object **ret_result,
                               struct cp_error **err)
{
	if (!ch || !method || !*method || timeout_ms <= 0 || !ret_result)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "call the helper: a method and a positive timeout "
		                    "are required");
	int64_t deadline = clock_monotonic_ms() + timeout_ms;

	struct pending p = {0};
	clock_cond_init(&p.cond);

	pthread_mutex_lock(&ch->lock);
	if (!ch->alive) {
		cp_error_set(err, CP_ERR_UNAVAILABLE, "the helper of sandbox '%s' is not answering: %s", ch->name,
		             reason_of(ch));
		pthread_mutex_unlock(&ch->lock);
		pthread_cond_destroy(&p.cond);
		return -1;
	}
	p.id = ch->next_id++;
	p.next = ch->pending;
	ch->pending = &p;
	pthread_mutex_unlock(&ch->lock);

	/* hello names this attachment, so the helper can tell a new control
	 * plane (rewind unacknowledged output) from a repeated hello. */
	_cleanup_json_ struct json_object *hello = NULL;
	if (strcmp(method, "hello") == 0) {
		hello = xjson_object();
		if (params) {
			json_object_object_foreach(params, k, val) xjson_add(hello, k, json_object_get(val));
		}
		if (!json_object_object_get_ex(hello, "attach_id", NULL))
			xjson_add(hello, "attach_id", xjson_string(ch->attach_id));
		params = hello;
	}
	_cleanup_json_ struct json_object *req = xjson_object();
	xjson_add(req, "jsonrpc", xjson_string("2.0"));
	xjson_add(req, "id", xjson_int64(p.id));
	xjson_add(req, "method", xjson_string(method));
	xjson_add(req, "params", params ? json_object_get(params) : xjson_object());
	/* PLAIN escapes every newline inside strings: one request, one line. */
	const char *text = xjson_text(req, JSON_C_TO_STRING_PLAIN);
	size_t len = strlen(text);

	int rc = 0;
	if (len + 1 > PROTO_MAX_FRAME)
		rc = cp_error_set(err, CP_ERR_LIMIT,
		                  "send '%s' to sandbox '%s': the request is %zu bytes, over the helper's %u MiB "
		                  "frame limit",
		                  method, ch->name, len, PROTO_MAX_FRAME >> 20);
	else
		rc = send_request(ch, p.id, method, text, len, deadline, err);

	_cleanup_json_ struct json_object *resp = NULL;
	if (rc < 0) {
		/* Unlink without waiting; the channel may have died meanwhile. */
		pthread_mutex_lock(&ch->lock);
		for (struct pending **pp = &ch->pending; *pp; pp = &(*pp)->next)
			if (*pp == &p) {
				*pp = p.next;
				break;
			}
		pthread_mutex_unlock(&ch->lock);
		json_object_put(p.response);
	} else {
		resp = wait_answer(ch, &p, method, timeout_ms, deadline, cancel, err);
		rc = resp ? take_response(ch, method, resp, ret_result, err) : -1;
	}
	pthread_cond_destroy(&p.cond);
	return rc;
}
