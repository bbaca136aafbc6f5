/* sessmeta.c: the per-session metadata files beside the logs (sessmeta.h).
 * Owns their format (one JSON object, written whole and renamed into place)
 * and reading them back. Everything in the log directory can be changed by
 * the sandbox's own commands (they run as root), so a file is trusted for
 * nothing but a listing: bounded size, every field type-checked, a name
 * that must match its session id. Knows nothing of processes. */
#include "sessmeta.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "utf8.h"
#include "xalloc.h"
#include "xjson.h"

#define SUFFIX ".json"

void sessmeta_clear(struct sessmeta *m)
{
	if (!m)
		return;
	free(m->command);
	m->command = NULL;
}

static bool id_valid(const char *id, size_t len)
{
	if (len == 0 || len > SESSMETA_ID_MAX || id[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
		      c == '-' || c == '.'))
			return false;
	}
	return true;
}

static json_object *to_json(const struct sessmeta *m)
{
	json_object *o = xjson_object();
	const char *cmd = m->command ? m->command : "";
	size_t len = strlen(cmd);
	if (len > SESSMETA_COMMAND_MAX)
		len = SESSMETA_COMMAND_MAX - utf8_incomplete_suffix((const unsigned char *)cmd, SESSMETA_COMMAND_MAX);
	size_t safe_len = 0;
	char *safe = utf8_sanitize((const unsigned char *)cmd, len, &safe_len);
	xjson_add(o, "session_id", xjson_string(m->id));
	xjson_add(o, "command", xjson_string_len(safe, safe_len));
	free(safe);
	xjson_add(o, "started_at_ms", xjson_int64(m->started_at_ms));
	xjson_add(o, "pid", xjson_int64(m->pid));
	xjson_add(o, "interactive", xjson_bool(m->interactive));
	if (m->hidden)
		xjson_add(o, "hidden", xjson_bool(true));
	xjson_add(o, "tty", xjson_bool(m->tty));
	xjson_add(o, "delivered", xjson_int64((int64_t)m->delivered));
	xjson_add(o, "acked", xjson_int64((int64_t)m->acked));
	if (m->dropped)
		xjson_add(o, "dropped", xjson_int64((int64_t)m->dropped));
	if (m->ended) {
		xjson_add(o, "status", xjson_string(m->status));
		xjson_add(o, "exit_code", xjson_int64(m->exit_code));
		if (m->term_sig)
			xjson_add(o, "signal_number", xjson_int64(m->term_sig));
		xjson_add(o, "ended_at_ms", xjson_int64(m->ended_at_ms));
	}
	return o;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int sessmeta_write(const char *dir, const struct sessmeta *m)
{
	if (!id_valid(m->id, strlen(m->id)))
		return -EINVAL;
	json_object *o = to_json(m);
	const char *text = xjson_text(o, JSON_C_TO_STRING_PLAIN);
	char *tmp = xasprintf("%s/.%s" SUFFIX ".tmp", dir, m->id), *path = xasprintf("%s/%s" SUFFIX, dir, m->id);
	int r;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, text, strlen(text));
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
out:
	free(tmp);
	free(path);
	json_object_put(o);
	return r;
}

int sessmeta_remove(const char *dir, const char *id)
{
	if (!id_valid(id, strlen(id)))
		return -EINVAL;
	char *path = xasprintf("%s/%s" SUFFIX, dir, id);
	int r = unlink(path) < 0 ? -errno : 0;
	free(path);
	return r;
}

/* ---- reading back ---- */

static bool get_int64(json_object *o, const char *key, bool required, int64_t min, int64_t *ret)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v))
		return !required;
	if (!json_object_is_type(v, json_type_int))
		return false;
	int64_t x = json_object_get_int64(v);
	if (x < min)
		return false;
	*ret = x;
	return true;
}

static bool get_bool(json_object *o, const char *key, bool *ret)
{
	json_object *v;
	if (!json_object_object_get_ex(o, key, &v))
		return true;
	if (!json_object_is_type(v, json_type_boolean))
		return false;
	*ret = json_object_get_boolean(v);
	return true;
}

/* Fills *m from o when o is a record of session id; false otherwise. */
static bool from_json(json_object *o, const char *id, struct sessmeta *m)
{
	json_object *v;
	memset(m, 0, sizeof *m);
	if (!json_object_is_type(o, json_type_object) || !json_object_object_get_ex(o, "session_id", &v) ||
	    !json_object_is_type(v, json_type_string) || strcmp(json_object_get_string(v), id) != 0)
		return false;
	snprintf(m->id, sizeof m->id, "%s", id);
	int64_t started = 0, pid = 0, delivered = 0, acked = -1, dropped = 0, exit_code = 0, sig = 0, ended_at = 0;
	if (!get_int64(o, "started_at_ms", true, 0, &started) || !get_int64(o, "pid", false, 0, &pid) ||
	    !get_int64(o, "delivered", false, 0, &delivered) || !get_int64(o, "acked", false, 0, &acked) ||
	    !get_int64(o, "dropped", false, 0, &dropped) || !get_bool(o, "interactive", &m->interactive) ||
	    !get_bool(o, "tty", &m->tty) || !get_bool(o, "hidden", &m->hidden) || pid > INT32_MAX)
		return false;
	m->started_at_ms = started;
	m->pid = (int)pid;
	m->delivered = (uint64_t)delivered;
	/* A record without "acked" predates acknowledgements: all delivered. */
	m->acked = acked < 0 || acked > delivered ? (uint64_t)delivered : (uint64_t)acked;
	m->dropped = (uint64_t)dropped;
	if (json_object_object_get_ex(o, "status", &v)) {
		const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
		if (strcmp(s, "exited") != 0 && strcmp(s, "killed") != 0 && strcmp(s, "timed_out") != 0)
			return false;
		if (!get_int64(o, "exit_code", true, 0, &exit_code) || exit_code > 255 + 128 ||
		    !get_int64(o, "signal_number", false, 0, &sig) || sig > 128 ||
		    !get_int64(o, "ended_at_ms", false, 0, &ended_at))
			return false;
		m->ended = true;
		snprintf(m->status, sizeof m->status, "%s", s);
		m->exit_code = (int)exit_code;
		m->term_sig = (int)sig;
		m->ended_at_ms = ended_at;
	}
	const char *cmd = "";
	if (json_object_object_get_ex(o, "command", &v)) {
		if (!json_object_is_type(v, json_type_string))
			return false;
		cmd = json_object_get_string(v);
	}
	size_t len = strlen(cmd);
	if (len > SESSMETA_COMMAND_MAX)
		len = SESSMETA_COMMAND_MAX - utf8_incomplete_suffix((const unsigned char *)cmd, SESSMETA_COMMAND_MAX);
	m->command = xstrndup(cmd, len);
	return true;
}

/* Reads <dirfd>/name (at most SESSMETA_FILE_MAX bytes) into a record. */
static bool load_one(int dirfd, const char *name, const char *id, struct sessmeta *m)
{
	memset(m, 0, sizeof *m);
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return false;
	char *buf = xmalloc(SESSMETA_FILE_MAX + 1);
	size_t len = 0;
	bool ok = true;
	while (ok && len <= SESSMETA_FILE_MAX) {
		ssize_t n = read(fd, buf + len, SESSMETA_FILE_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ok = false;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (!ok || len == 0 || len > SESSMETA_FILE_MAX) {
		free(buf);
		return false;
	}
	json_tokener *tok = json_tokener_new();
	if (!tok) /* json-c fails only to allocate */
		cp_oom();
	json_object *o = json_tokener_parse_ex(tok, buf, (int)len);
	ok = o && json_tokener_get_error(tok) == json_tokener_success && from_json(o, id, m);
	if (!ok)
		sessmeta_clear(m);
	json_tokener_free(tok);
	json_object_put(o);
	free(buf);
	return ok;
}

static int by_start(const void *a, const void *b)
{
	const struct sessmeta *x = a, *y = b;
	if (x->started_at_ms != y->started_at_ms)
		return x->started_at_ms < y->started_at_ms ? -1 : 1;
	return strcmp(x->id, y->id);
}

int sessmeta_load_all(const char *dir, size_t max, struct sessmeta **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	if (max == 0)
		return 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	/* At most max records are held while reading: a full table swaps its
	 * oldest for a newer one, so memory stays bounded however many files
	 * the sandbox's own commands leave in the directory. */
	struct sessmeta *all = xcalloc(max, sizeof *all);
	size_t n = 0, scanned = 0;
	struct sessmeta m;
	struct dirent *e;
	while ((e = readdir(d)) && scanned++ < SESSMETA_SCAN_MAX) {
		size_t len = strlen(e->d_name);
		if (len <= strlen(SUFFIX) || strcmp(e->d_name + len - strlen(SUFFIX), SUFFIX) != 0)
			continue;
		char id[SESSMETA_ID_MAX + 1];
		size_t id_len = len - strlen(SUFFIX);
		if (!id_valid(e->d_name, id_len))
			continue;
		memcpy(id, e->d_name, id_len);
		id[id_len] = '\0';
		if (!load_one(dirfd(d), e->d_name, id, &m))
			continue;
		if (n < max) {
			all[n++] = m;
			continue;
		}
		size_t oldest = 0;
		for (size_t i = 1; i < n; i++)
			if (by_start(&all[i], &all[oldest]) < 0)
				oldest = i;
		if (by_start(&m, &all[oldest]) > 0) {
			sessmeta_clear(&all[oldest]);
			all[oldest] = m;
		} else {
			sessmeta_clear(&m);
		}
	}
	closedir(d);
	qsort(all, n, sizeof *all, by_start);
	if (n == 0) {
		free(all);
		all = NULL;
	}
	*ret = all;
	*ret_n = n;
	return 0;
}
