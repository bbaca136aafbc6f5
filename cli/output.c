/* output.c: what every command shares to answer: the one place an error
 * becomes a message and an exit status, the audit row of a CLI action, and
 * JSON output. Owns nothing; never exits (main returns the status). */
#include <json-c/json.h>
#include <stdio.h>

#include "base/clock.h"
#include "base/error.h"
#include "store/store.h"
#include "cli.h"

/* An error's message on stderr and its exit status (cli.h). */
int cli_fail(struct cp_error *err)
{
	int status = cp_error_exit_status(err->code);
	fprintf(stderr, "chat2sbx: %s\n", err->message);
	cp_error_free(err);
	return status;
}

/* A CLI action's audit row (cli.h). */
void cli_audit(struct store *store, const char *action, const char *target, const char *sandbox_id,
               const struct cp_error *err)
{
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = "cli",
	                         .action = action,
	                         .sandbox_id = sandbox_id,
	                         .target = target,
	                         .status = err ? cp_error_code_name(err->code) : "ok",
	                         .message = err ? err->message : NULL};
	struct cp_error *e = NULL;
	if (store_audit_insert(store, &a, &e) < 0) {
		fprintf(stderr, "chat2sbx: warning: %s\n", e->message);
		cp_error_free(e);
	}
}

/* o pretty-printed on stdout, then released (cli.h). */
void cli_print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}
