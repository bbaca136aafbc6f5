/* channels.c: the table of open helper channels, one per running sandbox,
 * keyed by sandbox id (each entry also holds what a call needs of its
 * sandbox: call_state.c), and the attach that opens a channel (every path that
 * attaches, create, reconcile and recovery, comes through here). A small
 * array under a mutex: tens of sandboxes at most per machine, so a linear
 * scan is cheaper than a hash table's upkeep. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/cleanup.h"
#include "../base/log.h"
#include "../base/xalloc.h"
#include "lifecycle_internal.h"

/* How long opening a direct channel may take (ms). */
#define LIFECYCLE_DIRECT_TIMEOUT_MS 2000

/* STATE_DIR/attach/<id>; 0 when it does not fit. */
static int owner_path(struct lifecycle *lc, const char *id, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s/attach/%s", lc->cfg->state_dir, id);
	return n > 0 && (size_t)n < size;
}

/* Closes an entry's owner lock; with forget, removes its file first (while
 * still holding it, so no other holder can be inside). */
static void owner_release(struct lifecycle *lc, struct lifecycle_channel *c, int forget)
{
	if (c->owner_fd < 0)
		return;
	char path[4096];
	if (forget && owner_path(lc, c->sandbox_id, path, sizeof(path)))
		(void)unlink(path);
	close(c->owner_fd);
	c->owner_fd = -1;
}

int lifecycle_channel_dir_path(struct lifecycle *lc, const char *id, char *buf, size_t size)
{
	int n = lc->cfg && lc->cfg->state_dir ? snprintf(buf, size, "%s/channel/%s", lc->cfg->state_dir, id) : -1;
	return n > 0 && (size_t)n < size;
}

/* mkdir path 0700 unless it exists; then it must be this user's own
 * directory (not a link) that no one else may enter. */
static int private_dir(const char *path, struct cp_error **err)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "make '%s'", path);
	struct stat st;
	if (lstat(path, &st) < 0)
		return cp_error_set_errno(err, CP_ERR_INTERNAL, errno, "look at '%s'", path);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return cp_error_set(err, CP_ERR_INTERNAL,
		                    "'%s' is not a directory of this user's alone (mode %o, owner %u); remove it", path,
		                    (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
	return 0;
}

int lifecycle_channel_dir_make(struct lifecycle *lc, const char *id, struct cp_error **err)
{
	char path[4096], parent[4096];
	if (!lifecycle_channel_dir_path(lc, id, path, sizeof(path)))
		return cp_error_set(err, CP_ERR_INTERNAL, "the direct channel directory of sandbox '%s' does not fit",
		                    id);
	snprintf(parent, sizeof(parent), "%s/channel", lc->cfg->state_dir);
	if (private_dir(parent, err) < 0 || private_dir(path, err) < 0)
		return -1;
	return 0;
}

void lifecycle_channel_dir_remove(struct lifecycle *lc, const char *id)
{
	char path[4096], sock[4200];
	if (!lifecycle_channel_dir_path(lc, id, path, sizeof(path)))
		return;
	snprintf(sock, sizeof(sock), "%s/s", path);
	(void)unlink(sock);
	if (rmdir(path) < 0 && errno != ENOENT)
		log_debug("lifecycle", "remove '%s': %s", path, strerror(errno));
}

void lifecycle_channel_go_direct(struct lifecycle *lc, const struct sandbox_record *s, struct helper_channel *ch)
{
	char dir[4096];
	struct stat st;
	if (!lifecycle_node_is_local(s->node) || /* a remote node has no path of this machine's */
	    !policy_runtime_direct_channel(s->runtime) || !lifecycle_channel_dir_path(lc, s->id, dir, sizeof(dir)) ||
	    stat(dir, &st) < 0 || lifecycle_channel_own(lc, s->id) != 1)
		return; /* made before the direct channel existed, or used by another process */
	_cleanup_error_ struct cp_error *e = NULL;
	if (helper_channel_connect_direct(ch, dir, LIFECYCLE_DIRECT_TIMEOUT_MS, &e) < 0)
		log_debug("lifecycle", "sandbox %s keeps the attach stream: %s", s->id, e->message);
	else
		log_debug("lifecycle", "sandbox %s: calls go over the direct channel", s->id);
}

/* The entry of id, made (without a channel) when missing; under lc->lock. */
static struct lifecycle_channel *entry_make(struct lifecycle *lc, const char *id)
{
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0)
			return &lc->channels[i];
	lc->channels = xrealloc(lc->channels, (lc->n_channels + 1) * sizeof(*lc->channels));
	lc->channels[lc->n_channels] = (struct lifecycle_channel){.sandbox_id = xstrdup(id), .owner_fd = -1};
	return &lc->channels[lc->n_channels++];
}

int lifecycle_channel_own(struct lifecycle *lc, const char *id)
{
	pthread_mutex_lock(&lc->lock);
	int held = 0;
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0)
			held = lc->channels[i].owner_fd >= 0;
	pthread_mutex_unlock(&lc->lock);
	if (held)
		return 1;
	char path[4096];
	if (!lc->cfg || !lc->cfg->state_dir || !owner_path(lc, id, path, sizeof(path)))
		return -1;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/attach", lc->cfg->state_dir);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
		log_debug("lifecycle", "make '%s': %s", dir, strerror(errno));
		return -1;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		log_debug("lifecycle", "open '%s': %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK)
			return 0;
		log_debug("lifecycle", "lock '%s': %s", path, strerror(e));
		return -1;
	}
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *c = entry_make(lc, id);
	if (c->owner_fd >= 0)
		close(fd); /* another thread of ours took it meanwhile */
	else
		c->owner_fd = fd;
	pthread_mutex_unlock(&lc->lock);
	return 1;
}

struct helper_channel *lifecycle_channel_get(struct lifecycle *lc, const char *id)
{
	struct helper_channel *ch = NULL;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			if (lc->channels[i].channel)
				ch = helper_channel_ref(lc->channels[i].channel);
			break;
		}
	pthread_mutex_unlock(&lc->lock);
	return ch;
}

void lifecycle_channel_put(struct lifecycle *lc, const char *id, struct helper_channel *ch)
{
	pthread_mutex_lock(&lc->lock);
	struct helper_channel *old = NULL;
	struct lifecycle_channel *c = entry_make(lc, id);
	old = c->channel;
	c->channel = ch;
	pthread_mutex_unlock(&lc->lock);
	if (old)
		helper_channel_unref(old);
}

void lifecycle_channel_drop(struct lifecycle *lc, const char *id)
{
	/* The activity held in memory goes to the registry first: the row
	 * outlives the entry (an expired sandbox, a failed one). */
	lifecycle_activity_flush(lc, id);
	struct helper_channel *old = NULL;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			old = lc->channels[i].channel;
			owner_release(lc, &lc->channels[i], 1);
			lifecycle_call_state_clear(&lc->channels[i]);
			free(lc->channels[i].sandbox_id);
			lc->channels[i] = lc->channels[--lc->n_channels];
			break;
		}
	pthread_mutex_unlock(&lc->lock);
	if (old)
		helper_channel_unref(old);
}

size_t lifecycle_node_channels_close(struct lifecycle *lc, const char *node)
{
	size_t n = 0, cap = 0;
	struct helper_channel **close = NULL;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++) {
		struct lifecycle_channel *c = &lc->channels[i];
		if (!c->channel || !c->row.id || !c->row.node || strcmp(c->row.node, node))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			close = xrealloc(close, cap * sizeof(*close));
		}
		close[n++] = helper_channel_ref(c->channel);
	}
	pthread_mutex_unlock(&lc->lock);
	/* Outside the lock: each shuts its stream down and fails what waits. */
	for (size_t i = 0; i < n; i++)
		helper_channel_free(close[i]);
	free(close);
	return n;
}

void lifecycle_channels_clear(struct lifecycle *lc)
{
	pthread_mutex_lock(&lc->lock);
	struct lifecycle_channel *list = lc->channels;
	size_t n = lc->n_channels;
	lc->channels = NULL;
	lc->n_channels = 0;
	pthread_mutex_unlock(&lc->lock);
	for (size_t i = 0; i < n; i++) {
		helper_channel_unref(list[i].channel);
		owner_release(lc, &list[i], 0);
		lifecycle_call_state_clear(&list[i]);
		free(list[i].sandbox_id);
	}
	free(list);
}

size_t lifecycle_channels_drop_dead(struct lifecycle *lc)
{
	struct helper_channel *dead[64];
	size_t n = 0;
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels && n < sizeof(dead) / sizeof(dead[0]); i++) {
		struct helper_channel *ch = lc->channels[i].channel;
		if (ch && !helper_channel_alive(ch)) {
			dead[n++] = ch;
			lc->channels[i].channel = NULL;
			/* The re-attach's call loads the row again. */
			sandbox_record_clear(&lc->channels[i].row);
			lc->channels[i].row = (struct sandbox_record){0};
		}
	}
	pthread_mutex_unlock(&lc->lock);
	/* Outside the lock: the last reference joins the reader thread. */
	for (size_t i = 0; i < n; i++)
		helper_channel_unref(dead[i]);
	return n;
}

void lifecycle_channel_boot_swap(struct lifecycle *lc, const char *id, const char *boot_id, char *prev, size_t size)
{
	if (size)
		prev[0] = '\0';
	pthread_mutex_lock(&lc->lock);
	for (size_t i = 0; i < lc->n_channels; i++)
		if (strcmp(lc->channels[i].sandbox_id, id) == 0) {
			struct lifecycle_channel *c = &lc->channels[i];
			if (size)
				snprintf(prev, size, "%s", c->boot_id);
			snprintf(c->boot_id, sizeof(c->boot_id), "%s", boot_id);
			break;
		}
	pthread_mutex_unlock(&lc->lock);
}

int lifecycle_attach_unlisted(struct lifecycle *lc, const char *sandbox_id, const char *node, const char *container,
                              struct helper_channel **ret_channel, struct cp_error **err)
{
	int fd = -1;
	struct docker_engine *engine = NULL;
	/* Over a remote node's engine the stream comes through attach_tls.c's
	 * relay: the channel reads a plain descriptor either way. */
	if (lifecycle_node_engine(lc, node, &engine, err) < 0 ||
	    docker_container_attach(engine, container, 10000, &fd, err) < 0)
		return -1;
	/* the channel owns fd even on failure */
	return helper_channel_new(fd, sandbox_id, lc->receipts, ret_channel, err);
}

void lifecycle_channel_receipts_set(struct lifecycle *lc, const struct helper_receipts *receipts)
{
	lc->receipts = receipts;
}

int lifecycle_attach(struct lifecycle *lc, const char *sandbox_id, const char *node, const char *container,
                     struct helper_channel **ret_channel, struct cp_error **err)
{
	struct helper_channel *ch = NULL;
	(void)lifecycle_channel_own(lc, sandbox_id); /* when it can (another process may use it) */
	if (lifecycle_attach_unlisted(lc, sandbox_id, node, container, &ch, err) < 0)
		return -1;
	if (ret_channel)
		*ret_channel = helper_channel_ref(ch);
	lifecycle_channel_put(lc, sandbox_id, ch); /* the table takes the first reference */
	return 0;
}
