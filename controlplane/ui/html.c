/* html.c: writing the page's HTML (ui_internal.h): ui_put, whose %s always
 * escapes, and the frame every page shares (head, navigation, log out, the
 * live <main>), messages, forms with their CSRF field, times and sizes. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/xalloc.h"
#include "ui_internal.h"

static void append(struct ui_req *r, const char *s, size_t n)
{
	if (r->len + n + 1 > r->cap) {
		size_t cap = r->cap ? r->cap : 4096;
		while (cap < r->len + n + 1)
			cap *= 2;
		r->html = xrealloc(r->html, cap);
		r->cap = cap;
	}
	memcpy(r->html + r->len, s, n);
	r->len += n;
	r->html[r->len] = '\0';
}

static void append_escaped(struct ui_req *r, const char *s)
{
	char *e = ui_html_escape(s);
	append(r, e, strlen(e));
	free(e);
}

void ui_put(struct ui_req *r, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char num[32];
	for (const char *p = fmt; *p;) {
		const char *pct = strchr(p, '%');
		if (!pct) {
			append(r, p, strlen(p));
			break;
		}
		append(r, p, (size_t)(pct - p));
		switch (pct[1]) {
		case 's': append_escaped(r, va_arg(ap, const char *)); break;
		case 'R': {
			const char *raw = va_arg(ap, const char *);
			if (raw)
				append(r, raw, strlen(raw));
			break;
		}
		case 'd': append(r, num, (size_t)snprintf(num, sizeof(num), "%d", va_arg(ap, int))); break;
		case 'u': append(r, num, (size_t)snprintf(num, sizeof(num), "%u", va_arg(ap, unsigned))); break;
		case 'L': append(r, num, (size_t)snprintf(num, sizeof(num), "%" PRId64, va_arg(ap, int64_t))); break;
		case 'z': append(r, num, (size_t)snprintf(num, sizeof(num), "%zu", va_arg(ap, size_t))); break;
		case '%': append(r, "%", 1); break;
		default: abort(); /* a directive this writer does not have: a bug in the caller */
		}
		p = pct + 2;
	}
	va_end(ap);
}

static const struct {
	const char *name, *href, *label;
} nav[] = {
    {"overview", "/ui/", "Overview"},
    {"approvals", "/ui/approvals", "Approvals"},
    {"sandboxes", "/ui/sandboxes", "Sandboxes"},
    {"exports", "/ui/exports", "Saved work"},
    {"health", "/ui/health", "Health"},
    {"activity", "/ui/activity", "Activity"},
};

void ui_page_begin(struct ui_req *r, unsigned status, const char *title, const char *active, int live)
{
	r->out->status = status;
	ui_put(r,
	       "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	       "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
	       "<title>%s · chat2sbx</title>",
	       title);
	if (!r->session[0]) {
		/* Logged out: no script, no style, no navigation, no data. */
		ui_put(r, "</head><body><main id=\"main\">");
		return;
	}
	ui_put(r, "<link rel=\"stylesheet\" href=\"/ui/style.css\">"
	          "<script type=\"module\" src=\"/ui/app.js\"></script></head><body>"
	          "<header><a class=\"brand\" href=\"/ui/\">chat2sbx</a><nav aria-label=\"Pages\"><ul>");
	for (size_t i = 0; i < sizeof(nav) / sizeof(nav[0]); i++)
		ui_put(r, "<li><a href=\"%s\"%R>%s</a></li>", nav[i].href,
		       active && !strcmp(active, nav[i].name) ? " aria-current=\"page\"" : "", nav[i].label);
	ui_put(r, "</ul></nav>");
	ui_form_begin(r, "/ui/logout");
	ui_put(r, "<button type=\"submit\" class=\"quiet\">Log out</button></form></header>"
	          "<p id=\"live-note\" class=\"note\" hidden></p>");
	ui_put(r, "<main id=\"main\" data-live=\"%R\"><h1>%s</h1>", live ? "1" : "0", title);
}

void ui_page_end(struct ui_req *r)
{
	ui_put(r, "</main></body></html>\n");
}

void ui_page_message(struct ui_req *r, unsigned status, const char *heading, const char *text, const char *back_href)
{
	ui_page_begin(r, status, heading, NULL, 0);
	if (!r->session[0])
		ui_put(r, "<h1>%s</h1>", heading);
	ui_put(r, "<div class=\"result %R\" role=\"status\"><p>%s</p></div>", status < 400 ? "ok" : "error", text);
	if (back_href)
		ui_put(r, "<p><a href=\"%s\">Back</a></p>", back_href);
	ui_page_end(r);
}

void ui_form_begin(struct ui_req *r, const char *action)
{
	ui_put(r, "<form method=\"post\" action=\"%s\"><input type=\"hidden\" name=\"csrf\" value=\"%s\">", action,
	       r->csrf);
}

void ui_put_time(struct ui_req *r, int64_t ms)
{
	if (ms <= 0) {
		ui_put(r, "never");
		return;
	}
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	gmtime_r(&t, &tm);
	char iso[32], exact[32], rel[48];
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%SZ", &tm);
	strftime(exact, sizeof(exact), "%Y-%m-%d %H:%M:%S UTC", &tm);
	int64_t d = r->now_ms - ms;
	int future = d < 0;
	int64_t s = (future ? -d : d) / 1000;
	char amount[24];
	if (s < 60)
		snprintf(amount, sizeof(amount), "%" PRId64 " s", s);
	else if (s < 3600)
		snprintf(amount, sizeof(amount), "%" PRId64 " min", s / 60);
	else if (s < 48 * 3600)
		snprintf(amount, sizeof(amount), "%" PRId64 " h %" PRId64 " min", s / 3600, s % 3600 / 60);
	else
		snprintf(amount, sizeof(amount), "%" PRId64 " days", s / 86400);
	if (s < 5)
		snprintf(rel, sizeof(rel), "just now");
	else
		snprintf(rel, sizeof(rel), future ? "in %s" : "%s ago", amount);
	ui_put(r, "<time datetime=\"%s\" title=\"%s\">%s</time> <span class=\"exact\">(%s)</span>", iso, exact, rel,
	       exact);
}

void ui_put_size(struct ui_req *r, int64_t bytes)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)bytes;
	size_t u = 0;
	while (v >= 1024 && u + 1 < sizeof(units) / sizeof(units[0])) {
		v /= 1024;
		u++;
	}
	char text[32];
	if (u == 0)
		snprintf(text, sizeof(text), "%" PRId64 " B", bytes);
	else
		snprintf(text, sizeof(text), "%.1f %s", v, units[u]);
	ui_put(r, "%s", text);
}

static const char *field(const struct mcp_page_field *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return f[i].value;
	return NULL;
}

const char *ui_query(const struct ui_req *r, const char *name)
{
	return field(r->in->query, r->in->n_query, name);
}

const char *ui_form(const struct ui_req *r, const char *name)
{
	return field(r->in->form, r->in->n_form, name);
}

void ui_page_error(struct ui_req *r, const struct cp_error *err, const char *back_href)
{
	unsigned status = 500;
	switch (err ? err->code : CP_ERR_INTERNAL) {
	case CP_ERR_INVALID_ARGUMENT: status = 400; break;
	case CP_ERR_NOT_FOUND: status = 404; break;
	case CP_ERR_DENIED:
	case CP_ERR_APPROVAL_REQUIRED: status = 403; break;
	case CP_ERR_CONFLICT: status = 409; break;
	case CP_ERR_UNAVAILABLE:
	case CP_ERR_LIMIT:
	case CP_ERR_TIMEOUT: status = 503; break;
	default: break;
	}
	ui_page_message(r, status, "That did not work", err ? err->message : "internal error", back_href);
}
