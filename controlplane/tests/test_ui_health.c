/* test_ui_health.c: the page's Health view with a stand-in for this
 * program (a shell script answering `status --json` and `doctor --json`,
 * no engine): a flood of "Run doctor" POSTs starts one doctor, the page
 * shows it running and then each attack's outcome, a doctor that says
 * nothing useful is shown as failed in its own words, and ui_free stops a
 * doctor still running at once (its child killed, its thread joined). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "store/store.h"
#include "ui/ui_internal.h"

static char dir[64], exe[128], starts[128];
static struct store *store;
static struct ui *ui;

/* The stand-in: status prints a JSON object with a hostile value; doctor
 * notes its start in STARTS, then does what MODE (a file beside it) says:
 * "sleep" (runs on), "ok" (one blocked and one succeeded attack), "bad"
 * (an error on stderr, exit 1). */
static void write_exe(void)
{
	snprintf(exe, sizeof(exe), "%s/chat2sbx", dir);
	snprintf(starts, sizeof(starts), "%s/starts", dir);
	FILE *f = fopen(exe, "w");
	cr_assert_not_null(f);
	fprintf(f,
	        "#!/bin/sh\n"
	        "d=%s\n"
	        "case \"$1\" in\n"
	        "status) echo '{\"service\": {\"running\": true, \"note\": \"<script>x</script>\"}}' ;;\n"
	        "doctor) echo start >> \"$d/starts\"\n"
	        "  case \"$(cat \"$d/mode\")\" in\n"
	        "  sleep) exec sleep 60 ;;\n"
	        "  ok) echo '{\"passed\": false, \"checks\": [{\"name\": \"docker_socket\", \"attack\": \"a\", "
	        "\"result\": \"passed\", \"detail\": \"refused\"}, {\"name\": \"net\", \"attack\": \"b\", \"result\": "
	        "\"failed\", \"detail\": \"<b>reached</b>\"}]}' ;;\n"
	        "  *) echo 'chat2sbx: the engine <does not> answer' >&2; exit 1 ;;\n"
	        "  esac ;;\n"
	        "esac\n",
	        dir);
	fclose(f);
	cr_assert_eq(chmod(exe, 0700), 0);
}

static void mode(const char *m)
{
	char p[160];
	snprintf(p, sizeof(p), "%s/mode", dir);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs(m, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/c2s-uihealth-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	char db[128];
	snprintf(db, sizeof(db), "%s/reg.sqlite", dir);
	struct cp_error *err = NULL;
	cr_assert_eq(store_open(db, &store, &err), 0, "%s", err ? err->message : "");
	write_exe();
	ui = ui_new(&(struct ui_deps){.store = store, .self_exe = exe});
}

static void teardown(void)
{
	ui_free(ui);
	store_free(store);
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

TestSuite(ui_health, .init = setup, .fini = teardown, .timeout = 60);

/* One request to view fn; returns the body (caller frees) and the status. */
static char *call(void (*fn)(struct ui_req *, const char *), unsigned *status, char *location, size_t size)
{
	struct mcp_page_request in = {.method = "GET", .path = "/ui/health"};
	struct mcp_page_reply out = {0};
	struct ui_req r = {.ui = ui, .in = &in, .out = &out, .now_ms = clock_now_ms()};
	fn(&r, NULL);
	*status = out.status;
	if (location)
		snprintf(location, size, "%s", out.location);
	return r.html;
}

static int count_starts(void)
{
	FILE *f = fopen(starts, "r");
	if (!f)
		return 0;
	int n = 0, c;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* The health page's #doctor state, after waiting up to 20 s for it to
 * leave "running" when wait_done. */
static char *page(int wait_done)
{
	for (int i = 0; i < 200; i++) {
		unsigned st = 0;
		char *html = call(ui_view_health, &st, NULL, 0);
		cr_assert_eq(st, 200);
		if (!wait_done || !strstr(html, "data-state=\"running\""))
			return html;
		free(html);
		usleep(100 * 1000);
	}
	cr_assert_fail("doctor did not finish");
	return NULL;
}

Test(ui_health, a_flood_of_posts_starts_one_doctor_and_free_stops_it)
{
	mode("sleep");
	for (int i = 0; i < 50; i++) {
		unsigned st = 0;
		char loc[64];
		free(call(ui_do_doctor, &st, loc, sizeof(loc)));
		cr_expect_eq(st, 303);
		cr_expect_str_eq(loc, "/ui/health");
	}
	for (int i = 0; i < 50 && count_starts() == 0; i++)
		usleep(20 * 1000);
	usleep(300 * 1000);
	cr_expect_eq(count_starts(), 1, "one doctor for 50 POSTs, not %d", count_starts());
	char *html = page(0);
	cr_expect(strstr(html, "<section id=\"doctor\" data-state=\"running\""), "%s", html);
	cr_expect_null(strstr(html, "data-action=\"doctor\""), "no button while it runs");
	cr_expect_null(strstr(html, "<script>x"), "status is shown as text");
	cr_expect(strstr(html, "&lt;script&gt;x"), "%s", html);
	free(html);
	int64_t audit = 0;
	struct cp_error *err = NULL;
	cr_assert_eq(store_audit_count(store, "doctor.start", &audit, &err), 0);
	cr_expect_eq(audit, 1, "one audit row for one start");

	int64_t t0 = clock_monotonic_ms();
	ui_free(ui);
	ui = NULL;
	cr_expect_lt(clock_monotonic_ms() - t0, 5000, "ui_free stopped the running doctor at once");
}

Test(ui_health, done_shows_each_attack_and_it_can_run_again)
{
	mode("ok");
	unsigned st = 0;
	free(call(ui_do_doctor, &st, NULL, 0));
	char *html = page(1);
	cr_expect(strstr(html, "data-state=\"done\""), "%s", html);
	cr_expect(strstr(html, "<li class=\"attack\" data-outcome=\"blocked\" data-name=\"docker_socket\">"), "%s",
	          html);
	cr_expect(strstr(html, "<li class=\"attack\" data-outcome=\"succeeded\" data-name=\"net\">"), "%s", html);
	cr_expect(strstr(html, "&lt;b&gt;reached"), "%s", html);
	cr_expect(strstr(html, "data-action=\"doctor\""), "finished: it can run again");
	free(html);

	mode("bad");
	free(call(ui_do_doctor, &st, NULL, 0));
	html = page(1);
	cr_expect(strstr(html, "data-state=\"failed\""), "%s", html);
	cr_expect(strstr(html, "chat2sbx: the engine &lt;does not&gt; answer"), "its own words: %s", html);
	free(html);
	cr_expect_eq(count_starts(), 2);
}
