/* loadclient.c: the benchmark's load generator (issue 8). N threads, each
 * with its own libcurl easy handle (so its own keep-alive connection), POST
 * one JSON-RPC tools/call body to the MCP endpoint again and again, time
 * every call, and count errors (transport failure, HTTP status >= 400, a
 * JSON-RPC error, isError, or an answer without the --expect text). Prints
 * one JSON object on stdout: calls, errors, elapsed_ms, calls_per_s and
 * latency percentiles in ms. Stateless requests (no Mcp-Session-Id), as
 * ChatGPT sends them (DESIGN.md, MCP surface).
 *
 * usage: loadclient --url URL --body JSON [--threads N] [--calls N]
 *                   [--warmup N] [--expect TEXT] [--timeout-ms N]
 *                   [--token-file PATH]
 * --token-file: send "Authorization: Bearer <the file's token>" (serve's
 * STATE_DIR/token; read from a file so it never shows in a process list).
 * --calls is the total over all threads; --warmup calls per thread are not
 * counted. Exit status 0 when it ran (errors are in the JSON), 2 on usage. */
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

struct options {
	const char *url;
	const char *body;
	const char *expect;
	int threads;
	long calls;
	int warmup;
	long timeout_ms;
	char auth_header[128]; /* "Authorization: Bearer …", "" = none */
};

struct answer {
	char *data;
	size_t len, cap;
};

struct worker {
	const struct options *o;
	long calls;         /* to make */
	double *latency_ms; /* calls entries */
	long done;
	long errors;
	char first_error[256];
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

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	const struct options *o = w->o;
	CURL *curl = curl_easy_init();
	if (!curl) {
		w->errors = w->calls;
		snprintf(w->first_error, sizeof(w->first_error), "curl_easy_init failed");
		return NULL;
	}
	struct curl_slist *headers = NULL;
	headers = curl_slist_append(headers, "Content-Type: application/json");
	headers = curl_slist_append(headers, "Accept: application/json, text/event-stream");
	headers = curl_slist_append(headers, "MCP-Protocol-Version: 2025-06-18");
	if (o->auth_header[0])
		headers = curl_slist_append(headers, o->auth_header);
	struct answer a = {0};
	curl_easy_setopt(curl, CURLOPT_URL, o->url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, o->body);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, o->timeout_ms);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_TCP_NODELAY, 1L);
	for (long i = -(long)o->warmup; i < w->calls; i++) {
		a.len = 0;
		if (a.data)
			a.data[0] = '\0';
		double t0 = now_ms();
		CURLcode rc = curl_easy_perform(curl);
		double dt = now_ms() - t0;
		long status = 0;
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		if (i < 0)
			continue;
		w->latency_ms[w->done++] = dt;
		const char *why = judge(rc, status, &a, o->expect);
		if (why) {
			if (!w->errors++)
				snprintf(w->first_error, sizeof(w->first_error), "%s (HTTP %ld): %.160s", why, status,
				         a.data ? a.data : "");
		}
	}
	free(a.data);
	curl_slist_free_all(headers);
	curl_easy_cleanup(curl);
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
	                "[--expect TEXT] [--timeout-ms N] [--token-file PATH]\n");
	return 2;
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
			o.url = v;
		else if (!strcmp(k, "--body"))
			o.body = v;
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
			char token[80] = "";
			FILE *f = fopen(v, "r");
			if (!f || !fgets(token, sizeof(token), f)) {
				fprintf(stderr, "loadclient: cannot read the token file '%s'\n", v);
				if (f)
					fclose(f);
				return 2;
			}
			fclose(f);
			token[strcspn(token, "\r\n")] = '\0';
			snprintf(o.auth_header, sizeof(o.auth_header), "Authorization: Bearer %s", token);
		} else
			return usage();
	}
	if (!o.url || !o.body || o.threads < 1 || o.threads > 256 || o.calls < 1 || o.warmup < 0)
		return usage();
	curl_global_init(CURL_GLOBAL_DEFAULT);

	struct worker *w = calloc((size_t)o.threads, sizeof(*w));
	pthread_t *th = calloc((size_t)o.threads, sizeof(*th));
	if (!w || !th)
		return 1;
	for (int t = 0; t < o.threads; t++) {
		w[t].o = &o;
		w[t].calls = o.calls / o.threads + (t < o.calls % o.threads);
		w[t].latency_ms = calloc((size_t)w[t].calls + 1, sizeof(double));
		if (!w[t].latency_ms)
			return 1;
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

	long n = 0, errors = 0;
	const char *first_error = NULL;
	for (int t = 0; t < o.threads; t++) {
		n += w[t].done;
		errors += w[t].errors;
		if (!first_error && w[t].errors)
			first_error = w[t].first_error;
	}
	double *all = calloc((size_t)n + 1, sizeof(double));
	double sum = 0, busy = 0;
	long k = 0;
	for (int t = 0; t < o.threads; t++) {
		double tb = 0;
		for (long i = 0; i < w[t].done; i++) {
			all[k++] = w[t].latency_ms[i];
			sum += w[t].latency_ms[i];
			tb += w[t].latency_ms[i];
		}
		if (tb > busy)
			busy = tb;
	}
	qsort(all, (size_t)n, sizeof(double), cmp_double);

	struct json_object *out = json_object_new_object();
	json_object_object_add(out, "threads", json_object_new_int(o.threads));
	json_object_object_add(out, "calls", json_object_new_int64(n));
	json_object_object_add(out, "errors", json_object_new_int64(errors));
	json_object_object_add(out, "elapsed_ms", json_object_new_double(elapsed));
	/* Throughput over the slowest thread's counted time (warm-up excluded). */
	json_object_object_add(out, "calls_per_s", json_object_new_double(busy > 0 ? n * 1000.0 / busy : 0));
	json_object_object_add(out, "mean_ms", json_object_new_double(n ? sum / n : 0));
	json_object_object_add(out, "min_ms", json_object_new_double(n ? all[0] : 0));
	json_object_object_add(out, "p50_ms", json_object_new_double(percentile(all, n, 50)));
	json_object_object_add(out, "p90_ms", json_object_new_double(percentile(all, n, 90)));
	json_object_object_add(out, "p99_ms", json_object_new_double(percentile(all, n, 99)));
	json_object_object_add(out, "max_ms", json_object_new_double(n ? all[n - 1] : 0));
	if (first_error)
		json_object_object_add(out, "first_error", json_object_new_string(first_error));
	puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
	json_object_put(out);

	for (int t = 0; t < o.threads; t++)
		free(w[t].latency_ms);
	free(all);
	free(w);
	free(th);
	curl_global_cleanup();
	return 0;
}
