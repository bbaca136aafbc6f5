/* export_save.c: saving a clone sandbox's work (issue 14). A fixed script
 * runs in the sandbox (as a hidden bash session): for a git clone it
 * snapshots uncommitted and untracked changes without touching the clone's
 * index, stash or working tree (a temporary GIT_INDEX_FILE seeded from the
 * real index, `git add -A`, `write-tree`, `commit-tree` with HEAD as
 * parent, on refs/chat2sbx/uncommitted) and bundles every branch and tag,
 * HEAD and the snapshot, thin against the approved repository's commits
 * from create time; for a plain copy it archives /workspace with tar. The
 * files come out through the helper channel in bounded chunks (blob.read),
 * counted against CHAT2SBX_MAX_EXPORT_BYTES while they stream, into
 * DATA_ROOT/exports/<sandbox_id>/<export_id>/, and are verified on the host
 * (export_verify.c, export_archive.c) before the manifest and the registry
 * row make them an export. Everything the sandbox says is treated as
 * hostile; what it decides alone ("nothing new", "unchanged") can only
 * spare a save of its own work, which it could delete anyway. */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/base64.h"
#include "../base/xjson.h"
#include "../base/xalloc.h"
#include "../base/cancel.h"
#include "../base/cleanup.h"
#include "../base/clock.h"
#include "../base/id.h"
#include "../base/json_file.h"
#include "../base/log.h"
#include "export_internal.h"
#include "proto.h" /* template/helper/proto.h: the wire format, PROTO_BLOB_CHUNK_MAX */

#define EXPORT_DIR_IN_SANDBOX "/tmp/.chat2sbx-export"

/* The script, run with bash -c inside the sandbox. @ID@, @MODE@ (thin,
 * full or state) and @LAST@ (fingerprint of the last export or -) are
 * replaced before it is sent. The snapshot commit is made the same way for
 * the same tree and HEAD (fixed identity, message and HEAD's own date), so
 * a save that only renames a branch finds every object in the previous
 * export (export_dedup.c); sandbox_export's message is kept in the
 * manifest and the registry. Its last line of output
 * is "chat2sbx-export kind=<git|tar> state=<...> fingerprint=<hex>". */
static const char script_template[] =
    "set -u\n"
    "X=" EXPORT_DIR_IN_SANDBOX "/@ID@ W=" POLICY_WORKSPACE_TARGET " MODE=@MODE@ LAST=@LAST@\n"
    "say() { printf 'chat2sbx-export kind=%s state=%s fingerprint=%s\\n' \"$1\" \"$2\" \"$3\"; }\n"
    "cd \"$W\" || exit 3\n"
    /* A clone's own core.fsmonitor names a program git runs on every look
     * at the working tree; one that hangs would hang every save and probe
     * (the channel's deadline still bounds a git the model replaced). */
    "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=false\n"
    "mkdir -p \"$X\" && chmod 700 \"$X\" || exit 3\n"
    /* A look (state mode) leaves nothing behind; a save's files are pulled
     * out after the script. */
    "[ \"$MODE\" = state ] && trap 'rm -rf \"$X\"' EXIT\n"
    "touch \"$X/base\"\n"
    "if [ \"$(git rev-parse --show-toplevel 2>/dev/null)\" = \"$W\" ]; then\n"
    "  real_index=$(git rev-parse --git-path index) || exit 4\n"
    "  rm -f \"$X/index\"\n"
    "  if [ -f \"$real_index\" ]; then cp \"$real_index\" \"$X/index\" || exit 4; fi\n"
    "  export GIT_INDEX_FILE=\"$X/index\" GIT_AUTHOR_NAME=chat2sbx GIT_AUTHOR_EMAIL=chat2sbx@localhost\n"
    "  export GIT_COMMITTER_NAME=chat2sbx GIT_COMMITTER_EMAIL=chat2sbx@localhost\n"
    "  git add -A >/dev/null 2>\"$X/err\" || { cat \"$X/err\"; exit 5; }\n"
    "  tree=$(git write-tree) || exit 5\n"
    "  head=$(git rev-parse -q --verify 'HEAD^{commit}' 2>/dev/null) || head=\n"
    "  if [ -n \"$head\" ]; then head_tree=$(git rev-parse \"$head^{tree}\"); else head_tree=$(git hash-object -t "
    "tree /dev/null); fi\n"
    "  git for-each-ref --format='%(objectname) %(refname)' refs/heads refs/tags > \"$X/refs\" || exit 7\n"
    "  heads=$(sha256sum < \"$X/refs\") base=$(sha256sum < \"$X/base\")\n"
    "  fp=$({ cat \"$X/refs\"; printf 'HEAD %s %s\\ntree %s\\n' \"$(git symbolic-ref -q HEAD || echo -)\" "
    "\"${head:--}\" \"$tree\"; } | sha256sum)\n"
    "  heads=${heads%% *} base=${base%% *} fp=${fp%% *}\n"
    "  if [ \"$fp\" = \"$LAST\" ]; then say git unchanged \"$fp\"; exit 0; fi\n"
    "  if [ \"$tree\" = \"$head_tree\" ] && [ \"$heads\" = \"$base\" ]; then say git nothing-new \"$fp\"; exit 0; fi\n"
    "  if [ \"$MODE\" = state ]; then say git changed \"$fp\"; exit 0; fi\n"
    "  snap=\n"
    "  if [ \"$tree\" != \"$head_tree\" ]; then\n"
    "    when=$(git show -s --format=%ct \"$head\" 2>/dev/null) || when=\n"
    "    export GIT_AUTHOR_DATE=\"@${when:-0} +0000\" GIT_COMMITTER_DATE=\"@${when:-0} +0000\"\n"
    "    snap=$(git commit-tree \"$tree\" ${head:+-p \"$head\"} -m 'chat2sbx: uncommitted and untracked changes') "
    "|| exit 6\n"
    "  fi\n"
    "  set --\n"
    "  if [ -n \"$head\" ]; then printf '%s HEAD\\n' \"$head\" >> \"$X/refs\"; set -- HEAD; fi\n"
    "  if [ -n \"$snap\" ]; then\n"
    "    git update-ref " POLICY_SNAPSHOT_REF " \"$snap\" || exit 6\n"
    "    printf '%s " POLICY_SNAPSHOT_REF "\\n' \"$snap\" >> \"$X/refs\"; set -- \"$@\" " POLICY_SNAPSHOT_REF "\n"
    "  fi\n"
    "  if [ \"$MODE\" = thin ]; then\n"
    "    while read -r oid name; do git cat-file -e \"$oid^{commit}\" 2>/dev/null && set -- \"$@\" \"^$oid\"; done "
    "< \"$X/base\"\n"
    "  fi\n"
    "  rm -f \"$X/bundle\"\n"
    "  git bundle create \"$X/bundle\" --branches --tags \"$@\" >/dev/null 2>\"$X/err\"; rc=$?\n"
    "  [ -n \"$snap\" ] && git update-ref -d " POLICY_SNAPSHOT_REF "\n"
    "  if [ $rc -ne 0 ]; then\n"
    "    if grep -q 'empty bundle' \"$X/err\"; then say git refs-only \"$fp\"; exit 0; fi\n"
    "    cat \"$X/err\"; exit 8\n"
    "  fi\n"
    "  say git bundle \"$fp\"\n"
    "else\n"
    "  fp=$(find . -xdev -printf '%P\\t%y\\t%s\\t%T@\\t%m\\t%l\\n' 2>/dev/null | LC_ALL=C sort | sha256sum)\n"
    "  fp=${fp%% *}\n"
    "  if [ \"$fp\" = \"$LAST\" ]; then say tar unchanged \"$fp\"; exit 0; fi\n"
    "  if diff -rq --no-dereference " POLICY_SOURCE_TARGET " \"$W\" >/dev/null 2>&1; then say tar nothing-new "
    "\"$fp\"; exit 0; fi\n"
    "  if [ \"$MODE\" = state ]; then say tar changed \"$fp\"; exit 0; fi\n"
    "  tar -C \"$W\" --numeric-owner -cf \"$X/workspace.tar\" . 2>\"$X/err\" || { cat \"$X/err\"; exit 9; }\n"
    "  say tar archive \"$fp\"\n"
    "fi\n";

void lifecycle_export_result_clear(struct lifecycle_export_result *r)
{
	if (!r)
		return;
	export_record_clear(&r->export);
	*r = (struct lifecycle_export_result){0};
}

/* Replaces each @KEY@ of tpl by its value. Caller frees. */
static char *script_build(const char *id, const char *mode, const char *last)
{
	const char *keys[] = {"@ID@", "@MODE@", "@LAST@"};
	const char *vals[] = {id, mode, last && *last ? last : "-"};
	char *out = xstrdup(script_template);
	for (size_t k = 0; k < 3; k++) {
		char *at;
		while ((at = strstr(out, keys[k]))) {
			char *next = NULL;
			next = xasprintf("%.*s%s%s", (int)(at - out), out, vals[k], at + strlen(keys[k]));
			free(out);
			out = next;
		}
	}
	return out;
}

/* Runs script as a hidden bash session, waiting up to wait_ms. *ret_line
 * (caller frees) is its last "chat2sbx-export ..." line; ret_line NULL:
 * no such line is expected, exit code 0 is enough. */
/* run_script with a cancellation token (borrowed, NULL = never): the wait
 * for the script ends at once when it fires (UNAVAILABLE). */
static int run_script_cancel(struct helper_channel *ch, const char *sandbox_id, const char *script, long wait_ms,
                             struct cp_cancel *cancel, char **ret_line, struct cp_error **err)
{
	_cleanup_free_ char *session = NULL;
	if (id_new("bash_", &session, err) < 0)
		return -1;
	_cleanup_json_ struct json_object *p = xjson_object();
	xjson_add(p, "session_id", xjson_string(session));
	xjson_add(p, "command", xjson_string(script));
	xjson_add(p, "cwd", xjson_string("/"));
	xjson_add(p, "yield_time_ms", xjson_int64(wait_ms));
	xjson_add(p, "max_output_bytes", xjson_int64(64 * 1024));
	xjson_add(p, "hidden", xjson_bool(1));
	_cleanup_json_ struct json_object *res = NULL;
	if (helper_channel_call_cancel(ch, "bash.start", p, wait_ms + 15000, cancel, &res, err) < 0)
		return cp_error_prefix(err, "run the save in sandbox '%s'", sandbox_id);
	struct json_object *v = NULL;
	const char *status = json_object_object_get_ex(res, "status", &v) ? json_object_get_string(v) : "";
	const char *out = json_object_object_get_ex(res, "output", &v) ? json_object_get_string(v) : "";
	int code = json_object_object_get_ex(res, "exit_code", &v) ? json_object_get_int(v) : -1;
	if (status && !strcmp(status, "running")) {
		_cleanup_json_ struct json_object *stop = xjson_object(), *sres = NULL;
		xjson_add(stop, "session_id", xjson_string(session));
		_cleanup_error_ struct cp_error *e = NULL;
		helper_channel_call(ch, "bash.stop", stop, 10000, &sres, &e);
		return cp_error_set(err, CP_ERR_TIMEOUT,
		                    "the save of sandbox '%s' did not finish within %ld s (a very large workspace or a "
		                    "hung git); nothing was saved",
		                    sandbox_id, wait_ms / 1000);
	}
	const char *line = NULL;
	for (const char *p2 = out; p2 && (p2 = strstr(p2, "chat2sbx-export kind=")); p2++)
		if (p2 == out || p2[-1] == '\n')
			line = p2;
	if (!status || strcmp(status, "exited") || code != 0 || (!line && ret_line)) {
		char shown[1200];
		size_t len = out ? strlen(out) : 0;
		policy_text_escape(out + (len > 800 ? len - 800 : 0), len > 800 ? 800 : len, shown, sizeof(shown));
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "the save of sandbox '%s' failed inside it (%s, exit code %d): %s", sandbox_id,
		                    status ? status : "?", code, len ? shown : "no output");
	}
	if (ret_line)
		*ret_line = xstrndup(line, strcspn(line, "\n"));
	return 0;
}

static int run_script(struct helper_channel *ch, const char *sandbox_id, const char *script, long wait_ms,
                      char **ret_line, struct cp_error **err)
{
	return run_script_cancel(ch, sandbox_id, script, wait_ms, NULL, ret_line, err);
}

struct script_answer {
	char kind[8];   /* git | tar */
	char state[16]; /* unchanged | nothing-new | changed | bundle | refs-only | archive */
	char fingerprint[65];
};

static int parse_answer(const char *line, struct script_answer *a, struct cp_error **err)
{
	*a = (struct script_answer){0};
	if (sscanf(line, "chat2sbx-export kind=%7s state=%15s fingerprint=%64s", a->kind, a->state, a->fingerprint) !=
	        3 ||
	    (strcmp(a->kind, "git") && strcmp(a->kind, "tar")) || strlen(a->fingerprint) != 64 ||
	    strspn(a->fingerprint, "0123456789abcdef") != 64)
		return cp_error_set(err, CP_ERR_INTERNAL, "the save script answered something unexpected");
	static const char *const states[] = {"unchanged", "nothing-new", "changed", "bundle",
	                                     "refs-only", "archive",     NULL};
	for (size_t i = 0; states[i]; i++)
		if (!strcmp(a->state, states[i]))
			return 0;
	return cp_error_set(err, CP_ERR_INTERNAL, "the save script answered an unknown state");
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* What a pulled file counts against (export_space.c): the data root's free
 * space, and with kept the caps on kept exports; scratch: verification
 * copies it once more. */
struct pull_room {
	struct export_space *sp;
	int scratch, kept;
};

/* Streams the sandbox's file at path into name below dirfd, at most cap
 * bytes (LIMIT beyond, counted as the bytes arrive), and only while room
 * says the disk and the caps allow (room NULL: no look). *ret_bytes = size. */
static int pull_blob(struct helper_channel *ch, const char *sandbox_id, const char *path, int dirfd, const char *name,
                     int64_t cap, const char *cap_name, const struct pull_room *room, int64_t *ret_bytes,
                     struct cp_error **err)
{
	_cleanup_json_ struct json_object *op = xjson_object(), *ores = NULL;
	xjson_add(op, "path", xjson_string(path));
	xjson_add(op, "unlink", xjson_bool(1));
	if (helper_channel_call(ch, "blob.open", op, 15000, &ores, err) < 0)
		return cp_error_prefix(err, "read '%s' from sandbox '%s'", path, sandbox_id);
	struct json_object *v = NULL;
	const char *handle = json_object_object_get_ex(ores, "handle", &v) ? json_object_get_string(v) : NULL;
	int64_t size = json_object_object_get_ex(ores, "size", &v) ? json_object_get_int64(v) : 0;
	if (!handle)
		return cp_error_set(err, CP_ERR_INTERNAL, "the helper of sandbox '%s' gave no handle", sandbox_id);
	_cleanup_free_ char *handle_copy = xstrdup(handle);
	_cleanup_free_ char *partial = NULL;
	partial = xasprintf("%s.partial", name);
	int r = -1, fd = -1;
	unsigned char *buf = xmalloc(PROTO_BLOB_CHUNK_MAX + 4);
	int64_t got = 0;
	if (size > cap) {
		got = size;
		goto over;
	}
	if (room && export_space_expect(room->sp, size, room->scratch, room->kept, err) < 0)
		goto out;
	unlinkat(dirfd, partial, 0);
	fd = openat(dirfd, partial, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "write '%s'", partial);
		goto out;
	}
	for (;;) {
		_cleanup_json_ struct json_object *rp = xjson_object(), *rr = NULL;
		xjson_add(rp, "handle", xjson_string(handle_copy));
		xjson_add(rp, "offset", xjson_int64(got));
		xjson_add(rp, "length", xjson_int64(PROTO_BLOB_CHUNK_MAX));
		if (helper_channel_call(ch, "blob.read", rp, 30000, &rr, err) < 0) {
			cp_error_prefix(err, "read '%s' from sandbox '%s'", path, sandbox_id);
			goto out;
		}
		const char *data = json_object_object_get_ex(rr, "data", &v) ? json_object_get_string(v) : "";
		size_t dlen = json_object_object_get_ex(rr, "data", &v) ? (size_t)json_object_get_string_len(v) : 0;
		int eof = json_object_object_get_ex(rr, "eof", &v) && json_object_get_boolean(v);
		int ok = 0;
		size_t n = dlen <= 4 * ((PROTO_BLOB_CHUNK_MAX + 2) / 3) ? base64_decode(data, dlen, buf, &ok) : 0;
		if (!ok) {
			cp_error_set(err, CP_ERR_INTERNAL, "the helper of sandbox '%s' sent a malformed chunk",
			             sandbox_id);
			goto out;
		}
		if (got + (int64_t)n > cap) {
			got += (int64_t)n;
			goto over;
		}
		if (room && export_space_chunk(room->sp, got, (int64_t)n, err) < 0)
			goto out;
		if (write_all(fd, buf, n) < 0) {
			cp_error_set_errno(err, errno == ENOSPC ? CP_ERR_LIMIT : CP_ERR_UNAVAILABLE, errno,
			                   "write the export of sandbox '%s' (is the disk full?)", sandbox_id);
			goto out;
		}
		got += (int64_t)n;
		if (eof)
			break;
		if (n == 0) {
			cp_error_set(err, CP_ERR_INTERNAL, "the helper of sandbox '%s' sent an empty chunk",
			             sandbox_id);
			goto out;
		}
	}
	if (fsync(fd) < 0 || renameat(dirfd, partial, dirfd, name) < 0) {
		cp_error_set_errno(err, CP_ERR_UNAVAILABLE, errno, "keep the export of sandbox '%s'", sandbox_id);
		goto out;
	}
	*ret_bytes = got;
	r = 0;
	goto out;
over:
	cp_error_set(err, CP_ERR_LIMIT,
	             "the work of sandbox '%s' is larger than %s (%lld bytes, at least %lld came); nothing was "
	             "saved. Delete what is not needed (build outputs, downloads, large data) or raise %s",
	             sandbox_id, cap_name, (long long)cap, (long long)got, cap_name);
out:
	free(buf);
	if (fd >= 0)
		close(fd);
	if (r < 0)
		unlinkat(dirfd, partial, 0);
	_cleanup_json_ struct json_object *cp = xjson_object(), *cres = NULL;
	xjson_add(cp, "handle", xjson_string(handle_copy));
	_cleanup_error_ struct cp_error *ce = NULL;
	helper_channel_call(ch, "blob.close", cp, 10000, &cres, &ce);
	return r;
}

/* Reads the small file name below dirfd (at most max bytes) into *ret. */
static int read_small(int dirfd, const char *name, size_t max, char **ret, size_t *ret_len, struct cp_error **err)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "read '%s'", name);
	char *buf = xmalloc(max + 1);
	size_t len = 0;
	ssize_t n;
	while (len < max && (n = read(fd, buf + len, max - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

static void audit_save(struct lifecycle *lc, const char *actor, const char *sandbox_id, const char *export_id,
                       const struct cp_error *e, const char *message)
{
	struct audit_record a = {.at_ms = clock_now_ms(),
	                         .actor = actor ? actor : "serve",
	                         .action = "export.save",
	                         .sandbox_id = sandbox_id,
	                         .target = export_id,
	                         .status = e ? cp_error_code_name(e->code) : "ok",
	                         .message = e ? e->message : message};
	_cleanup_error_ struct cp_error *ae = NULL;
	if (store_audit_insert(lc->store, &a, &ae) < 0)
		log_warn("lifecycle", "audit the save of %s: %s", sandbox_id, ae->message);
}

/* The channel a save talks on. A stopped container (expired, failed) is
 * started for it (*ret_started = 1); the helper then answers hello and,
 * for a host workspace, must see the very directory its create verified
 * (recovery.c) before the script runs: no other process runs in a freshly
 * started container until it is told to. */
static int save_channel(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel **ret,
                        int *ret_started, struct cp_error **err)
{
	*ret_started = 0;
	if (s->status == SANDBOX_RUNNING) {
		struct helper_channel *ch = lifecycle_channel_get(lc, s->id);
		if (ch && helper_channel_alive(ch)) {
			*ret = ch;
			return 0;
		}
		helper_channel_unref(ch);
		return lifecycle_sandbox_reattach(lc, s, ret, err);
	}
	if (s->status != SANDBOX_EXPIRED && s->status != SANDBOX_FAILED)
		return cp_error_set(err, CP_ERR_CONFLICT, "sandbox '%s' is %s; there is nothing to save", s->id,
		                    sandbox_status_to_string(s->status));
	const char *container = s->container_id ? s->container_id : s->container_name;
	struct docker_container_state st = {0};
	struct docker_engine *engine = NULL; /* its node's (a clone may run on another, issue 28) */
	if (lifecycle_node_engine(lc, s->node, &engine, err) < 0)
		return -1;
	if (docker_container_inspect(engine, container, &st, err) < 0) {
		if ((*err)->code == CP_ERR_NOT_FOUND) {
			cp_error_freep(err);
			return cp_error_set(
			    err, CP_ERR_NOT_FOUND,
			    "the container of sandbox '%s' no longer exists; there is nothing left to save", s->id);
		}
		return -1;
	}
	int running = st.status && !strcmp(st.status, "running");
	docker_container_state_clear(&st);
	if (!running) {
		if (docker_container_start(engine, container, err) < 0)
			return cp_error_prefix(err, "start sandbox '%s' to save its work", s->id);
		*ret_started = 1;
	}
	lifecycle_channel_drop(lc, s->id);
	if (lifecycle_sandbox_reattach(lc, s, ret, err) < 0) {
		if (*ret_started) {
			_cleanup_error_ struct cp_error *e = NULL;
			docker_container_stop(engine, container, &e);
			lifecycle_channel_drop(lc, s->id);
		}
		return cp_error_prefix(err, "reach the helper of sandbox '%s' to save its work", s->id);
	}
	return 0;
}

struct save_ctx {
	struct lifecycle *lc;
	const struct sandbox_record *s;
	const struct workspace_record *w;
	const struct lifecycle_export_options *o;
	struct helper_channel *ch;
	char *export_id;
	char *dir;
	int dirfd;
	char *source_refs;         /* owned; may be NULL */
	char *host_objects;        /* owned; NULL: the approved repository is not reachable */
	struct export_record last; /* id NULL when none */
	struct export_space space; /* the caps and the disk (export_space.c) */
};

/* Streams and verifies a git export; fills m. *ret_retry_full when the
 * bundle was thin against commits the approved repository lost. */
static int take_git(struct save_ctx *c, const struct script_answer *a, struct export_manifest *m, int *ret_retry_full,
                    struct cp_error **err)
{
	*ret_retry_full = 0;
	char path[256];
	int64_t bytes = 0, list_bytes = 0;
	snprintf(path, sizeof(path), EXPORT_DIR_IN_SANDBOX "/%s/refs", c->export_id);
	const struct pull_room list_room = {.sp = &c->space}, bundle_room = {.sp = &c->space, .scratch = 1, .kept = 1};
	if (pull_blob(c->ch, c->s->id, path, c->dirfd, "refs", EXPORT_REFLIST_MAX, "4 MiB of refs", &list_room,
	              &list_bytes, err) < 0)
		return -1;
	int bundle = !strcmp(a->state, "bundle");
	_cleanup_free_ char *text = NULL;
	size_t len = 0;
	struct export_ref *list = NULL, *base = NULL;
	size_t n_list = 0, n_base = 0;
	if (read_small(c->dirfd, "refs", EXPORT_REFLIST_MAX, &text, &len, err) < 0)
		return -1;
	if (export_reflist_parse(text, len, 0, &list, &n_list, err) < 0)
		return cp_error_prefix(err, "the sandbox's list of refs was refused");
	/* Nothing new in it: the previous export's bundle is shared, and this
	 * one is never streamed. */
	if (bundle && export_dedup_try(&c->last, c->host_objects != NULL, list, n_list, c->s->id, c->dirfd, m)) {
		export_refs_free(list, n_list);
		return 0;
	}
	if (bundle) {
		snprintf(path, sizeof(path), EXPORT_DIR_IN_SANDBOX "/%s/bundle", c->export_id);
		if (pull_blob(c->ch, c->s->id, path, c->dirfd, "bundle", c->lc->cfg->max_export_bytes,
		              "CHAT2SBX_MAX_EXPORT_BYTES", &bundle_room, &bytes, err) < 0) {
			export_refs_free(list, n_list);
			return -1;
		}
	}
	if (c->source_refs &&
	    export_reflist_parse(c->source_refs, strlen(c->source_refs), 1, &base, &n_base, err) < 0) {
		export_refs_free(list, n_list);
		return -1;
	}
	char bundle_path[4300];
	snprintf(bundle_path, sizeof(bundle_path), "%s/bundle", c->dir);
	struct export_verify_in in = {.dir = c->dir,
	                              .bundle = bundle ? bundle_path : NULL,
	                              .host_objects = c->host_objects,
	                              .list = list,
	                              .n_list = n_list,
	                              .base = base,
	                              .n_base = n_base,
	                              .sandbox_id = c->s->id};
	int r = export_verify_git(&in, m, ret_retry_full, err);
	export_refs_free(list, n_list);
	export_refs_free(base, n_base);
	m->bytes = bytes;
	return r;
}

static int take_tar(struct save_ctx *c, struct export_manifest *m, struct cp_error **err)
{
	char path[256];
	snprintf(path, sizeof(path), EXPORT_DIR_IN_SANDBOX "/%s/workspace.tar", c->export_id);
	const struct pull_room room = {.sp = &c->space, .kept = 1};
	if (pull_blob(c->ch, c->s->id, path, c->dirfd, "workspace.tar", c->lc->cfg->max_export_bytes,
	              "CHAT2SBX_MAX_EXPORT_BYTES", &room, &m->bytes, err) < 0)
		return -1;
	char tar[4300];
	snprintf(tar, sizeof(tar), "%s/workspace.tar", c->dir);
	if (export_verify_turn_take(clock_monotonic_ms() + EXPORT_VERIFY_BUDGET_MS, err) < 0)
		return -1;
	int r = export_archive_check(tar, &m->archive_entries, err);
	export_verify_turn_release();
	if (r < 0)
		return cp_error_prefix(err, "the archive from sandbox '%s' was refused", c->s->id);
	return 0;
}

/* Writes the manifest file and the registry row. */
static int keep(struct save_ctx *c, struct export_manifest *m, const struct script_answer *a, struct export_record *ret,
                struct cp_error **err)
{
	m->export_id = xstrdup(c->export_id);
	m->sandbox_id = xstrdup(c->s->id);
	m->workspace_id = xstrdup(c->w->id);
	m->host_path = c->w->host_path ? xstrdup(c->w->host_path) : NULL;
	m->reason = xstrdup(c->o->reason);
	m->message = c->o->message ? xstrdup(c->o->message) : NULL;
	m->fingerprint = xstrdup(a->fingerprint);
	m->created_at_ms = clock_now_ms();
	_cleanup_json_ struct json_object *o = export_manifest_to_json(m);
	char path[4300];
	snprintf(path, sizeof(path), "%s/manifest.json", c->dir);
	if (json_file_write_atomic(path, o, err) < 0)
		return -1;
	int64_t refs = 0;
	for (size_t i = 0; i < m->n_refs; i++)
		refs += m->refs[i].ref.kind == POLICY_REF_BRANCH || m->refs[i].ref.kind == POLICY_REF_TAG;
	struct export_record x = {.id = c->export_id,
	                          .sandbox_id = c->s->id,
	                          .workspace_id = c->w->id,
	                          .kind = m->kind,
	                          .reason = (char *)c->o->reason,
	                          .path = c->dir,
	                          .bytes = m->bytes,
	                          .refs = refs,
	                          .commits = m->commits,
	                          .dirty_files = m->snapshot_file_count,
	                          .fingerprint = m->fingerprint,
	                          .message = m->message,
	                          .created_at_ms = m->created_at_ms,
	                          .shares_bundle_of = m->shares_bundle_of};
	if (store_export_insert(c->lc->store, &x, err) < 0)
		return -1;
	return store_export_get(c->lc->store, c->export_id, ret, err);
}

/* One run of the script and what follows; *ret_retry_full as take_git. */
static int save_once(struct save_ctx *c, const char *mode, struct export_manifest *m, struct script_answer *a,
                     int *ret_retry_full, struct cp_error **err)
{
	*ret_retry_full = 0;
	/* The approved repository's refs at create: what "nothing new"
	 * compares with and what a thin bundle builds on. */
	_cleanup_json_ struct json_object *wp = xjson_object(), *wres = NULL;
	char base_path[256];
	snprintf(base_path, sizeof(base_path), EXPORT_DIR_IN_SANDBOX "/%s/base", c->export_id);
	xjson_add(wp, "path", xjson_string(base_path));
	xjson_add(wp, "content", xjson_string(c->source_refs ? c->source_refs : ""));
	xjson_add(wp, "create_dirs", xjson_bool(1));
	if (helper_channel_call(c->ch, "file.write", wp, 30000, &wres, err) < 0)
		return cp_error_prefix(err, "prepare the save in sandbox '%s'", c->s->id);
	/* A last export the person put in the trash holds nothing for this
	 * comparison: the same state is saved again. */
	_cleanup_free_ char *script =
	    script_build(c->export_id, mode, c->last.id && !c->last.trashed_at_ms ? c->last.fingerprint : NULL);
	_cleanup_free_ char *line = NULL;
	long wait = c->o->wait_ms > 0 ? c->o->wait_ms : LIFECYCLE_EXPORT_WAIT_MS;
	if (run_script(c->ch, c->s->id, script, wait, &line, err) < 0 || parse_answer(line, a, err) < 0)
		return -1;
	if (!strcmp(a->state, "unchanged") || !strcmp(a->state, "changed"))
		return 0;
	if (!strcmp(a->state, "nothing-new")) {
		m->kind = xstrdup("none");
		m->nothing_new = 1;
		return 0;
	}
	/* It keeps something: one more export must fit the caps and the disk
	 * its room, before anything is streamed. */
	if (export_space_begin(&c->space, c->lc->cfg, c->lc->store, c->s->id, c->dirfd, err) < 0)
		return -1;
	if (!strcmp(a->kind, "tar")) {
		m->kind = xstrdup("tar");
		return take_tar(c, m, err);
	}
	m->kind = xstrdup("git");
	return take_git(c, a, m, ret_retry_full, err);
}

static void ctx_clear(struct save_ctx *c)
{
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->export_id);
	free(c->dir);
	free(c->source_refs);
	free(c->host_objects);
	export_record_clear(&c->last);
}

int lifecycle_export_save(struct lifecycle *lc, const char *sandbox_id, const struct lifecycle_export_options *o,
                          struct lifecycle_export_result *ret, struct cp_error **err)
{
	*ret = (struct lifecycle_export_result){0};
	struct sandbox_record s = {0};
	struct workspace_record w = {0};
	if (store_sandbox_get(lc->store, sandbox_id, &s, err) < 0)
		return -1;
	if (store_workspace_get(lc->store, s.workspace_id, &w, err) < 0) {
		sandbox_record_clear(&s);
		return -1;
	}
	struct save_ctx c = {.lc = lc, .s = &s, .w = &w, .o = o, .dirfd = -1};
	struct export_manifest m = {0};
	struct export_slot *slot = NULL;                        /* one save of a sandbox at a time (export_queue.c) */
	_cleanup_error_ struct cp_error *le = NULL, *oe = NULL; /* before any goto */
	int r = -1, started = 0, own_channel = 0;
	int64_t t0 = clock_monotonic_ms();
	if (strcmp(w.mode, "clone") != 0) {
		ret->not_clone = 1;
		r = 0;
		goto done;
	}
	if (export_save_slot_take(lc->cfg, s.id, t0 + (o->wait_ms > 0 ? o->wait_ms : LIFECYCLE_EXPORT_WAIT_MS), &slot,
	                          err) < 0)
		goto done;
	if (o->channel) {
		c.ch = helper_channel_ref(o->channel);
	} else {
		if (save_channel(lc, &s, &c.ch, &started, err) < 0)
			goto done;
		own_channel = 1;
	}
	if (id_new("exp_", &c.export_id, err) < 0 ||
	    store_sandbox_get_source_refs(lc->store, s.id, &c.source_refs, err) < 0)
		goto done;
	if (store_export_last(lc->store, s.id, &c.last, &le) < 0 && le->code != CP_ERR_NOT_FOUND) {
		*err = TAKE_PTR(le);
		goto done;
	}
	if (c.source_refs && export_git_objects_dir(w.path, NULL, &c.host_objects, &oe) < 0)
		log_info("lifecycle", "save of %s: the approved repository is not reachable (%s); the bundle is full",
		         s.id, oe->message);
	if (export_dir_open(lc->cfg, s.id, c.export_id, &c.dir, &c.dirfd, err) < 0)
		goto done;
	struct script_answer a;
	int retry_full = 0;
	r = save_once(&c, c.host_objects ? "thin" : "full", &m, &a, &retry_full, err);
	if (r < 0 && retry_full) {
		log_info("lifecycle", "save of %s: %s; asking for a full bundle", s.id, (*err)->message);
		cp_error_freep(err);
		export_manifest_clear(&m);
		r = save_once(&c, "full", &m, &a, &retry_full, err);
	}
	if (r < 0)
		goto done;
	r = -1;
	if (!strcmp(a.state, "unchanged") && c.last.id && c.last.fingerprint &&
	    !strcmp(c.last.fingerprint, a.fingerprint)) {
		/* Saved already: the last export holds exactly this state. */
		ret->export = c.last;
		c.last = (struct export_record){0};
		export_dir_remove(c.dir);
		r = 0;
		goto done;
	}
	if (!strcmp(a.state, "unchanged") || !strcmp(a.state, "changed")) {
		cp_error_set(err, CP_ERR_INTERNAL, "the save script of sandbox '%s' answered '%s' to a save", s.id,
		             a.state);
		goto done;
	}
	if (keep(&c, &m, &a, &ret->export, err) < 0)
		goto done;
	ret->saved = 1;
	r = 0;
done:
	if (r < 0 && c.dir)
		export_dir_remove(c.dir);
	if (r < 0 && started) {
		/* Started for the save: stopped again, as it was. */
		_cleanup_error_ struct cp_error *e = NULL;
		struct docker_engine *engine = NULL;
		if (lifecycle_node_engine(lc, s.node, &engine, &e) == 0)
			docker_container_stop(engine, s.container_id ? s.container_id : s.container_name, &e);
		lifecycle_channel_drop(lc, s.id);
	}
	if (!ret->not_clone) {
		char msg[300];
		if (r == 0)
			snprintf(msg, sizeof(msg), "%s: %s %s export, %lld bytes, in %lld ms", o->reason,
			         ret->saved ? "new" : "unchanged since the last", ret->export.kind,
			         (long long)ret->export.bytes, (long long)(clock_monotonic_ms() - t0));
		audit_save(lc, o->actor, s.id, r == 0 ? ret->export.id : c.export_id, r < 0 ? *err : NULL, msg);
		if (r == 0) {
			_cleanup_error_ struct cp_error *ue = NULL;
			store_sandbox_set_unsaved(lc->store, s.id, 0, clock_now_ms(), &ue);
			log_info("lifecycle", "sandbox %s: %s", s.id, msg);
		}
	}
	if (r == 0 && ret->saved && !strcmp(o->reason, "checkpoint") && c.ch) {
		/* The sandbox goes on: leave nothing of the save in it. */
		_cleanup_free_ char *rm = xasprintf("rm -rf " EXPORT_DIR_IN_SANDBOX "/%s", c.export_id);
		_cleanup_error_ struct cp_error *e = NULL;
		run_script(c.ch, s.id, rm, 10000, NULL, &e);
	}
	(void)own_channel;
	if (c.ch)
		helper_channel_unref(c.ch);
	export_manifest_clear(&m);
	ctx_clear(&c);
	export_save_slot_release(slot);
	sandbox_record_clear(&s);
	workspace_record_clear(&w);
	return r;
}

int export_unsaved_probe(struct lifecycle *lc, const char *sandbox_id, struct helper_channel *ch,
                         struct cp_cancel *cancel, int *ret_unsaved, struct cp_error **err)
{
	struct export_record last = {0};
	_cleanup_error_ struct cp_error *le = NULL, *re = NULL;
	store_export_last(lc->store, sandbox_id, &last, &le);
	_cleanup_free_ char *source = NULL, *id = NULL, *script = NULL, *line = NULL;
	_cleanup_json_ struct json_object *wp = xjson_object(), *wres = NULL;
	store_sandbox_get_source_refs(lc->store, sandbox_id, &source, &re);
	int r = -1;
	if (id_new("chk_", &id, err) < 0)
		goto done;
	char base_path[256];
	snprintf(base_path, sizeof(base_path), EXPORT_DIR_IN_SANDBOX "/%s/base", id);
	xjson_add(wp, "path", xjson_string(base_path));
	xjson_add(wp, "content", xjson_string(source ? source : ""));
	xjson_add(wp, "create_dirs", xjson_bool(1));
	script = script_build(id, "state", last.trashed_at_ms ? NULL : last.fingerprint);
	struct script_answer a;
	if (helper_channel_call_cancel(ch, "file.write", wp, EXPORT_PROBE_WAIT_MS, cancel, &wres, err) == 0 &&
	    run_script_cancel(ch, sandbox_id, script, EXPORT_PROBE_WAIT_MS, cancel, &line, err) == 0 &&
	    parse_answer(line, &a, err) == 0) {
		*ret_unsaved = !strcmp(a.state, "changed");
		_cleanup_error_ struct cp_error *se = NULL;
		store_sandbox_set_unsaved(lc->store, sandbox_id, *ret_unsaved, clock_now_ms(), &se);
		r = 0; /* the script removed its directory on the way out */
	}
	if (r < 0 && !cp_cancel_fired(cancel)) {
		_cleanup_free_ char *rm = xasprintf("rm -rf " EXPORT_DIR_IN_SANDBOX "/%s", id);
		_cleanup_error_ struct cp_error *e = NULL;
		run_script_cancel(ch, sandbox_id, rm, EXPORT_PROBE_WAIT_MS, cancel, NULL, &e);
	}
done:
	export_record_clear(&last);
	return r;
}
