/* config_file.c: readers for .env and config.yaml into key/value lists.
 * YAML is parsed by libyaml (never by hand); .env is line-based. No
 * interpretation of values happens here (config.c validates them). */
#include "config_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "../base/cleanup.h"
#include "../base/xalloc.h"

static void add(struct config_file *f, const char *k, size_t klen, const char *v, size_t vlen)
{
	f->keys = xrealloc(f->keys, (f->n + 1) * sizeof(char *));
	f->values = xrealloc(f->values, (f->n + 1) * sizeof(char *));
	f->keys[f->n] = xstrndup(k, klen);
	f->values[f->n] = xstrndup(v, vlen);
	f->n++;
}

int config_file_check_trusted(const struct stat *st, const char *path, struct cp_error **err)
{
	if (!S_ISREG(st->st_mode))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "refuse settings file '%s': it is not a regular file; remove it or replace it "
		                    "with a regular file",
		                    path);
	if (st->st_uid != geteuid() && st->st_uid != 0)
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "refuse settings file '%s': it is owned by uid %u, not by you (uid %u) or root, "
		                    "so someone else could set security settings; run chat2sbx from another "
		                    "directory, or read the file and, if it is yours to keep, 'chown %u %s'",
		                    path, (unsigned)st->st_uid, (unsigned)geteuid(), (unsigned)geteuid(), path);
	if (st->st_mode & (S_IWGRP | S_IWOTH))
		return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
		                    "refuse settings file '%s': it is group- or world-writable (mode %03o), so "
		                    "someone else could set security settings; check it, then run 'chmod go-w %s'",
		                    path, (unsigned)(st->st_mode & 0777), path);
	return 0;
}

/* Opens path for reading after checking that it may carry settings
 * (config_file_check_trusted on the opened descriptor, so the file checked is
 * the file read). Returns 0 with *ret_fp NULL when the file does not exist.
 * O_NONBLOCK keeps a FIFO planted under the name from blocking start-up. */
static int open_trusted(const char *path, FILE **ret_fp, struct cp_error **err)
{
	*ret_fp = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		return cp_error_set_errno(err, CP_ERR_INVALID_ARGUMENT, errno, "read '%s'", path);
	}
	struct stat st;
	if (fstat(fd, &st) < 0) {
		int e = errno;
		close(fd);
		return cp_error_set_errno(err, CP_ERR_INVALID_ARGUMENT, e, "read '%s'", path);
	}
	if (config_file_check_trusted(&st, path, err) < 0) {
		close(fd);
		return -1;
	}
	FILE *fp = fdopen(fd, "r");
	if (!fp) {
		close(fd);
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read '%s'", path);
	}
	*ret_fp = fp;
	return 0;
}

int config_file_read_dotenv(const char *path, struct config_file *ret, struct cp_error **err)
{
	FILE *fp = NULL;
	if (open_trusted(path, &fp, err) < 0)
		return -1;
	if (!fp)
		return 0;
	char line[8192];
	int lineno = 0;
	while (fgets(line, sizeof(line), fp)) {
		lineno++;
		char *p = line;
		size_t len = strcspn(p, "\r\n");
		p[len] = '\0';
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		if (strncmp(p, "export ", 7) == 0)
			p += 7;
		char *eq = strchr(p, '=');
		if (!eq) {
			fclose(fp);
			return cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                    "read '%s': line %d is not KEY=VALUE; fix or remove it", path, lineno);
		}
		char *key_end = eq;
		while (key_end > p && (key_end[-1] == ' ' || key_end[-1] == '\t'))
			key_end--;
		char *v = eq + 1;
		size_t vlen = strlen(v);
		if (vlen >= 2 && (v[0] == '"' || v[0] == '\'') && v[vlen - 1] == v[0]) {
			v++;
			vlen -= 2;
		}
		add(ret, p, (size_t)(key_end - p), v, vlen);
	}
	fclose(fp);
	return 0;
}

int config_file_read_yaml(const char *path, struct config_file *ret, struct cp_error **err)
{
	FILE *fp = NULL;
	if (open_trusted(path, &fp, err) < 0)
		return -1;
	if (!fp)
		return 0;
	yaml_parser_t parser;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, fp);
	int depth = 0, r = 0, done = 0;
	char *key = NULL;
	while (!done) {
		yaml_event_t ev;
		if (!yaml_parser_parse(&parser, &ev)) {
			r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT, "read '%s': %s at line %zu", path,
			                 parser.problem ? parser.problem : "malformed YAML",
			                 parser.problem_mark.line + 1);
			break;
		}
		switch (ev.type) {
		case YAML_MAPPING_START_EVENT:
			if (++depth > 1)
				r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                 "read '%s': key '%s' at line %zu must be a scalar, not a mapping",
				                 path, key ? key : "?", ev.start_mark.line + 1);
			break;
		case YAML_SEQUENCE_START_EVENT:
			r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
			                 "read '%s': key '%s' at line %zu must be a scalar, not a list", path,
			                 key ? key : "?", ev.start_mark.line + 1);
			break;
		case YAML_MAPPING_END_EVENT: depth--; break;
		case YAML_SCALAR_EVENT:
			if (depth != 1) {
				r = cp_error_set(err, CP_ERR_INVALID_ARGUMENT,
				                 "read '%s': the document must be a mapping of settings (line %zu)",
				                 path, ev.start_mark.line + 1);
			} else if (!key) {
				key = xstrndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
			} else {
				add(ret, key, strlen(key), (const char *)ev.data.scalar.value, ev.data.scalar.length);
				free(key);
				key = NULL;
			}
			break;
		case YAML_STREAM_END_EVENT: done = 1; break;
		default: break;
		}
		yaml_event_delete(&ev);
		if (r < 0)
			break;
	}
	free(key);
	yaml_parser_delete(&parser);
	fclose(fp);
	return r;
}

const char *config_file_get(const struct config_file *f, const char *key)
{
	for (size_t i = f->n; i > 0; i--)
		if (strcmp(f->keys[i - 1], key) == 0)
			return f->values[i - 1];
	return NULL;
}

void config_file_clear(struct config_file *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->keys[i]);
		free(f->values[i]);
	}
	free(f->keys);
	free(f->values);
	f->keys = f->values = NULL;
	f->n = 0;
}
