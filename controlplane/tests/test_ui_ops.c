/* test_ui_ops.c: the page's saved work, health and activity views (issue
 * 26) over plain data, without an engine: every branch name, commit
 * subject, file name, message and path an export carries, every string of
 * status's and doctor's JSON, is shown as text (a `<script>` or a quote
 * from a sandbox never becomes markup); doctor's results become the
 * outcomes the page promises; the activity filters refuse what is not a
 * sandbox id, a tool word or a page number. */
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "export/export.h"
#include "store/store.h"
#include "ui/ui_internal.h"

#define HOSTILE "<script>alert(\"x\")</script>'\"><img src=x onerror=alert(1)>"

static struct ui_req req(void)
{
	struct ui_req r = {.now_ms = 1700000000000LL};
	snprintf(r.csrf, sizeof(r.csrf), "%s", "tok");
	return r;
}

/* No markup from the data: no tag it carried, no quote of it raw (the
 * tests also look for each value written escaped). */
static void expect_inert(const char *html)
{
	cr_assert_not_null(html);
	cr_expect_null(strcasestr(html, "<script"), "a <script> got through: %s", html);
	cr_expect_null(strcasestr(html, "<img"), "an <img> got through: %s", html);
	cr_expect_null(strstr(html, "'\""), "quotes written raw: %s", html);
}

static struct json_object *hostile_manifest(void)
{
	struct json_object *m = json_object_new_object();
	json_object_object_add(m, "host_path", json_object_new_string("/home/u/" HOSTILE));
	json_object_object_add(m, "thin", json_object_new_boolean(1));
	json_object_object_add(m, "shares_bundle_of", json_object_new_string("exp_" HOSTILE));
	struct json_object *refs = json_object_new_array();
	struct json_object *ref = json_object_new_object();
	json_object_object_add(ref, "name", json_object_new_string("refs/heads/feat" HOSTILE));
	json_object_object_add(ref, "kind", json_object_new_string("branch"));
	json_object_object_add(ref, "oid", json_object_new_string("0123456789abcdef0123" HOSTILE));
	json_object_object_add(ref, "host_ref", json_object_new_string("refs/remotes/chat2sbx/sbx_a/feat" HOSTILE));
	json_object_object_add(ref, "new_commits", json_object_new_int64(3));
	struct json_object *commits = json_object_new_array(), *c = json_object_new_object();
	json_object_object_add(c, "oid", json_object_new_string(HOSTILE));
	json_object_object_add(c, "subject", json_object_new_string("fix: " HOSTILE));
	json_object_array_add(commits, c);
	json_object_object_add(ref, "commits", commits);
	struct json_object *files = json_object_new_array();
	json_object_array_add(files, json_object_new_string("src/" HOSTILE ".c"));
	json_object_object_add(ref, "files", files);
	json_object_array_add(refs, ref);
	/* A second ref whose name collides: no host ref. */
	struct json_object *ref2 = json_object_new_object();
	json_object_object_add(ref2, "name", json_object_new_string("refs/tags/" HOSTILE));
	json_object_object_add(ref2, "kind", json_object_new_string("tag" HOSTILE));
	json_object_array_add(refs, ref2);
	json_object_object_add(m, "refs", refs);
	struct json_object *snap = json_object_new_object(), *sf = json_object_new_array(),
	                   *f = json_object_new_object();
	json_object_object_add(snap, "oid", json_object_new_string("abc"));
	json_object_object_add(snap, "file_count", json_object_new_int64(1));
	json_object_object_add(f, "status", json_object_new_string("M" HOSTILE));
	json_object_object_add(f, "path", json_object_new_string(HOSTILE));
	json_object_array_add(sf, f);
	json_object_object_add(snap, "files", sf);
	json_object_object_add(m, "snapshot", snap);
	return m;
}

static struct export_record hostile_record(void)
{
	return (struct export_record){.id = "exp_abcdefghijklmnopqrst",
	                              .sandbox_id = "sbx_" HOSTILE,
	                              .workspace_id = "ws_" HOSTILE,
	                              .kind = "git",
	                              .reason = "checkpoint" HOSTILE,
	                              .path = "/data/" HOSTILE,
	                              .bytes = 2048,
	                              .refs = 2,
	                              .commits = 3,
	                              .message = "saved " HOSTILE,
	                              .created_at_ms = 1699999990000LL,
	                              .applied_count = 1,
	                              .applied_at_ms = 1699999995000LL};
}

Test(ui_ops, an_exports_names_subjects_and_files_are_text)
{
	struct json_object *m = hostile_manifest();
	struct export_record x = hostile_record();
	struct ui_req r = req();
	ui_put_export_row(&r, &x, "/repo/" HOSTILE, m);
	expect_inert(r.html);
	cr_expect(strstr(r.html, "<tr data-export=\"exp_abcdefghijklmnopqrst\" data-state=\"applied\">"), "%s", r.html);
	cr_expect(strstr(r.html, "feat&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&#39;&quot;&gt;&lt;img"),
	          "the branch name is shown as text: %s", r.html);
	free(r.html);

	r = req();
	ui_put_export_detail(&r, &x, m);
	expect_inert(r.html);
	cr_expect(strstr(r.html, "fix: &lt;script&gt;"), "the subject is shown: %s", r.html);
	cr_expect(strstr(r.html, "src/&lt;script&gt;"), "the file is shown: %s", r.html);
	cr_expect(strstr(r.html, "saved &lt;script&gt;"), "the message is shown: %s", r.html);
	cr_expect(strstr(r.html, "(not applied: the name collides)"), "%s", r.html);
	cr_expect(strstr(r.html, "data-action=\"apply\" href=\"/ui/exports/exp_abcdefghijklmnopqrst/apply\""), "%s",
	          r.html);
	cr_expect(strstr(r.html, "… at least") == NULL && strstr(r.html, "3 commits in all"),
	          "more commits than listed are counted: %s", r.html);
	free(r.html);

	/* Without a manifest (unreadable), and a plain copy: no apply link. */
	x.kind = "tar";
	r = req();
	ui_put_export_detail(&r, &x, NULL);
	expect_inert(r.html);
	cr_expect_null(strstr(r.html, "data-action=\"apply\""), "a plain copy is applied with --to only");
	cr_expect(strstr(r.html, "--to DIR"));
	free(r.html);
	json_object_put(m);
}

Test(ui_ops, the_apply_result_shows_the_clis_words_as_text)
{
	char *refs[] = {"refs/remotes/chat2sbx/sbx_a/" HOSTILE " 0123", NULL};
	char *skipped[] = {"branch " HOSTILE " was not applied", NULL};
	struct export_apply_result res = {.target = "/repo/" HOSTILE,
	                                  .kind = "git",
	                                  .refs_updated = 1,
	                                  .skipped = skipped,
	                                  .next_steps = "  git merge 'chat2sbx/sbx_a/" HOSTILE "'\n",
	                                  .refs = refs};
	struct ui_req r = req();
	ui_put_apply_result(&r, "exp_abcdefghijklmnopqrst", &res);
	expect_inert(r.html);
	cr_expect(strstr(r.html, "<div class=\"result ok\""), "%s", r.html);
	cr_expect(strstr(r.html, "<pre class=\"commands\">  git merge &#39;chat2sbx/sbx_a/&lt;script&gt;"), "%s",
	          r.html);
	cr_expect(strstr(r.html, "applied export exp_abcdefghijklmnopqrst to /repo/&lt;script&gt;"), "%s", r.html);
	cr_expect(strstr(r.html, "were not touched"), "%s", r.html);
	free(r.html);
}

Test(ui_ops, status_json_is_text)
{
	struct json_object *o = json_object_new_object(), *in = json_object_new_object(),
	                   *list = json_object_new_array();
	json_object_object_add(in, "k<b>", json_object_new_string(HOSTILE));
	json_object_array_add(list, json_object_new_int(1));
	json_object_array_add(list, json_object_new_boolean(1));
	json_object_array_add(list, NULL);
	json_object_array_add(list, json_object_new_string("<img src=x>"));
	json_object_object_add(in, "list", list);
	json_object_object_add(o, HOSTILE, in);
	cr_assert_not_null(o);
	struct ui_req r = req();
	ui_put_status(&r, o);
	expect_inert(r.html);
	cr_expect(strstr(r.html, "<dt>k&lt;b&gt;</dt>"), "%s", r.html);
	cr_expect(strstr(r.html, "<li>&lt;img src=x&gt;</li>"), "%s", r.html);
	free(r.html);
	json_object_put(o);
}

Test(ui_ops, doctor_outcomes_and_its_words_are_text)
{
	const char *out = "{\"passed\": false, \"checks\": ["
	                  "{\"name\": \"docker_socket\", \"attack\": \"reach the engine\", \"result\": \"passed\", "
	                  "\"detail\": \"<script>alert(1)</script>\"},"
	                  "{\"name\": \"host\\\"><img src=x>\", \"attack\": \"read /etc\", \"result\": \"failed\", "
	                  "\"detail\": \"read it\"},"
	                  "{\"name\": \"vm\", \"attack\": \"x\", \"result\": \"skipped\", \"detail\": \"\"},"
	                  "{\"name\": \"odd\", \"attack\": \"x\", \"result\": \"<b>\"}]}";
	struct ui_req r = req();
	ui_put_doctor(&r, "done", out, NULL, 1, 2);
	expect_inert(r.html);
	cr_expect(strstr(r.html, "<section id=\"doctor\" data-state=\"done\""), "%s", r.html);
	cr_expect(strstr(r.html, "<li class=\"attack\" data-outcome=\"blocked\" data-name=\"docker_socket\">"), "%s",
	          r.html);
	cr_expect(strstr(r.html, "data-outcome=\"succeeded\" data-name=\"host&quot;&gt;&lt;img src=x&gt;\""), "%s",
	          r.html);
	cr_expect(strstr(r.html, "data-outcome=\"skipped\" data-name=\"vm\""), "%s", r.html);
	cr_expect(strstr(r.html, "data-outcome=\"unknown\" data-name=\"odd\""), "%s", r.html);
	cr_expect(strstr(r.html, "<div class=\"result error\">"), "an attack succeeded: said as an error");
	cr_expect(strstr(r.html, "data-action=\"doctor\""), "it can run again");
	free(r.html);

	r = req();
	ui_put_doctor(&r, "running", NULL, NULL, 1, 0);
	cr_expect(strstr(r.html, "data-state=\"running\""));
	cr_expect_null(strstr(r.html, "data-action=\"doctor\""), "no second start while it runs");
	free(r.html);

	r = req();
	ui_put_doctor(&r, "failed", NULL, "chat2sbx: " HOSTILE, 1, 2);
	expect_inert(r.html);
	cr_expect(strstr(r.html, "data-state=\"failed\""));
	free(r.html);

	const char *bad[] = {"", "{", "[]", "{\"checks\": 3}", "<script>"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		r = req();
		ui_put_doctor(&r, "done", bad[i], NULL, 1, 2);
		expect_inert(r.html);
		cr_expect(strstr(r.html, "was not the JSON it prints"), "case %zu: %s", i, r.html);
		free(r.html);
	}
}

Test(ui_ops, activity_filters_are_checked)
{
	struct ui_activity_query q;
	cr_expect_null(ui_activity_query_parse(NULL, NULL, NULL, &q));
	cr_expect(q.sandbox == NULL && q.tool == NULL && q.page == 1);
	cr_expect_null(ui_activity_query_parse("", "", "", &q), "empty fields are no filter");
	cr_expect(q.sandbox == NULL && q.tool == NULL && q.page == 1);
	cr_expect_null(ui_activity_query_parse("sbx_abcdefghijklmnopqrst", "approval.approve", "10000", &q));
	cr_expect_str_eq(q.sandbox, "sbx_abcdefghijklmnopqrst");
	cr_expect_str_eq(q.tool, "approval.approve");
	cr_expect_eq(q.page, 10000);
	cr_expect_null(ui_activity_query_parse(NULL, "notifications/initialized", "7", &q));
	cr_expect_eq(q.page, 7);

	const char *bad_sandbox[] = {"sbx_",
	                             "sbx_abc",
	                             "ws_abcdefghijklmnopqrst",
	                             "sbx_abcdefghijklmnopqrs<",
	                             "sbx_abcdefghijklmnopqrst ",
	                             "sbx_ABCDEFGHIJKLMNOPQRST",
	                             "' OR 1=1 --"};
	for (size_t i = 0; i < sizeof(bad_sandbox) / sizeof(bad_sandbox[0]); i++) {
		const char *why = ui_activity_query_parse(bad_sandbox[i], NULL, NULL, &q);
		cr_expect(why && strstr(why, "sandbox filter"), "sandbox '%s'", bad_sandbox[i]);
	}
	char long_tool[70];
	memset(long_tool, 'a', 65);
	long_tool[65] = '\0';
	const char *bad_tool[] = {"Bash", "bash;", "a b", "<script>", "%", "bash\n", "x1", long_tool};
	for (size_t i = 0; i < sizeof(bad_tool) / sizeof(bad_tool[0]); i++) {
		const char *why = ui_activity_query_parse(NULL, bad_tool[i], NULL, &q);
		cr_expect(why && strstr(why, "tool filter"), "tool '%s'", bad_tool[i]);
	}
	long_tool[64] = '\0';
	cr_expect_null(ui_activity_query_parse(NULL, long_tool, NULL, &q), "64 is the longest");
	const char *bad_page[] = {"0", "-1", "10001", "1x", "x", " 1", "+1", "99999999999999999999999", "1.5"};
	for (size_t i = 0; i < sizeof(bad_page) / sizeof(bad_page[0]); i++) {
		const char *why = ui_activity_query_parse(NULL, NULL, bad_page[i], &q);
		cr_expect(why && strstr(why, "page must be"), "page '%s'", bad_page[i]);
	}
}
