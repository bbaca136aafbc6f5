/* session.c: the page's login codes, sessions and CSRF tokens (issue 26),
 * kept in memory only: a restart of serve logs everyone out. Secrets are
 * compared in constant time (nettle's memeql_sec); expired entries are
 * dropped at every call. Fixed tables: a code or session beyond them
 * replaces the oldest one, so a flood of logins costs no memory. */
#include <nettle/base64.h>
#include <nettle/memops.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/id.h"
#include "../base/xalloc.h"
#include "ui.h"

struct secret {
	char text[UI_SECRET_CHARS + 1]; /* "" when the slot is free */
};

struct code_slot {
	struct secret code;
	int64_t expires_ms;
};

struct session_slot {
	struct secret id;
	struct secret csrf;
	int64_t last_ms;
};

struct ui_sessions {
	pthread_mutex_t lock;
	int64_t code_ttl_ms;
	int64_t idle_ms;
	struct code_slot codes[UI_MAX_CODES];
	struct session_slot sessions[UI_MAX_SESSIONS];
};

struct ui_sessions *ui_sessions_new(int64_t code_ttl_ms, int64_t idle_ms)
{
	struct ui_sessions *s = xcalloc(1, sizeof(*s));
	pthread_mutex_init(&s->lock, NULL);
	s->code_ttl_ms = code_ttl_ms;
	s->idle_ms = idle_ms;
	return s;
}

void ui_sessions_free(struct ui_sessions *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	explicit_bzero(s, sizeof(*s));
	free(s);
}

/* 32 random bytes as unpadded base64url (43 characters). */
static int secret_new(struct secret *ret, struct cp_error **err)
{
	uint8_t raw[32];
	if (id_random_bytes(raw, sizeof(raw), err) < 0)
		return -1;
	char out[BASE64_ENCODE_LENGTH(sizeof(raw)) + BASE64_ENCODE_FINAL_LENGTH + 1];
	struct base64_encode_ctx ctx;
	base64url_encode_init(&ctx);
	size_t n = base64_encode_update(&ctx, out, sizeof(raw), raw);
	n += base64_encode_final(&ctx, out + n);
	while (n > 0 && out[n - 1] == '=')
		n--;
	explicit_bzero(raw, sizeof(raw));
	if (n != UI_SECRET_CHARS)
		return cp_error_set(err, CP_ERR_INTERNAL, "a page secret came out %zu characters long, not %d", n,
		                    UI_SECRET_CHARS);
	memcpy(ret->text, out, n);
	ret->text[n] = '\0';
	return 0;
}

/* 1 when candidate (any text) equals the live secret, in time that does
 * not depend on where they differ. */
static int secret_eq(const struct secret *live, const char *candidate)
{
	if (!live->text[0] || !candidate || strnlen(candidate, UI_SECRET_CHARS + 1) != UI_SECRET_CHARS)
		return 0;
	return memeql_sec(live->text, candidate, UI_SECRET_CHARS);
}

static void secret_clear(struct secret *sec)
{
	explicit_bzero(sec, sizeof(*sec));
}

/* Drops expired codes and idle sessions (under the lock). */
static void sweep(struct ui_sessions *s, int64_t now_ms)
{
	for (size_t i = 0; i < UI_MAX_CODES; i++)
		if (s->codes[i].code.text[0] && now_ms >= s->codes[i].expires_ms)
			secret_clear(&s->codes[i].code);
	for (size_t i = 0; i < UI_MAX_SESSIONS; i++)
		if (s->sessions[i].id.text[0] && now_ms - s->sessions[i].last_ms >= s->idle_ms) {
			secret_clear(&s->sessions[i].id);
			secret_clear(&s->sessions[i].csrf);
		}
}

int ui_code_new(struct ui_sessions *s, int64_t now_ms, char code[UI_SECRET_CHARS + 1], struct cp_error **err)
{
	struct secret fresh;
	if (secret_new(&fresh, err) < 0)
		return -1;
	pthread_mutex_lock(&s->lock);
	sweep(s, now_ms);
	size_t slot = 0;
	for (size_t i = 0; i < UI_MAX_CODES; i++) {
		if (!s->codes[i].code.text[0]) {
			slot = i;
			break;
		}
		if (s->codes[i].expires_ms < s->codes[slot].expires_ms)
			slot = i;
	}
	s->codes[slot].code = fresh;
	s->codes[slot].expires_ms = now_ms + s->code_ttl_ms;
	pthread_mutex_unlock(&s->lock);
	memcpy(code, fresh.text, UI_SECRET_CHARS + 1);
	secret_clear(&fresh);
	return 0;
}

int ui_code_redeem(struct ui_sessions *s, const char *code, int64_t now_ms, char session[UI_SECRET_CHARS + 1],
                   char csrf[UI_SECRET_CHARS + 1], struct cp_error **err)
{
	struct session_slot fresh = {.last_ms = now_ms};
	pthread_mutex_lock(&s->lock);
	sweep(s, now_ms);
	int found = 0;
	for (size_t i = 0; i < UI_MAX_CODES; i++)
		if (secret_eq(&s->codes[i].code, code)) {
			secret_clear(&s->codes[i].code); /* spent, whatever follows */
			found = 1;
		}
	if (!found) {
		pthread_mutex_unlock(&s->lock);
		return cp_error_set(err, CP_ERR_DENIED,
		                    "this login link is not valid: it was used already, has expired (after %lld s) "
		                    "or was never made here; run 'chat2sbx ui' for a new one",
		                    (long long)(s->code_ttl_ms / 1000));
	}
	if (secret_new(&fresh.id, err) < 0 || secret_new(&fresh.csrf, err) < 0) {
		pthread_mutex_unlock(&s->lock);
		return -1;
	}
	size_t slot = 0;
	for (size_t i = 0; i < UI_MAX_SESSIONS; i++) {
		if (!s->sessions[i].id.text[0]) {
			slot = i;
			break;
		}
		if (s->sessions[i].last_ms < s->sessions[slot].last_ms)
			slot = i;
	}
	s->sessions[slot] = fresh;
	pthread_mutex_unlock(&s->lock);
	memcpy(session, fresh.id.text, UI_SECRET_CHARS + 1);
	memcpy(csrf, fresh.csrf.text, UI_SECRET_CHARS + 1);
	explicit_bzero(&fresh, sizeof(fresh));
	return 0;
}

/* The live session slot SESSION names, or NULL (under the lock, swept). */
static struct session_slot *find_session(struct ui_sessions *s, const char *session)
{
	for (size_t i = 0; i < UI_MAX_SESSIONS; i++)
		if (secret_eq(&s->sessions[i].id, session))
			return &s->sessions[i];
	return NULL;
}

int ui_session_touch(struct ui_sessions *s, const char *session, int64_t now_ms, char csrf[UI_SECRET_CHARS + 1])
{
	pthread_mutex_lock(&s->lock);
	sweep(s, now_ms);
	struct session_slot *slot = find_session(s, session);
	if (slot) {
		slot->last_ms = now_ms;
		if (csrf)
			memcpy(csrf, slot->csrf.text, UI_SECRET_CHARS + 1);
	}
	pthread_mutex_unlock(&s->lock);
	return slot != NULL;
}

int ui_session_csrf_ok(struct ui_sessions *s, const char *session, const char *token, int64_t now_ms)
{
	pthread_mutex_lock(&s->lock);
	sweep(s, now_ms);
	struct session_slot *slot = find_session(s, session);
	int ok = 0;
	if (slot) {
		slot->last_ms = now_ms;
		ok = secret_eq(&slot->csrf, token);
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

void ui_session_end(struct ui_sessions *s, const char *session)
{
	pthread_mutex_lock(&s->lock);
	struct session_slot *slot = find_session(s, session);
	if (slot) {
		secret_clear(&slot->id);
		secret_clear(&slot->csrf);
	}
	pthread_mutex_unlock(&s->lock);
}
