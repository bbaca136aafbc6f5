/* loadclient.c: the benchmark's load generator (issue 8). N threads, each
 * with its own libcurl easy handle (so its own keep-alive connection), POST
 * one JSON-RPC tools/call body to the MCP endpoint again and again, time
 * every call, and count errors (transport failure, HTTP status >= 400, a
 * JSON-RPC error, isError, or an answer without the --expect text). Prints
 * one JSON object on stdout: calls, errors, elapsed_ms, calls_per_s and
 * latency percentiles in ms. Stateless requests (no Mcp-Session-Id), as
 * ChatGPT sends them (DESIGN.md, MCP surface).
 *
 * A/B mode (issue 27, `make bench BENCH_BASELINE=<commit>`): with --url2 and
 * --body2 each thread holds a second handle and alternates, one call at a
 * time, between the two endpoints (A then B, then B then A, so neither side
 * always goes first), so the machine's noise falls on both alike. The JSON
 * then also has "b": the same fields for the second endpoint; the top-level
 * fields are the first's.
 *
 * usage: loadclient --url URL --body JSON [--threads N] [--calls N]
 *                   [--warmup N] [--expect TEXT] [--timeout-ms N]
 *                   [--token-file PATH]
 *                   [--url2 URL --body2 JSON [--token-file2 PATH]]
 * --token-file: send "Authorization: Bearer <the file's token>" (serve's
 * STATE_DIR/token; read from a file so it never shows in a process list).
 * --calls is the total over all threads (per endpoint in A/B mode);
 * --warmup calls per thread are not counted. Exit status 0 when it ran
 * (errors are in the JSON), 2 on usage. */
#include <curl/curl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* An answer larger than this is cut (counted, not an error): the benchmark
 * reads 1 KiB files and short bash output. */
#define MAX_ANSWER_BYTES (4u * 1024 * 1024)

/* One endpoint: where to send which body, with which token. */
struct endpoint {
	const char *url;
	const char *body;
	char auth_header[128]; /* "Authorization: Bearer …", "" = none */
};

struct options {
	struct endpoint ep[2]; /* ep[1].url == NULL: one endpoint */
	const char *expect;
	int threads;
	long calls;
	int warmup;
	long timeout_ms;
};

struct answer {
	char *data;
	size_t len, cap;
};

/* What one thread measured against one endpoint. */
struct tally {
	double *latency_ms; /* calls entries */
	long done;
	long errors;
	char first_error[256];
};

struct worker {
	const struct options *o;
	long calls; /* to make, per endpoint */
	struct tally t[2];
};

/* One thread's connection to one endpoint. */
struct conn {
	CURL *curl;
	struct curl_slist *headers;
	struct answer a;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000.0 + ts.tv_nsec / 1e6;
}

static size_t on_data(char *ptr, size_t size, size_t n, void *userdata)
{
	struct answer *a = userdata;
	size_t len = size * n;
	if (a->len + len + 1 > a->cap) {
		size_t cap = a->cap ? a->cap : 8192;
		while (cap < a->len + len + 1 && cap < MAX_ANSWER_BYTES)
			cap *= 2;
		if (cap < a->len + len + 1)
			return len; /* cut: keep what fits */
		char *grown = realloc(a->data, cap);
		if (!grown)
			return 0;
		a->data = grown;
		a->cap = cap;
	}
	memcpy(a->data + a->len, ptr, len);
	a->len += len;
	a->data[a->len] = '\0';
	return len;
}

/* One call's verdict: NULL when it succeeded, else a short reason. */
static const char *judge(CURLcode rc, long status, const struct answer *a, const char *expect)
{
	if (rc != CURLE_OK)
		return curl_easy_strerror(rc);
	if (status >= 400)
		return "HTTP error status";
	if (!a->data)
		return "empty answer";
	if (strstr(a->data, "\"error\":{") || strstr(a->data, "\"error\": {"))
		return "JSON-RPC error";
	if (strstr(a->data, "\"isError\":true") || strstr(a->data, "\"isError\": true"))
		return "isError result";
	if (expect && !strstr(a->data, expect))
		return "answer lacks the expected text";
	return NULL;
}

static int conn_open(struct conn *c, const struct endpoint *ep, const struct options *o)
{
	*c = (struct conn){0};
	c->curl = curl_easy_init();
	if (!c->curl)
		return -1;
	c->headers = curl_slist_append(c->headers, "Content-Type: application/json");
	c->headers = curl_slist_append(c->headers, "Accept: application/json, text/event-stream");
	c->headers = curl_slist_append(c->headers, "MCP-Protocol-Version: 2025-06-18");
	if (ep->auth_header[0])
		c->headers = curl_slist_append(c->headers, ep->auth_header);
	curl_easy_setopt(c->curl, CURLOPT_URL, ep->url);
	curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, ep->body);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &c->a);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->curl, CURLOPT_TCP_NODELAY, 1L);
	return 0;
}

static void conn_close(struct conn *c)
{
	free(c->a.data);
	curl_slist_free_all(c->headers);
	if (c->curl)
		curl_easy_cleanup(c->curl);
}

/* One timed call on c; counted into t unless it is a warm-up call. */
static void conn_call(struct conn *c, struct tally *t, const char *expect, int counted)
{
	c->a.len = 0;
	if (c->a.data)
		c->a.data[0] = '\0';
	double t0 = now_ms();
	CURLcode rc = curl_easy_perform(c->curl);
	double dt = now_ms() - t0;
	long status = 0;
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (!counted)
		return;
	t->latency_ms[t->done++] = dt;
	const char *why = judge(rc, status, &c->a, expect);
	if (why && !t->errors++)
		snprintf(t->first_error, sizeof(t->first_error), "%s (HTTP %ld): %.160s", why, status,
		         c->a.data ? c->a.data : "");
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct options *o = w->o;
	int sides = o->ep[1].url ? 2 : 1;
	struct conn c[2] = {0};
	for (int s = 0; s < sides; s++) {
		if (conn_open(&c[s], &o->ep[s], o) < 0) {
			for (int k = 0; k < sides; k++) {
				w->t[k].errors = w->calls;
				snprintf(w->t[k].first_error, sizeof(w->t[k].first_error), "curl_easy_init failed");
			}
			for (int k = 0; k < s; k++)
				conn_close(&c[k]);
			return NULL;
		}
	}
	for (long i = -(long)o->warmup; i < w->calls; i++) {
		/* A/B: A first on even calls, B first on odd ones. */
		int first = sides == 2 && (i & 1);
		for (int k = 0; k < sides; k++) {
			int s = k ^ first;
			conn_call(&c[s], &w->t[s], o->expect, i >= 0);
		}
	}
	for (int s = 0; s < sides; s++)
		conn_close(&c[s]);
	return NULL;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* Nearest-rank percentile of sorted values. */
static double percentile(const double *sorted, long n, double p)
{
	if (n <= 0)
		return 0;
	long rank = (long)(p / 100.0 * n + 0.999999);
	if (rank < 1)
		rank = 1;
	if (rank > n)
		rank = n;
	return sorted[rank - 1];
}

static int usage(void)
{
	fprintf(stderr, "usage: loadclient --url URL --body JSON [--threads N] [--calls N] [--warmup N] "
	                "[--expect TEXT] [--timeout-ms N] [--token-file PATH] "
	                "[--url2 URL --body2 JSON [--token-file2 PATH]]\n");
	return 2;
}

/* "Authorization: Bearer <token>" from a token file into ep; -1 when unreadable. */
static int read_token(struct endpoint *ep, const char *file)
{
	char token[80] = "";
	FILE *f = fopen(file, "r");
	if (!f || !fgets(token, sizeof(token), f)) {
		fprintf(stderr, "loadclient: cannot read the token file '%s'\n", file);
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	token[strcspn(token, "\r\n")] = '\0';
	snprintf(ep->auth_header, sizeof(ep->auth_header), "Authorization: Bearer %s", token);
	return 0;
}

/* The statistics of one endpoint over every thread's tally t[side]. */
static struct json_object *summarize(const struct options *o, const struct worker *w, int side, double elapsed)
{
	long n = 0, errors = 0;
	const char *first_error = NULL;
	for (int t = 0; t < o->threads; t++) {
		n += w[t].t[side].done;
		errors += w[t].t[side].errors;
		if (!first_error && w[t].t[side].errors)
			first_error = w[t].t[side].first_error;
	}
	double *all = calloc((size_t)n + 1, sizeof(double));
	if (!all)
		abort();
	double sum = 0, busy = 0;
	long k = 0;
	for (int t = 0; t < o->threads; t++) {
		double tb = 0;
		for (long i = 0; i < w[t].t[side].done; i++) {
			all[k++] = w[t].t[side].latency_ms[i];
			sum += w[t].t[side].latency_ms[i];
			tb += w[t].t[side].latency_ms[i];
		}
		if (tb > busy)
			busy = tb;
	}
	qsort(all, (size_t)n, sizeof(double), cmp_double);

	struct json_object *out = json_object_new_object();
	json_object_object_add(out, "threads", json_object_new_int(o->threads));
	json_object_object_add(out, "calls", json_object_new_int64(n));
	json_object_object_add(out, "errors", json_object_new_int64(errors));
	json_object_object_add(out, "elapsed_ms", json_object_new_double(elapsed));
	/* Throughput over the slowest thread's counted time (warm-up excluded;
	 * in A/B mode, this endpoint's share of it). */
	json_object_object_add(out, "calls_per_s", json_object_new_double(busy > 0 ? n * 1000.0 / busy : 0));
	json_object_object_add(out, "mean_ms", json_object_new_double(n ? sum / n : 0));
	json_object_object_add(out, "min_ms", json_object_new_double(n ? all[0] : 0));
	json_object_object_add(out, "p50_ms", json_object_new_double(percentile(all, n, 50)));
	json_object_object_add(out, "p90_ms", json_object_new_double(percentile(all, n, 90)));
	json_object_object_add(out, "p99_ms", json_object_new_double(percentile(all, n, 99)));
	json_object_object_add(out, "max_ms", json_object_new_double(n ? all[n - 1] : 0));
	if (first_error)
		json_object_object_add(out, "first_error", json_object_new_string(first_error));
	free(all);
	return out;
}

int main(int argc, char **argv)
{
	struct options o = {.threads = 1, .calls = 500, .warmup = 5, .timeout_ms = 30000};
	for (int i = 1; i < argc; i++) {
		const char *k = argv[i];
		if (i + 1 >= argc)
			return usage();
		const char *v = argv[++i];
		if (!strcmp(k, "--url"))
			o.ep[0].url = v;
		else if (!strcmp(k, "--body"))
			o.ep[0].body = v;
		else if (!strcmp(k, "--url2"))
			o.ep[1].url = v;
		else if (!strcmp(k, "--body2"))
			o.ep[1].body = v;
		else if (!strcmp(k, "--expect"))
			o.expect = v;
		else if (!strcmp(k, "--threads"))
			o.threads = atoi(v);
		else if (!strcmp(k, "--calls"))
			o.calls = atol(v);
		else if (!strcmp(k, "--warmup"))
			o.warmup = atoi(v);
		else if (!strcmp(k, "--timeout-ms"))
			o.timeout_ms = atol(v);
		else if (!strcmp(k, "--token-file")) {
			if (read_token(&o.ep[0], v) < 0)
				return 2;
		} else if (!strcmp(k, "--token-file2")) {
			if (read_token(&o.ep[1], v) < 0)
				return 2;
		} else
			return usage();
	}
	if (!o.ep[0].url || !o.ep[0].body || !o.ep[1].url != !o.ep[1].body || o.threads < 1 || o.threads > 256 ||
	    o.calls < 1 || o.warmup < 0)
		return usage();
	int sides = o.ep[1].url ? 2 : 1;
	curl_global_init(CURL_GLOBAL_DEFAULT);

	struct worker *w = calloc((size_t)o.threads, sizeof(*w));
	pthread_t *th = calloc((size_t)o.threads, sizeof(*th));
	if (!w || !th)
		return 1;
	for (int t = 0; t < o.threads; t++) {
		w[t].o = &o;
		w[t].calls = o.calls / o.threads + (t < o.calls % o.threads);
		for (int s = 0; s < sides; s++) {
			w[t].t[s].latency_ms = calloc((size_t)w[t].calls + 1, sizeof(double));
			if (!w[t].t[s].latency_ms)
				return 1;
		}
	}
	/* Warm-up happens inside each thread; the clock covers everything, so
	 * calls_per_s is measured over the counted calls' wall time only
	 * approximately when --warmup is large. Keep it small. */
	double t0 = now_ms();
	for (int t = 0; t < o.threads; t++)
		pthread_create(&th[t], NULL, worker_main, &w[t]);
	for (int t = 0; t < o.threads; t++)
		pthread_join(th[t], NULL);
	double elapsed = now_ms() - t0;

	struct json_object *out = summarize(&o, w, 0, elapsed);
	if (sides == 2)
		json_object_object_add(out, "b", summarize(&o, w, 1, elapsed));
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
	json_object_put(out);

	for (int t = 0; t < o.threads; t++)
		for (int s = 0; s < sides; s++)
			free(w[t].t[s].latency_ms);
	free(w);
	free(th);
	curl_global_cleanup();
	return 0;
}
