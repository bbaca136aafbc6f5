/* attack_delta_bomb.c: the doctor's delta bomb (issue 23). A pack of a
 * 1 MiB blob of zeros and ten REF_DELTAs, each copying the one before
 * twice, is about 2 KB on disk and 1 GiB for git to resolve. Two attacks: the
 * bomb handed over by a clone probe's own `git bundle` must be refused by
 * a bound before host git inflates it, and the bomb fed straight to host
 * git index-pack (no check first) must die at a small memory ceiling, so
 * the rlimit floor holds on this host. Owns its throwaway repository,
 * probe and registry rows and removes them whatever happens. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <nettle/sha1.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "../export/export.h"
#include "../lifecycle/lifecycle.h"
#include "../policy/policy.h"
#include "ops.h"

#define ATTACK                                                                                                         \
	"hand the host a 2 KB pack of ten chained deltas that inflates to 1 GiB (a clone probe's own git bundle), "    \
	"and feed it to host git without the check"
/* The ceiling the floor attack gives git: the bomb needs twenty times it. */
#define FLOOR_CEILING (64ull << 20)

struct bytes {
	unsigned char *data;
	size_t len, cap;
};

static void put(struct bytes *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = 2 * (b->len + n);
		b->data = xrealloc(b->data, b->cap);
	}
	memcpy(b->data + b->len, d, n);
	b->len += n;
}

static void put_varint(struct bytes *b, uint64_t v)
{
	do {
		unsigned char c = (v & 0x7f) | (v >> 7 ? 0x80 : 0);
		put(b, &c, 1);
		v >>= 7;
	} while (v);
}

/* An entry: type and size (gitformat-pack(5)), [base id,] zlib data. */
static void put_entry(struct bytes *b, int type, const unsigned char *base_oid, const void *data, size_t len)
{
	uint64_t size = len;
	unsigned char c = (unsigned char)(type << 4 | (size & 15));
	for (size >>= 4; size; size >>= 7) {
		c |= 0x80;
		put(b, &c, 1);
		c = size & 0x7f;
	}
	put(b, &c, 1);
	if (base_oid)
		put(b, base_oid, SHA1_DIGEST_SIZE);
	uLongf out = compressBound(len);
	unsigned char *z = xmalloc(out);
	compress2(z, &out, data, len, 9);
	put(b, z, out);
	free(z);
}

/* The id of a blob of size zeros: SHA-1 of "blob <size>\0" and the bytes. */
static void zeros_oid(uint64_t size, const unsigned char *zeros, size_t chunk, unsigned char *oid)
{
	struct sha1_ctx ctx;
	char head[40];
	int n = snprintf(head, sizeof(head), "blob %llu", (unsigned long long)size);
	sha1_init(&ctx);
	sha1_update(&ctx, (size_t)n + 1, (const uint8_t *)head);
	for (uint64_t done = 0; done < size; done += chunk)
		sha1_update(&ctx, size - done < chunk ? (size_t)(size - done) : chunk, zeros);
	sha1_digest(&ctx, SHA1_DIGEST_SIZE, oid);
}

int ops_delta_bomb_pack(unsigned levels, size_t base_bytes, unsigned char **ret, size_t *ret_len)
{
	struct bytes b = {0};
	unsigned char head[12] = {'P', 'A', 'C', 'K', 0, 0, 0, 2, 0, 0, 0, (unsigned char)(levels + 1)};
	put(&b, head, sizeof(head));
	size_t chunk = 1 << 20;
	unsigned char *zeros = xcalloc(1, base_bytes > chunk ? base_bytes : chunk);
	put_entry(&b, 3, NULL, zeros, base_bytes);
	unsigned char oid[SHA1_DIGEST_SIZE];
	uint64_t size = base_bytes;
	for (unsigned level = 0; level < levels; level++, size *= 2) {
		zeros_oid(size, zeros, chunk, oid);
		/* Delta: base size, result size, then copies of the whole base,
		 * twice (patch-delta.c: offset in up to 4 bytes, size in up to 3;
		 * 8 MiB a copy here). */
		struct bytes d = {0};
		put_varint(&d, size);
		put_varint(&d, 2 * size);
		uint64_t step = size < (8u << 20) ? size : (8u << 20);
		for (int t = 0; t < 2; t++)
			for (uint64_t off = 0; off < size; off += step) {
				unsigned char op[8] = {0x80}, n = 1;
				for (int k = 0; k < 4; k++)
					if ((off >> (8 * k)) & 0xff) {
						op[0] |= (unsigned char)(1 << k);
						op[n++] = (off >> (8 * k)) & 0xff;
					}
				for (int k = 0; k < 3; k++)
					if ((step >> (8 * k)) & 0xff) {
						op[0] |= (unsigned char)(0x10 << k);
						op[n++] = (step >> (8 * k)) & 0xff;
					}
				put(&d, op, n);
			}
		put_entry(&b, 7, oid, d.data, d.len);
		free(d.data);
	}
	free(zeros);
	struct sha1_ctx ctx;
	unsigned char sum[SHA1_DIGEST_SIZE];
	sha1_init(&ctx);
	sha1_update(&ctx, b.len, b.data);
	sha1_digest(&ctx, SHA1_DIGEST_SIZE, sum);
	put(&b, sum, sizeof(sum));
	*ret = b.data;
	*ret_len = b.len;
	return 0;
}

/* The floor: host git on the bomb with nothing but the rlimits. */
static void floor_attack(const unsigned char *pack, size_t len, char *out, size_t size, int *failed)
{
	char path[] = "/tmp/chat2sbx-doctor-bomb-XXXXXX";
	_cleanup_close_ int fd = mkstemp(path);
	_cleanup_error_ struct cp_error *e = NULL;
	*failed = 1;
	if (fd < 0 || write(fd, pack, len) != (ssize_t)len || lseek(fd, 0, SEEK_SET) != 0) {
		snprintf(out, size, "write the pack: %s", strerror(errno));
		if (fd >= 0)
			unlink(path);
		return;
	}
	unlink(path);
	long peak = 0;
	int r = export_index_unchecked(fd, FLOOR_CEILING, &peak, &e);
	if (r == 0)
		snprintf(out, size,
		         "host git resolved the whole bomb under a %llu MiB ceiling (peak %ld MiB): the "
		         "memory ceiling does not hold on this host",
		         FLOOR_CEILING >> 20, peak >> 10);
	else if (e->code != CP_ERR_LIMIT)
		snprintf(out, size, "host git failed on the bomb for another reason (%.300s)", e->message);
	else if ((uint64_t)peak * 1024 > FLOOR_CEILING)
		snprintf(out, size, "host git was stopped, but its peak of %ld MiB is over the %llu MiB ceiling",
		         peak >> 10, FLOOR_CEILING >> 20);
	else {
		*failed = 0;
		snprintf(out, size, "host git without the check stopped at the %llu MiB ceiling (peak %ld MiB)",
		         FLOOR_CEILING >> 20, peak >> 10);
	}
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* A throwaway repository with no commit, HEAD on main, in an allowed
 * root; dir gets its path. -1 with why in reason. */
static int throwaway_repository(const struct config *cfg, char *dir, size_t size, char *reason, size_t rsize)
{
	size_t n = 0;
	char **roots = policy_roots_split(cfg->allowed_host_roots, &n);
	int made = 0;
	for (size_t i = 0; roots && i < n && !made; i++) {
		snprintf(dir, size, "%s/chat2sbx-doctor-bomb-XXXXXX", roots[i]);
		made = access(roots[i], W_OK) == 0 && mkdtemp(dir) != NULL;
	}
	policy_roots_free(roots);
	if (!made) {
		snprintf(reason, rsize, "no allowed host root is writable for a throwaway repository");
		return -1;
	}
	static const char *const layout[] = {".git", ".git/objects", ".git/refs", ".git/refs/heads", NULL};
	char p[4300];
	for (size_t i = 0; layout[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, layout[i]);
		if (mkdir(p, 0755) < 0)
			goto fail;
	}
	static const char *const files[][2] = {{".git/HEAD", "ref: refs/heads/main\n"},
	                                       {".git/config", "[core]\n\trepositoryformatversion = 0\n"}};
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i][0]);
		FILE *f = fopen(p, "wx");
		if (!f)
			goto fail;
		int failed = fputs(files[i][1], f) < 0; /* closed whatever fputs did */
		if (fclose(f) != 0 || failed)
			goto fail;
	}
	return 0;
fail:
	snprintf(reason, rsize, "write a throwaway repository in '%.300s': %s", dir, strerror(errno));
	return -1;
}

/* In the probe: a commit, then a `git` whose `bundle create` writes a
 * header naming that commit and the bomb behind it. */
static char *plant_command(const unsigned char *pack, size_t len)
{
	size_t b64_len = 4 * ((len + 2) / 3);
	char *b64 = xmalloc(b64_len + 1);
	static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;
	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)pack[i] << 16 | (i + 1 < len ? (uint32_t)pack[i + 1] << 8 : 0) |
		             (i + 2 < len ? pack[i + 2] : 0);
		b64[o++] = tab[v >> 18 & 63];
		b64[o++] = tab[v >> 12 & 63];
		b64[o++] = i + 1 < len ? tab[v >> 6 & 63] : '=';
		b64[o++] = i + 2 < len ? tab[v & 63] : '=';
	}
	b64[o] = '\0';
	char *cmd = xasprintf(
	    "set -e\n"
	    "printf '%%s' '%s' > /tmp/c2s-bomb.b64\n"
	    "cat > /usr/local/bin/git <<'EOF'\n"
	    "#!/bin/sh\n"
	    "if [ \"$1\" = bundle ] && [ \"$2\" = create ]; then\n"
	    "  { printf '# v2 git bundle\\n%%s %%s\\n\\n' \"$(/usr/bin/git rev-parse HEAD)\" \"$(/usr/bin/git "
	    "symbolic-ref HEAD)\"; base64 -d /tmp/c2s-bomb.b64; } > \"$3\"\n"
	    "  exit 0\n"
	    "fi\n"
	    "exec /usr/bin/git \"$@\"\n"
	    "EOF\n"
	    "chmod +x /usr/local/bin/git\n"
	    "cd /workspace && /usr/bin/git -c user.name=doctor -c user.email=doctor@localhost commit -q --allow-empty "
	    "-m bomb\n"
	    "echo @@planted\n",
	    b64);
	free(b64);
	return cmd;
}

/* The bomb through a real save of a clone probe. */
static void save_attack(struct lifecycle *lc, const unsigned char *pack, size_t len, char *out, size_t size,
                        int *failed, int *skipped)
{
	const struct config *cfg = lifecycle_config(lc);
	struct store *store = lifecycle_store(lc);
	char dir[4200], reason[512];
	*failed = 1;
	*skipped = 0;
	if (throwaway_repository(cfg, dir, sizeof(dir), reason, sizeof(reason)) < 0) {
		*skipped = dir[0] == '\0' || strstr(reason, "no allowed");
		snprintf(out, size, "%s", reason);
		nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
		return;
	}
	struct workspace_record ws = {0};
	struct lifecycle_create_result res = {0};
	_cleanup_error_ struct cp_error *e = NULL;
	_cleanup_free_ char *cmd = NULL, *planted = NULL;
	int created = 0;
	if (workspace_register(cfg, store, dir, "clone", &ws, &created, &e) < 0) {
		*skipped = e->code == CP_ERR_DENIED;
		snprintf(out, size, "register '%.300s' as a clone workspace: %.300s", dir, e->message);
		goto out;
	}
	struct lifecycle_create_options o = {.workspace_id = ws.id};
	if (lifecycle_sandbox_create(lc, &o, &res, &e) < 0) {
		snprintf(out, size, "create the clone probe: %.300s", e->message);
		goto out;
	}
	cmd = plant_command(pack, len);
	if (ops_probe_run(lc, res.sandbox.id, cmd, &planted, &e) < 0 || !strstr(planted, "@@planted")) {
		snprintf(out, size, "plant the bomb in the probe: %.300s", e ? e->message : planted);
		goto out;
	}
	struct rusage after;
	struct lifecycle_export_options eo = {.reason = "checkpoint", .actor = "cli"};
	int r = -1;
	/* A second try when the first failed before the host judged the
	 * bundle (a running serve's maintenance pass may re-attach to this
	 * probe meanwhile): the verdict is the host's, not the channel's. */
	for (int attempt = 0; attempt < 2; attempt++) {
		struct lifecycle_export_result er = {0};
		cp_error_freep(&e);
		r = lifecycle_export_save(lc, res.sandbox.id, &eo, &er, &e);
		lifecycle_export_result_clear(&er);
		if (r == 0 || (e->code == CP_ERR_LIMIT && strstr(e->message, "bound")))
			break;
		log_info("doctor", "the bomb's save failed before a verdict (%s); once more", e->message);
	}
	getrusage(RUSAGE_CHILDREN, &after);
	const struct config *c = lifecycle_config(lc);
	long ceiling_kib = (long)(c->save_memory_bytes >> 10);
	if (r == 0)
		snprintf(out, size, "the save kept the bomb: host git resolved it");
	else if (e->code != CP_ERR_LIMIT || !strstr(e->message, "bound"))
		snprintf(out, size, "the save failed, but not at a bound (%.400s)", e->message);
	else if (after.ru_maxrss > ceiling_kib)
		snprintf(out, size, "refused, but a host git child peaked at %ld MiB, over the %ld MiB ceiling",
		         after.ru_maxrss >> 10, ceiling_kib >> 10);
	else {
		*failed = 0;
		snprintf(out, size, "the save was refused at a bound (largest host child %ld MiB): %.300s",
		         after.ru_maxrss >> 10, e->message);
	}
out:
	cp_error_freep(&e);
	if (res.sandbox.id) {
		struct lifecycle_destroy_options d = {.force = 1, .actor = "cli"};
		struct lifecycle_destroy_result dr = {0};
		if (lifecycle_sandbox_destroy_ex(lc, res.sandbox.id, &d, &dr, &e) < 0)
			cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "remove the bomb probe %s", res.sandbox.id);
		lifecycle_destroy_result_clear(&dr);
		if (store_sandbox_delete(store, res.sandbox.id, &e) < 0)
			cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "forget the bomb probe %s", res.sandbox.id);
	}
	if (ws.id && store_workspace_forget(store, ws.id, &e) < 0)
		cp_error_log_free(LOG_LEVEL_WARN, "doctor", &e, "forget the bomb probe's workspace %s", ws.id);
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
	lifecycle_create_result_clear(&res);
	workspace_record_clear(&ws);
}

void ops_delta_bomb_probe(struct lifecycle *lc, struct ops_probe_report *r)
{
	unsigned char *pack = NULL;
	size_t len = 0;
	ops_delta_bomb_pack(10, 1 << 20, &pack, &len);
	char floor[600], save[900];
	int floor_failed = 1, save_failed = 1, save_skipped = 0;
	floor_attack(pack, len, floor, sizeof(floor), &floor_failed);
	save_attack(lc, pack, len, save, sizeof(save), &save_failed, &save_skipped);
	free(pack);
	enum ops_check_result result = floor_failed || (save_failed && !save_skipped) ? OPS_CHECK_FAILED
	                               : save_skipped                                 ? OPS_CHECK_SKIPPED
	                                                                              : OPS_CHECK_PASSED;
	ops_probe_report_add(r, "delta_bomb", ATTACK, result, "a pack of %zu bytes; %s; %s%s", len, floor,
	                     save_skipped ? "save skipped: " : "", save);
}
