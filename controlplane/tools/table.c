/* table.c: the tool table (as redis's command table): name, description a
 * model can follow, each argument and each result field declared once as
 * data (struct mcp_arg), annotations true to what the tool does. tools/list's
 * schemas are generated from it and every call is checked against it before
 * its handler runs (mcp/tool_schema.c, mcp/tool_args.c); nothing else lists
 * tools. ChatGPT asks the user to confirm every tool without readOnlyHint
 * (DESIGN.md, MCP surface). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "proto.h" /* template/helper/proto.h: the helper's own bounds */
#include "tools_internal.h"

/* The longest timeout_ms a bash command may ask for: 7 days. */
#define TIMEOUT_MAX_MS (INT64_C(7) * 24 * 3600 * 1000)

const char tools_instructions[] =
    "chat2sbx gives you disposable Linux sandboxes (containers). Workflow: 1) call sandbox_create once and keep "
    "its sandbox_id; pass it to every other tool. 2) Run commands with bash; it returns a session_id and waits "
    "up to yield_time_ms. If status is running, call bash_poll with that session_id until status is exited, "
    "killed or timed_out. 3) Use read, write, edit, apply_patch, search and list for files under /workspace. 4) Call "
    "sandbox_destroy when done.\n"
    "Details: /workspace is persistent (a managed workspace on the host, kept after destroy). "
    "In another conversation, find existing sandboxes with sandbox_list and load one with sandbox_get. "
    "Commands have no timeout unless you pass timeout_ms; stop a session with bash_stop. Standard input is "
    "at end-of-file, so prompts do not hang. Output over the per-call bound is never lost: has_more_output "
    "says to poll again, and log_path holds the full output inside the sandbox. To let the user open a web "
    "server running in the sandbox, start it listening on 0.0.0.0 and call sandbox_expose with its port; give "
    "them the url it returns. You are root in the sandbox, but setuid and setgid bits cannot be set (chmod u+s, "
    "install -m 4755 fail with Operation not permitted), so packages that ship setuid programs (sudo, cron) "
    "do not install; you need none of them as root. A clone of the user's repository (workspace_mode clone) "
    "keeps your commits inside the sandbox: save a checkpoint with sandbox_export; the person brings it home "
    "with the command it returns.";

#define ARG_SANDBOX_ID                                                                                                 \
	{                                                                                                              \
		.name = "sandbox_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED, .id_prefix = "sbx_",          \
		.description = "The sandbox_id returned by sandbox_create or sandbox_list (sbx_...)",                  \
		.hint = "call sandbox_list to see the sandboxes, or sandbox_create"                                    \
	}

/* yield_time_ms's description names the defaults where they are written:
 * the helper's (proto.h) and the setting's (config.c's table); filled by
 * tools_table_plain before the table is served. */
static char yield_description[160];

#define ARG_YIELD                                                                                                      \
	{                                                                                                              \
		.name = "yield_time_ms", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_MIN | MCP_ARG_MAX, .min = 0,        \
		.max = 60000, .description = yield_description                                                         \
	}

#define ARG_TAIL                                                                                                       \
	{                                                                                                              \
		.name = "tail", .type = MCP_ARG_BOOLEAN,                                                               \
		.description = "When the output is longer than one answer holds, show its start and its end with a "   \
		               "note of what was left out, even while the command runs (default: only once it ended)"  \
	}

#define ARG_SESSION_ID                                                                                                 \
	{                                                                                                              \
		.name = "session_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED, .id_prefix = "bash_",         \
		.description = "The session_id a bash call returned (bash_...)",                                       \
		.hint = "use the session_id a bash call returned"                                                      \
	}

#define ARG_FILE_PATH                                                                                                  \
	{                                                                                                              \
		.name = "path", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED, .min_length = 1,                    \
		.description = "File path", .hint = "give a file path relative to /workspace or absolute"              \
	}

#define ARG_EXPECTED_SHA256                                                                                            \
	{                                                                                                              \
		.name = "expected_sha256", .type = MCP_ARG_STRING,                                                     \
		.description = "The sha256 a read returned: refuse, changing nothing, if the file changed since"       \
	}

static const struct mcp_arg apply_patch_expected_item[] = {
    {.name = "path", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "sha256", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {0}};

static const struct mcp_arg sandbox_create_args[] = {
    {.name = "memory",
     .type = MCP_ARG_STRING,
     .description = "Memory ceiling such as \"512m\" or \"4g\" (default: the server's ceiling, see sandbox_get "
                    "memory_bytes; at most this machine's memory)"},
    {.name = "disk",
     .type = MCP_ARG_STRING,
     .description =
         "Size of the sandbox's own disk such as \"20g\" (only where the engine can limit it; sandbox_get says)"},
    {.name = "cpus",
     .type = MCP_ARG_NUMBER,
     .flags = MCP_ARG_TEXT_TOO,
     .description =
         "CPU ceiling as a number such as 1.5 (more than 0, at most the machine's CPU count; default: no ceiling)"},
    {.name = "pids_limit",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 16,
     .max = 32768,
     .description = "Most processes and threads at once (default and upper end: the server's share per sandbox, at "
                    "most 4096 by default)"},
    {.name = "network",
     .type = MCP_ARG_BOOLEAN,
     .description = "false: no network interface but loopback (default true; a runtime without network, such as gVisor "
                    "here, is always false)"},
    {.name = "workspace_id",
     .type = MCP_ARG_STRING,
     .id_prefix = "ws_",
     .description = "Existing workspace to attach (ws_..., from workspace_list)",
     .hint = "call workspace_list to see the workspaces"},
    {.name = "workspace_path",
     .type = MCP_ARG_STRING,
     .description =
         "Absolute path of a directory on the user's machine (below an allowed root such as ~/repositories)"},
    {.name = "workspace_mode",
     .type = MCP_ARG_STRING,
     .enum_values = (const char *const[]){"managed", "clone", "direct", NULL},
     .description = "With workspace_path: clone (a private copy, default) or direct (the directory itself, "
                    "read-write). Without it: managed (the default, may be omitted)"},
    {.name = "node",
     .type = MCP_ARG_STRING,
     .min_length = 1,
     .description = "The machine to create it on: local, or a node the operator added (default: chosen by "
                    "free memory; a new managed workspace or a clone may go to another node). With workspace_mode "
                    "direct it names whose directory workspace_path is (default local): a directory of a node "
                    "must lie below a host root its operator gave, needs an approval like one of this machine, "
                    "and its sandbox runs on that node with the directory's .git read-only"},
    {0}};
static const char *const UNSAVED_UNKNOWN[] = {"unknown", NULL};

static const struct mcp_arg sandbox_out[] = {
    {.name = "sandbox_id", .type = MCP_ARG_STRING},
    {.name = "status",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .enum_values = (const char *const[]){"creating", "running", "failed", "removed", "expired", "removing",
                                          "approval_required", NULL}},
    {.name = "workspace_id", .type = MCP_ARG_STRING},
    {.name = "workspace_mode", .type = MCP_ARG_STRING},
    {.name = "workspace_path", .type = MCP_ARG_STRING, .description = "Host directory behind /workspace"},
    {.name = "workspace_volume",
     .type = MCP_ARG_STRING,
     .description = "On another node: the engine volume there that holds the workspace, kept after the sandbox"},
    {.name = "image", .type = MCP_ARG_STRING},
    {.name = "container_id", .type = MCP_ARG_STRING},
    {.name = "memory_bytes", .type = MCP_ARG_INTEGER},
    {.name = "network", .type = MCP_ARG_BOOLEAN},
    {.name = "disk_bytes", .type = MCP_ARG_INTEGER, .description = "Size limit of the sandbox's own disk"},
    {.name = "disk_note", .type = MCP_ARG_STRING},
    {.name = "paused",
     .type = MCP_ARG_STRING,
     .description = "Why the sandbox is paused (a full disk); it resumes on its own"},
    {.name = "cpus", .type = MCP_ARG_NUMBER},
    {.name = "options_note", .type = MCP_ARG_STRING},
    {.name = "runtime",
     .type = MCP_ARG_STRING,
     .description = "vm: a microVM with its own kernel and Docker Engine; otherwise the container runtime"},
    {.name = "accel", .type = MCP_ARG_STRING, .description = "vm: kvm or tcg (emulated, much slower)"},
    {.name = "node",
     .type = MCP_ARG_STRING,
     .description = "The machine it runs on: local, or a node added with 'chat2sbx node add'"},
    {.name = "accel_note", .type = MCP_ARG_STRING},
    {.name = "failure_reason", .type = MCP_ARG_STRING},
    {.name = "created_at", .type = MCP_ARG_STRING},
    {.name = "last_activity_at", .type = MCP_ARG_STRING},
    {.name = "removed_at", .type = MCP_ARG_STRING},
    {.name = "reused", .type = MCP_ARG_BOOLEAN},
    {.name = "workspace_kept", .type = MCP_ARG_BOOLEAN},
    {.name = "agents_md", .type = MCP_ARG_STRING},
    {.name = "bash_sessions", .type = MCP_ARG_ARRAY},
    {.name = "bash_sessions_total", .type = MCP_ARG_INTEGER},
    {.name = "bash_sessions_truncated", .type = MCP_ARG_BOOLEAN},
    {.name = "helper_error", .type = MCP_ARG_STRING},
    {.name = "host_path", .type = MCP_ARG_STRING},
    {.name = "copy_session_id", .type = MCP_ARG_STRING},
    {.name = "message", .type = MCP_ARG_STRING},
    {.name = "approval_id", .type = MCP_ARG_STRING},
    {.name = "exposures",
     .type = MCP_ARG_ARRAY,
     .description = "Ports published with sandbox_expose: port, host, host_port, url"},
    {.name = "unsaved_work",
     .type = MCP_ARG_BOOLEAN,
     .flags = MCP_ARG_OR_ENUM,
     .enum_values = UNSAVED_UNKNOWN,
     .description = "Clone mode: true when there are commits or changes since the last export, false when "
                    "not, \"unknown\" when the sandbox did not answer quickly (checked at most once a minute)"},
    {.name = "last_export", .type = MCP_ARG_OBJECT, .description = "The newest saved export of this sandbox"},
    {.name = "export", .type = MCP_ARG_OBJECT, .description = "sandbox_destroy: the export its work was saved in"},
    {.name = "lost",
     .type = MCP_ARG_STRING,
     .description = "the person's destroy with force after a failed save: what is gone"},
    {.name = "kept_for_person",
     .type = MCP_ARG_BOOLEAN,
     .description = "sandbox_destroy with force after a failed save: stopped and kept; only the person can "
                    "discard it"},
    {0}};

static const struct mcp_arg sandbox_list_args[] = {{0}};
static const struct mcp_arg sandbox_list_out[] = {
    {.name = "sandboxes", .type = MCP_ARG_ARRAY, .flags = MCP_ARG_REQUIRED},
    {.name = "active_count", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_REQUIRED},
    {.name = "max_active_sandboxes", .type = MCP_ARG_INTEGER},
    {.name = "unsaved_count",
     .type = MCP_ARG_INTEGER,
     .description = "Clone sandboxes with work not saved in an export"},
    {0}};

static const struct mcp_arg sandbox_get_args[] = {ARG_SANDBOX_ID, {0}};

static const struct mcp_arg sandbox_destroy_args[] = {
    ARG_SANDBOX_ID,
    {.name = "force",
     .type = MCP_ARG_BOOLEAN,
     .description = "When the work of a clone sandbox cannot be saved: stop it and keep it for the person "
                    "instead of leaving it running (default false). Only the person can discard unsaved work"},
    {0}};

static const struct mcp_arg sandbox_export_args[] = {
    ARG_SANDBOX_ID,
    {.name = "message",
     .type = MCP_ARG_STRING,
     .max_length = 1000,
     .description = "What this checkpoint is (kept with it; the person sees it in chat2sbx export show)"},
    {0}};
static const struct mcp_arg sandbox_export_out[] = {
    {.name = "sandbox_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "export_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "kind",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .enum_values = (const char *const[]){"git", "tar", "none", NULL},
     .description = "git: a bundle; tar: a plain copy; none: nothing new since the sandbox was made"},
    {.name = "saved",
     .type = MCP_ARG_BOOLEAN,
     .flags = MCP_ARG_REQUIRED,
     .description = "false: the state was saved already, export_id is that export"},
    {.name = "reason", .type = MCP_ARG_STRING},
    {.name = "refs", .type = MCP_ARG_INTEGER, .description = "Branches and tags"},
    {.name = "commits_ahead", .type = MCP_ARG_INTEGER, .description = "Commits not in the approved repository"},
    {.name = "dirty_files", .type = MCP_ARG_INTEGER, .description = "Uncommitted and untracked files in the snapshot"},
    {.name = "bytes", .type = MCP_ARG_INTEGER},
    {.name = "created_at", .type = MCP_ARG_STRING},
    {.name = "message", .type = MCP_ARG_STRING},
    {.name = "command",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .description = "What the person runs on their machine to bring it home"},
    {0}};

static const struct mcp_arg sandbox_expose_args[] = {
    ARG_SANDBOX_ID,
    {.name = "port",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 1,
     .max = 65535,
     .description = "TCP port the server inside the sandbox listens on, e.g. 8000",
     .hint = "give the TCP port the server inside the sandbox listens on, for example 8000"},
    {0}};
static const struct mcp_arg sandbox_expose_out[] = {
    {.name = "sandbox_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "port", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_REQUIRED, .description = "The port inside the sandbox"},
    {.name = "host",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .description = "Host address it is published on"},
    {.name = "host_port", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_REQUIRED},
    {.name = "url",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .description = "Open this on the user's machine"},
    {.name = "created",
     .type = MCP_ARG_BOOLEAN,
     .description = "false: the port was exposed already; this is the same mapping"},
    {.name = "created_at", .type = MCP_ARG_STRING},
    {.name = "message", .type = MCP_ARG_STRING},
    {0}};

static const struct mcp_arg workspace_list_args[] = {{0}};
static const struct mcp_arg workspace_list_out[] = {
    {.name = "workspaces", .type = MCP_ARG_ARRAY, .flags = MCP_ARG_REQUIRED}, {0}};

static const struct mcp_arg bash_args[] = {
    ARG_SANDBOX_ID,
    {.name = "command",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .min_length = 1,
     .description = "Shell command, run with bash -c",
     .hint = "give a shell command; a longer script goes in a file (write) that bash runs"},
    {.name = "cwd", .type = MCP_ARG_STRING, .description = "Working directory inside the sandbox (default /workspace)"},
    ARG_YIELD,
    {.name = "timeout_ms",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 1,
     .max = TIMEOUT_MAX_MS,
     .description = "Stop the command and everything it started after this long (SIGTERM, then SIGKILL after 1.5 s); "
                    "default: no limit"},
    {.name = "interactive",
     .type = MCP_ARG_BOOLEAN,
     .description =
         "Keep standard input open so bash_input can answer prompts (default false: input is at end-of-file)"},
    {.name = "tty",
     .type = MCP_ARG_BOOLEAN,
     .description = "Run on a pseudo-terminal, for programs that need one (implies interactive)"},
    {.name = "rows",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 1,
     .max = 1000,
     .description = "Terminal rows with tty (default 24)"},
    {.name = "cols",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 1,
     .max = 1000,
     .description = "Terminal columns with tty (default 80)"},
    ARG_TAIL,
    {0}};
static const struct mcp_arg bash_out[] = {
    {.name = "sandbox_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "session_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "status",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .enum_values = (const char *const[]){"running", "exited", "killed", "timed_out", "lost", NULL},
     .description =
         "lost: the sandbox restarted while the command ran (see reason); its output up to then stays readable"},
    {.name = "reason", .type = MCP_ARG_STRING, .description = "Why a session is lost"},
    {.name = "exit_code", .type = MCP_ARG_INTEGER},
    {.name = "output", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "has_more_output", .type = MCP_ARG_BOOLEAN, .description = "More output is waiting: call bash_poll"},
    {.name = "output_bytes", .type = MCP_ARG_INTEGER},
    {.name = "total_output_bytes", .type = MCP_ARG_INTEGER},
    {.name = "omitted_output_bytes",
     .type = MCP_ARG_INTEGER,
     .description = "Bytes of the log left out between the start and the end shown in output (the marker there says "
                    "how to read them)"},
    {.name = "omitted_start", .type = MCP_ARG_INTEGER},
    {.name = "omitted_end", .type = MCP_ARG_INTEGER},
    {.name = "latest_output",
     .type = MCP_ARG_STRING,
     .description = "The newest lines so far, when output had to be cut while the command runs (bash_poll still "
                    "returns everything in order)"},
    {.name = "log_path", .type = MCP_ARG_STRING, .description = "Full output, inside the sandbox"},
    {.name = "pid", .type = MCP_ARG_INTEGER},
    {0}};

static const struct mcp_arg bash_poll_args[] = {ARG_SANDBOX_ID, ARG_SESSION_ID, ARG_YIELD, ARG_TAIL, {0}};

static const struct mcp_arg bash_stop_args[] = {ARG_SANDBOX_ID, ARG_SESSION_ID, {0}};

static const struct mcp_arg bash_input_args[] = {
    ARG_SANDBOX_ID,
    ARG_SESSION_ID,
    {.name = "data",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_NUL_OK,
     .description = "Text to write, for example \"yes\\n\""},
    {.name = "close", .type = MCP_ARG_BOOLEAN, .description = "Close standard input after writing (default false)"},
    {0}};
static const struct mcp_arg bash_input_out[] = {
    {.name = "sandbox_id", .type = MCP_ARG_STRING},
    {.name = "session_id", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "bytes_written", .type = MCP_ARG_INTEGER},
    {.name = "stdin_open", .type = MCP_ARG_BOOLEAN},
    {0}};

static const struct mcp_arg bash_list_args[] = {ARG_SANDBOX_ID, {0}};
static const struct mcp_arg bash_list_out[] = {{.name = "sandbox_id", .type = MCP_ARG_STRING},
                                               {.name = "sessions", .type = MCP_ARG_ARRAY, .flags = MCP_ARG_REQUIRED},
                                               {.name = "total", .type = MCP_ARG_INTEGER},
                                               {.name = "truncated", .type = MCP_ARG_BOOLEAN},
                                               {0}};

static const struct mcp_arg read_args[] = {ARG_SANDBOX_ID,
                                           ARG_FILE_PATH,
                                           {.name = "offset",
                                            .type = MCP_ARG_INTEGER,
                                            .flags = MCP_ARG_MIN | MCP_ARG_MAX,
                                            .min = 1,
                                            .max = INT32_MAX,
                                            .description = "First line, 1-based (default 1)"},
                                           {.name = "limit",
                                            .type = MCP_ARG_INTEGER,
                                            .flags = MCP_ARG_MIN | MCP_ARG_MAX,
                                            .min = 1,
                                            .max = 100000,
                                            .description = "Lines to return (default 2000)"},
                                           {.name = "line_numbers",
                                            .type = MCP_ARG_BOOLEAN,
                                            .description = "Prefix each line with its number and a tab, like cat -n "
                                                           "(default true); the numbers are not part of the file"},
                                           {0}};
static const struct mcp_arg read_out[] = {
    {.name = "path", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "content", .type = MCP_ARG_STRING},
    {.name = "start_line", .type = MCP_ARG_INTEGER},
    {.name = "lines", .type = MCP_ARG_INTEGER},
    {.name = "total_lines", .type = MCP_ARG_INTEGER},
    {.name = "truncated", .type = MCP_ARG_BOOLEAN},
    {.name = "size", .type = MCP_ARG_INTEGER},
    {.name = "binary", .type = MCP_ARG_BOOLEAN},
    {.name = "total_lines_known", .type = MCP_ARG_BOOLEAN},
    {.name = "sha256_skipped", .type = MCP_ARG_STRING},
    {.name = "sha256",
     .type = MCP_ARG_STRING,
     .description = "Hash of the whole file; pass it to write as expected_sha256"},
    {0}};

static const struct mcp_arg write_args[] = {ARG_SANDBOX_ID,
                                            ARG_FILE_PATH,
                                            {.name = "content",
                                             .type = MCP_ARG_STRING,
                                             .flags = MCP_ARG_REQUIRED | MCP_ARG_NUL_OK,
                                             .description = "The complete new content"},
                                            {.name = "create_dirs",
                                             .type = MCP_ARG_BOOLEAN,
                                             .description = "Create missing parent directories (default false)"},
                                            ARG_EXPECTED_SHA256,
                                            {0}};
static const struct mcp_arg write_out[] = {
    {.name = "path", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
    {.name = "bytes_written", .type = MCP_ARG_INTEGER, .flags = MCP_ARG_REQUIRED},
    {.name = "created", .type = MCP_ARG_BOOLEAN},
    {.name = "sha256", .type = MCP_ARG_STRING},
    {0}};

static const struct mcp_arg edit_args[] = {
    ARG_SANDBOX_ID,
    ARG_FILE_PATH,
    {.name = "old_string",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NUL_OK,
     .description = "Exact text to replace"},
    {.name = "new_string",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NUL_OK,
     .description = "Replacement text"},
    {.name = "replace_all", .type = MCP_ARG_BOOLEAN, .description = "Replace every match (default false)"},
    ARG_EXPECTED_SHA256,
    {0}};
static const struct mcp_arg edit_out[] = {{.name = "path", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
                                          {.name = "replacements", .type = MCP_ARG_INTEGER},
                                          {.name = "bytes_written", .type = MCP_ARG_INTEGER},
                                          {.name = "sha256", .type = MCP_ARG_STRING},
                                          {0}};

static const struct mcp_arg apply_patch_args[] = {
    ARG_SANDBOX_ID,
    {.name = "patch",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED | MCP_ARG_NUL_OK,
     .min_length = 1,
     .max_length = PROTO_PATCH_TEXT_MAX,
     .description = "The patch text (at most 1000 files per call)",
     .hint = "give a patch starting with '*** Begin Patch' or a unified diff"},
    {.name = "cwd",
     .type = MCP_ARG_STRING,
     .description = "Directory the patch's relative paths start from (default /workspace)"},
    {.name = "expected_sha256",
     .type = MCP_ARG_ARRAY,
     .flags = MCP_ARG_MAP_TOO,
     .description = "The sha256 read returned for each file the patch changes: refuse, changing nothing, if any of "
                    "these files changed since",
     .hint = "give an array of {\"path\": …, \"sha256\": …} objects with the sha256 read returned for each file, e.g. "
             "[{\"path\": \"src/a.py\", \"sha256\": \"3f2a…\"}]",
     .items = apply_patch_expected_item},
    {0}};
static const struct mcp_arg apply_patch_out[] = {{.name = "files", .type = MCP_ARG_ARRAY, .flags = MCP_ARG_REQUIRED},
                                                 {.name = "summary", .type = MCP_ARG_STRING},
                                                 {0}};

static const struct mcp_arg search_args[] = {
    ARG_SANDBOX_ID,
    {.name = "pattern",
     .type = MCP_ARG_STRING,
     .flags = MCP_ARG_REQUIRED,
     .min_length = 1,
     .description = "Regular expression",
     .hint = "give a regular expression"},
    {.name = "path", .type = MCP_ARG_STRING, .description = "File or directory (default /workspace)"},
    {.name = "glob", .type = MCP_ARG_STRING, .description = "Only files whose name matches, e.g. *.c"},
    {.name = "case_insensitive", .type = MCP_ARG_BOOLEAN, .description = "Ignore case (default false)"},
    {.name = "max_matches",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 1,
     .max = 5000,
     .description = "At most this many matches (default 200)"},
    {0}};
static const struct mcp_arg search_out[] = {{.name = "matches", .type = MCP_ARG_STRING, .flags = MCP_ARG_REQUIRED},
                                            {.name = "count", .type = MCP_ARG_INTEGER},
                                            {.name = "files_searched", .type = MCP_ARG_INTEGER},
                                            {.name = "truncated", .type = MCP_ARG_BOOLEAN},
                                            {.name = "truncated_reason", .type = MCP_ARG_STRING},
                                            {0}};

static const struct mcp_arg list_args[] = {
    ARG_SANDBOX_ID,
    {.name = "path", .type = MCP_ARG_STRING, .description = "Directory (default /workspace)"},
    {.name = "depth",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 1,
     .max = 10,
     .description = "Levels to descend; 1 = the directory's own entries (default 2)"},
    {.name = "glob", .type = MCP_ARG_STRING, .description = "Only files whose name matches, e.g. *.md"},
    {.name = "max_entries",
     .type = MCP_ARG_INTEGER,
     .flags = MCP_ARG_MIN | MCP_ARG_MAX,
     .min = 1,
     .max = 10000,
     .description = "At most this many entries (default 1000)"},
    {0}};
static const struct mcp_arg list_out[] = {{.name = "path", .type = MCP_ARG_STRING},
                                          {.name = "entries", .type = MCP_ARG_ARRAY, .flags = MCP_ARG_REQUIRED},
                                          {.name = "count", .type = MCP_ARG_INTEGER},
                                          {.name = "truncated", .type = MCP_ARG_BOOLEAN},
                                          {0}};

static const struct mcp_tool table[] = {
    {
        .name = "sandbox_create",
        .title = "Create sandbox",
        .description =
            "Create a disposable Linux sandbox with a persistent /workspace and return its sandbox_id. Keep the "
            "sandbox_id and pass it to every other tool. Default: a new managed workspace. workspace_path works on "
            "a directory of the user's machine: clone mode (default) gives a private copy (a git clone with every "
            "branch) whose edits never reach the host, direct mode the directory itself (its .git config and hooks "
            "are read-only there: set a git identity with git config --global). A host directory needs the "
            "user's approval once: the answer is then status approval_required with an approval_id and what the "
            "user must run; call again with the same arguments after they approved. With workspace_id, attaches an "
            "existing workspace; if it already has a running sandbox, that one is returned (reused: true).",
        .args = sandbox_create_args,
        .output = sandbox_out,
        .hints = MCP_HINT_OPEN_WORLD,
        .handler = tool_sandbox_create,
    },
    {
        .name = "sandbox_list",
        .title = "List sandboxes",
        .description = "List the sandboxes that are running, failed, expired or being removed, with their "
                       "workspaces and, for clone sandboxes, whether they hold unsaved work. Use it to find a "
                       "sandbox_id from another conversation.",
        .args = sandbox_list_args,
        .output = sandbox_list_out,
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_sandbox_list,
    },
    {
        .name = "sandbox_get",
        .title = "Get sandbox",
        .description = "Show one sandbox: status, workspace, its bash sessions, and the operator's global "
                       "instructions (agents_md). Call it first when reopening a sandbox.",
        .args = sandbox_get_args,
        .output = sandbox_out,
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_sandbox_get,
    },
    {
        .name = "sandbox_destroy",
        .title = "Destroy sandbox",
        .description = "Stop and remove a sandbox's container and every process in it. A managed or direct "
                       "workspace directory stays on the host. A clone of the user's repository is saved first "
                       "(every branch, tag and uncommitted change, as an export the person can apply; the answer "
                       "names it); if that save fails, nothing is removed and the error says why: fix it, or "
                       "pass force: true to stop the sandbox and keep it for the person, who alone can discard "
                       "unsaved work. Unsaved state outside /workspace is lost.",
        .args = sandbox_destroy_args,
        .output = sandbox_out,
        .hints = MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT,
        .handler = tool_sandbox_destroy,
    },
    {
        .name = "sandbox_export",
        .title = "Save a sandbox's work",
        .description = "Save a checkpoint of a clone sandbox's work (workspace_mode clone: a private copy of "
                       "the user's repository): every branch and tag, HEAD, and a snapshot of uncommitted and "
                       "untracked files (not ignored ones), without changing the clone's index, stash or files. "
                       "Returns the export_id, what it holds (branches, commits ahead of the approved repository, "
                       "dirty files) and the command the person runs to bring it into their repository. Nothing "
                       "is written to the user's machine by this tool. Saving the same state again returns the "
                       "same export. sandbox_destroy saves one too.",
        .args = sandbox_export_args,
        .output = sandbox_export_out,
        /* Writes only chat2sbx's own export directory, never the user's
         * files; saving the same state twice gives the same export. */
        .hints = MCP_HINT_IDEMPOTENT,
        .handler = tool_sandbox_export,
    },
    {
        .name = "sandbox_expose",
        .title = "Expose a sandbox port",
        .description = "Make a TCP port of the sandbox (a dev server, a web app) reachable from the user's machine "
                       "and return its url (http://host:host_port/). First start the server inside the sandbox "
                       "with bash, listening on 0.0.0.0 (all interfaces), for example `python3 -m http.server "
                       "8000`; then call this with that port and give the url to the user. Calling it again "
                       "for the same port returns the same url. The url lasts until the sandbox is destroyed "
                       "and survives restarts of chat2sbx. Not for sandboxes created with network false.",
        .args = sandbox_expose_args,
        .output = sandbox_expose_out,
        /* Not read-only (it creates a forwarder), not destructive, the same
         * answer when repeated, and only the user's own machine is reached. */
        .hints = MCP_HINT_IDEMPOTENT,
        .handler = tool_sandbox_expose,
    },
    {
        .name = "workspace_list",
        .title = "List workspaces",
        .description = "List the workspaces chat2sbx knows: managed directories (kept 30 days after their "
                       "sandbox, then moved to the trash) and approved host directories (clone or direct), with "
                       "their state and the sandbox using each.",
        .args = workspace_list_args,
        .output = workspace_list_out,
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_workspace_list,
    },
    {
        .name = "bash",
        .title = "Run a shell command",
        .description = "Run a bash command in the sandbox (cwd /workspace) and wait up to yield_time_ms. Always "
                       "returns a session_id. status is exited (with exit_code), running (call bash_poll), killed, "
                       "timed_out, or lost (the sandbox restarted while it ran; reason says when). Standard input is "
                       "at end-of-file unless interactive is true (then send it "
                       "with bash_input). No time limit unless timeout_ms is given. Start servers in the "
                       "background or let them run and poll.",
        .args = bash_args,
        .output = bash_out,
        .hints = MCP_HINT_OPEN_WORLD,
        .handler = tool_bash_run,
    },
    {
        .name = "bash_poll",
        .title = "Poll a shell session",
        .description = "Wait for new output or the end of a bash session, up to yield_time_ms, and return "
                       "only output not returned before (past the answer's size: its start, a note of what was left "
                       "out and where, and its end, once the command ended or with tail: true). Poll again while "
                       "status is running or "
                       "has_more_output is true. A session interrupted by a restart of the sandbox is lost (with "
                       "a reason); polling it returns the rest of the output it wrote before.",
        .args = bash_poll_args,
        .output = bash_out,
        .hints = MCP_HINT_READ_ONLY,
        .handler = tool_bash_poll,
    },
    {
        .name = "bash_stop",
        .title = "Stop a shell session",
        .description = "Stop a bash session and every process it started, also background jobs and "
                       "daemons (SIGTERM, then SIGKILL after 1.5 s). Returns the output not returned before; "
                       "status becomes killed (a session that had already exited keeps its exit_code).",
        .args = bash_stop_args,
        .output = bash_out,
        .hints = MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT,
        .handler = tool_bash_stop,
    },
    {
        .name = "bash_input",
        .title = "Send input to a shell session",
        .description = "Write text to the standard input of a bash session started with interactive: true (end "
                       "lines with \\n), and/or close it (close: true) so the program sees end-of-file. Then "
                       "call bash_poll for the output.",
        .args = bash_input_args,
        .output = bash_input_out,
        .hints = 0,
        .handler = tool_bash_input,
    },
    {
        .name = "bash_list",
        .title = "List shell sessions",
        .description = "List a sandbox's bash sessions (the recent ones and every running one) with command, "
                       "status (running, exited, killed, timed_out, or lost with a reason: interrupted by a "
                       "restart of the sandbox), start time and exit code.",
        .args = bash_list_args,
        .output = bash_list_out,
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_bash_list,
    },
    {
        .name = "read",
        .title = "Read a file",
        .description = "Read a text file in the sandbox (path relative to /workspace, or absolute). "
                       "offset is the first line (1-based), limit the number of lines. Says how many lines "
                       "the file has and whether the answer was cut; binary files are described, not "
                       "dumped.",
        .args = read_args,
        .output = read_out,
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_files_read,
    },
    {
        .name = "write",
        .title = "Write a file",
        .description = "Write a whole file in the sandbox atomically (a reader never sees half a file); "
                       "replaces an existing file, keeping its mode. create_dirs makes missing parent "
                       "directories.",
        .args = write_args,
        .output = write_out,
        .hints = MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT,
        .handler = tool_files_write,
    },
    {
        .name = "edit",
        .title = "Edit a file",
        .description = "Replace old_string with new_string in a file, atomically. old_string must match exactly "
                       "once (whitespace included; copy it from read without the line-number prefix) unless "
                       "replace_all is true; the error says how many matches and where. CRLF files and a "
                       "missing final newline are preserved.",
        .args = edit_args,
        .output = edit_out,
        .hints = MCP_HINT_DESTRUCTIVE,
        .handler = tool_files_edit,
    },
    {
        .name = "apply_patch",
        .title = "Apply a patch",
        .description = "Apply a patch to files in the sandbox, all or nothing: the '*** Begin Patch' format "
                       "(*** Add File / *** Update File / *** Delete File / *** Move to, @@ anchors, context "
                       "lines with ' ', removals '-', additions '+', *** End Patch) or a unified diff. If any "
                       "hunk does not apply, nothing changes and the error names the file and hunk.",
        .args = apply_patch_args,
        .output = apply_patch_out,
        .hints = MCP_HINT_DESTRUCTIVE,
        .handler = tool_files_apply_patch,
    },
    {
        .name = "search",
        .title = "Search files",
        .description = "Search files for a regular expression (PCRE2 syntax) under a path (default "
                       "/workspace), optionally only files matching glob (e.g. \\\"*.py\\\"); skips binary files "
                       "and .git. Results are path:line:text lines; says when the list was cut.",
        .args = search_args,
        .output = search_out,
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_files_search,
    },
    {
        .name = "list",
        .title = "List files",
        .description = "List files and directories under a path (default /workspace) to a depth (default 2), "
                       "optionally only files matching glob, with types and sizes, sorted; says when cut.",
        .args = list_args,
        .output = list_out,
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_files_list,
    },
};

/* The default text of a setting, as config.c's table documents it. */
static const char *setting_default(const char *env)
{
	size_t n = 0;
	const struct config_setting_info *s = config_settings(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(s[i].env, env))
			return s[i].default_text;
	return "?";
}

const struct mcp_tool *tools_table_plain(size_t *ret_n)
{
	if (!yield_description[0])
		snprintf(yield_description, sizeof(yield_description),
		         "How long to wait before answering (default %d; clamped to the server's maximum, %s unless "
		         "configured)",
		         PROTO_DEFAULT_YIELD_MS, setting_default("CHAT2SBX_MAX_YIELD_MS"));
	*ret_n = sizeof(table) / sizeof(table[0]);
	return table;
}
