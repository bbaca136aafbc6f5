/* http_rules.c: what every /ui/ answer and request must satisfy, as pure
 * functions over header values: the session cookie (set, read, cleared),
 * the same-origin rule for requests that change state, the security
 * headers, and HTML escaping of every field a sandbox or a path wrote. */
#include <stdio.h>
#include <string.h>

#include "../base/xalloc.h"
#include "ui.h"

const char *const ui_security_headers[] = {
    "Content-Security-Policy",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options",
    "nosniff",
    "Referrer-Policy",
    "same-origin",
    "Cache-Control",
    "no-store",
    NULL,
};

const char *ui_session_cookie(const char *session, char *buf, size_t size)
{
	if (session && *session)
		snprintf(buf, size, "%s=%s; HttpOnly; SameSite=Strict; Path=/ui", UI_COOKIE_NAME, session);
	else
		snprintf(buf, size, "%s=; HttpOnly; SameSite=Strict; Path=/ui; Max-Age=0", UI_COOKIE_NAME);
	return buf;
}

static int base64url_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

const char *ui_cookie_session(const char *cookie_header, char buf[UI_SECRET_CHARS + 1])
{
	const size_t name_len = strlen(UI_COOKIE_NAME);
	for (const char *p = cookie_header; p && *p;) {
		while (*p == ' ' || *p == ';')
			p++;
		const char *end = strchr(p, ';');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len == name_len + 1 + UI_SECRET_CHARS && !strncmp(p, UI_COOKIE_NAME, name_len) &&
		    p[name_len] == '=') {
			const char *v = p + name_len + 1;
			int ok = 1;
			for (size_t i = 0; i < UI_SECRET_CHARS; i++)
				ok &= base64url_char(v[i]);
			if (ok) {
				memcpy(buf, v, UI_SECRET_CHARS);
				buf[UI_SECRET_CHARS] = '\0';
				return buf;
			}
		}
		p = end;
	}
	return NULL;
}

int ui_origin_same(const char *origin, const char *host)
{
	static const char scheme[] = "http://";
	if (!origin || !host || !*host)
		return 0;
	if (strncmp(origin, scheme, sizeof(scheme) - 1))
		return 0;
	return strcmp(origin + sizeof(scheme) - 1, host) == 0;
}

char *ui_html_escape(const char *text)
{
	if (!text)
		text = "";
	size_t n = 0;
	for (const char *p = text; *p; p++)
		n += *p == '&' ? 5 : *p == '<' || *p == '>' ? 4 : *p == '"' || *p == '\'' ? 6 : 1;
	char *out = xmalloc(n + 1), *o = out;
	for (const char *p = text; *p; p++) {
		const char *ref = *p == '&'    ? "&amp;"
		                  : *p == '<'  ? "&lt;"
		                  : *p == '>'  ? "&gt;"
		                  : *p == '"'  ? "&quot;"
		                  : *p == '\'' ? "&#39;"
		                               : NULL;
		if (ref) {
			size_t l = strlen(ref);
			memcpy(o, ref, l);
			o += l;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
	return out;
}
