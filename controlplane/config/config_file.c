/* config_file.c: readers for .env and config.yaml into key/value lists.
 * YAML is parsed by libyaml (never by hand); .env is line-based. No
 * interpretation of values happens here (config.c validates them). */
#include "config_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "../base/cleanup.h"

static int add(struct config_file *f, const char *k, size_t klen, const char *v, size_t vlen)
{
	char **keys = realloc(f->keys, (f->n + 1) * sizeof(char *));
	if (!keys)
		return -1;
	f->keys = keys;
	char **values = realloc(f->values, (f->n + 1) * sizeof(char *));
	if (!values)
		return -1;
	f->values = values;
	f->keys[f->n] = strndup(k, klen);
	f->values[f->n] = strndup(v, vlen);
	if (!f->keys[f->n] || !f->values[f->n]) {
		free(f->keys[f->n]);
		free(f->values[f->n]);
		return -1;
	}
	f->n++;
	return 0;
}

int config_file_read_dotenv(const char *path, struct config_file *ret, struct cp_error **err)
{
	FILE *fp = fopen(path, "re");
	if (!fp) {
		if (errno == ENOENT)
			return 0;
		return cp_error_set_errno(err, CP_ERR_INVALID_ARGUMENT, errno, "read '%s'", path);
	}
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
		if (add(ret, p, (size_t)(key_end - p), v, vlen) < 0) {
			fclose(fp);
			return cp_error_set(err, CP_ERR_INTERNAL, "read '%s': out of memory", path);
		}
	}
	fclose(fp);
	return 0;
}

int config_file_read_yaml(const char *path, struct config_file *ret, struct cp_error **err)
{
	FILE *fp = fopen(path, "re");
	if (!fp) {
		if (errno == ENOENT)
			return 0;
		return cp_error_set_errno(err, CP_ERR_INVALID_ARGUMENT, errno, "read '%s'", path);
	}
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
				key = strndup((const char *)ev.data.scalar.value, ev.data.scalar.length);
			} else {
				if (add(ret, key, strlen(key), (const char *)ev.data.scalar.value,
				        ev.data.scalar.length) < 0)
					r = cp_error_set(err, CP_ERR_INTERNAL, "read '%s': out of memory", path);
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
