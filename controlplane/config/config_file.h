/* config_file.h: the two optional files behind the environment: a .env file
 * (KEY=VALUE lines) and DATA_ROOT/config.yaml (a flat mapping of camelCase
 * keys to scalars, read with libyaml). Internal to config/. */
#ifndef CP_CONFIG_FILE_H
#define CP_CONFIG_FILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "../base/error.h"

struct config_file {
	char **keys;   /* owned */
	char **values; /* owned */
	size_t n;
};

/* Decides whether a settings file (st from fstat of the opened file, path
 * for the message) may be trusted: a regular file owned by the running user
 * (geteuid) or root, not group- or world-writable. Otherwise fails with
 * INVALID_ARGUMENT naming the file and the fix (chown / chmod go-w), because a
 * planted .env or config.yaml could set any security setting (security review,
 * defect 1). Both readers below apply it. */
int config_file_check_trusted(const struct stat *st, const char *path, struct cp_error **err);

/* Reads a .env file at path. A missing file is not an error (empty result);
 * an untrusted one is (config_file_check_trusted).
 * Lines: blank, "# comment", "KEY=VALUE", "export KEY=VALUE"; a value may be
 * wrapped in single or double quotes. A line without '=' fails with
 * INVALID_ARGUMENT naming the file and line. */
int config_file_read_dotenv(const char *path, struct config_file *ret, struct cp_error **err);

/* Reads config.yaml at path with libyaml. A missing file is not an error; an
 * untrusted one is (config_file_check_trusted). A
 * document that is not a mapping of scalar keys to scalar values fails with
 * INVALID_ARGUMENT naming the file, the key and the line. */
int config_file_read_yaml(const char *path, struct config_file *ret, struct cp_error **err);

/* Last value for key, or NULL (borrowed). */
const char *config_file_get(const struct config_file *f, const char *key);
void config_file_clear(struct config_file *f);

#endif
