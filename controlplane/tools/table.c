/* table.c: the tool table (as redis's command table): name, description a
 * model can follow, JSON Schemas, annotations true to what the tool does.
 * tools/list is generated from it; nothing else lists tools. ChatGPT asks the
 * user to confirm every tool without readOnlyHint (DESIGN.md, MCP surface). */
#include "tools_internal.h"

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

#define SANDBOX_ID_PROP                                                                                                \
	"\"sandbox_id\":{\"type\":\"string\",\"description\":\"The sandbox_id returned by sandbox_create or "          \
	"sandbox_list (sbx_...)\"}"

#define SANDBOX_OUT                                                                                                    \
	"{\"type\":\"object\",\"properties\":{"                                                                        \
	"\"sandbox_id\":{\"type\":\"string\"},\"status\":{\"type\":\"string\",\"enum\":[\"creating\","                 \
	"\"running\",\"failed\",\"removed\",\"expired\",\"removing\",\"approval_required\"]},"                         \
	"\"workspace_id\":{\"type\":\"string\"},\"workspace_mode\":{\"type\":\"string\"},"                             \
	"\"workspace_path\":{\"type\":\"string\",\"description\":\"Host directory behind /workspace\"},"               \
	"\"image\":{\"type\":\"string\"},\"container_id\":{\"type\":\"string\"},"                                      \
	"\"memory_bytes\":{\"type\":\"integer\"},\"network\":{\"type\":\"boolean\"},"                                  \
	"\"disk_bytes\":{\"type\":\"integer\",\"description\":\"Size limit of the sandbox's own disk\"},"              \
	"\"disk_note\":{\"type\":\"string\"},\"paused\":{\"type\":\"string\",\"description\":\"Why the "               \
	"sandbox is paused (a full disk); it resumes on its own\"},"                                                   \
	"\"cpus\":{\"type\":\"number\"},\"options_note\":{\"type\":\"string\"},"                                       \
	"\"runtime\":{\"type\":\"string\",\"description\":\"vm: a microVM with its own kernel and Docker "             \
	"Engine; otherwise the container runtime\"},\"accel\":{\"type\":\"string\",\"description\":\"vm: kvm or "      \
	"tcg (emulated, much slower)\"},\"accel_note\":{\"type\":\"string\"},"                                         \
	"\"failure_reason\":{\"type\":\"string\"},"                                                                    \
	"\"created_at\":{\"type\":\"string\"},\"last_activity_at\":{\"type\":\"string\"},"                             \
	"\"removed_at\":{\"type\":\"string\"},\"reused\":{\"type\":\"boolean\"},"                                      \
	"\"workspace_kept\":{\"type\":\"boolean\"},\"agents_md\":{\"type\":\"string\"},"                               \
	"\"bash_sessions\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"                                      \
	"\"bash_sessions_total\":{\"type\":\"integer\"},\"bash_sessions_truncated\":{\"type\":\"boolean\"},"           \
	"\"helper_error\":{\"type\":\"string\"},\"host_path\":{\"type\":\"string\"},"                                  \
	"\"copy_session_id\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"},"                                 \
	"\"approval_id\":{\"type\":\"string\"},"                                                                       \
	"\"exposures\":{\"type\":\"array\",\"items\":{\"type\":\"object\"},\"description\":\"Ports published "         \
	"with sandbox_expose: port, host, host_port, url\"},"                                                          \
	"\"unsaved_work\":{\"type\":\"boolean\",\"description\":\"Clone mode: commits or changes since the last "      \
	"export (checked at most once a minute)\"},"                                                                   \
	"\"last_export\":{\"type\":\"object\",\"description\":\"The newest saved export of this sandbox\"},"           \
	"\"export\":{\"type\":\"object\",\"description\":\"sandbox_destroy: the export its work was saved in\"},"      \
	"\"lost\":{\"type\":\"string\",\"description\":\"sandbox_destroy with force after a failed save: what is "     \
	"gone\"}"                                                                                                      \
	"},\"required\":[\"status\"]}"

#define BASH_OUT                                                                                                       \
	"{\"type\":\"object\",\"properties\":{"                                                                        \
	"\"sandbox_id\":{\"type\":\"string\"},\"session_id\":{\"type\":\"string\"},"                                   \
	"\"status\":{\"type\":\"string\",\"enum\":[\"running\",\"exited\",\"killed\",\"timed_out\",\"lost\"],"         \
	"\"description\":\"lost: the sandbox restarted while the command ran (see reason); its output up to "          \
	"then stays readable\"},"                                                                                      \
	"\"reason\":{\"type\":\"string\",\"description\":\"Why a session is lost\"},"                                  \
	"\"exit_code\":{\"type\":\"integer\"},\"output\":{\"type\":\"string\"},"                                       \
	"\"has_more_output\":{\"type\":\"boolean\",\"description\":\"More output is waiting: call "                    \
	"bash_poll\"},"                                                                                                \
	"\"output_bytes\":{\"type\":\"integer\"},\"total_output_bytes\":{\"type\":\"integer\"},"                       \
	"\"omitted_output_bytes\":{\"type\":\"integer\",\"description\":\"Bytes of the log left out between "          \
	"the start and the end shown in output (the marker there says how to read them)\"},"                           \
	"\"omitted_start\":{\"type\":\"integer\"},\"omitted_end\":{\"type\":\"integer\"},"                             \
	"\"latest_output\":{\"type\":\"string\",\"description\":\"The newest lines so far, when output had to "        \
	"be cut while the command runs (bash_poll still returns everything in order)\"},"                              \
	"\"log_path\":{\"type\":\"string\",\"description\":\"Full output, inside the sandbox\"},"                      \
	"\"pid\":{\"type\":\"integer\"}"                                                                               \
	"},\"required\":[\"sandbox_id\",\"session_id\",\"status\",\"output\"]}"

#define TAIL_PROP                                                                                                      \
	"\"tail\":{\"type\":\"boolean\",\"description\":\"When the output is longer than one answer holds, "           \
	"show its start and its end with a note of what was left out, even while the command runs (default: "          \
	"only once it ended)\"}"

#define YIELD_PROP                                                                                                     \
	"\"yield_time_ms\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":60000,\"description\":\"How long "          \
	"to wait before answering (default 10000; clamped to the server's maximum, 30000 unless "                      \
	"configured)\"}"

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
        .input_schema =
            "{\"type\":\"object\",\"properties\":{"
            "\"memory\":{\"type\":\"string\",\"description\":\"Memory ceiling such as \\\"512m\\\" or "
            "\\\"4g\\\" (default: the server's ceiling, see sandbox_get memory_bytes; at most this machine's "
            "memory)\"},"
            "\"disk\":{\"type\":\"string\",\"description\":\"Size of the sandbox's own disk such as "
            "\\\"20g\\\" (only where the engine can limit it; sandbox_get says)\"},"
            "\"cpus\":{\"type\":\"number\",\"description\":\"CPU ceiling as a number such as 1.5 "
            "(more than 0, at most the machine's CPU count; default: no ceiling)\"},"
            "\"pids_limit\":{\"type\":\"integer\",\"minimum\":16,\"maximum\":32768,\"description\":\"Most "
            "processes and threads at once (default and upper end: the server's share per sandbox, at most "
            "4096 by default)\"},"
            "\"network\":{\"type\":\"boolean\",\"description\":\"false: no network interface but loopback "
            "(default true; a runtime without network, such as gVisor here, is always false)\"},"
            "\"workspace_id\":{\"type\":\"string\",\"description\":\"Existing workspace to attach "
            "(ws_..., from workspace_list)\"},"
            "\"workspace_path\":{\"type\":\"string\",\"description\":\"Absolute path of a directory on the "
            "user's machine (below an allowed root such as ~/repositories)\"},"
            "\"workspace_mode\":{\"type\":\"string\",\"enum\":[\"managed\",\"clone\",\"direct\"],"
            "\"description\":\"With workspace_path: clone (a private copy, default) or direct (the directory "
            "itself, read-write). Without it: managed (the default, may be omitted)\"}"
            "},\"additionalProperties\":false}",
        .output_schema = SANDBOX_OUT,
        .hints = MCP_HINT_OPEN_WORLD,
        .handler = tool_sandbox_create,
    },
    {
        .name = "sandbox_list",
        .title = "List sandboxes",
        .description = "List the sandboxes that are running, failed, expired or being removed, with their "
                       "workspaces and, for clone sandboxes, whether they hold unsaved work. Use it to find a "
                       "sandbox_id from another conversation.",
        .input_schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"sandboxes\":{\"type\":\"array\",\"items\":"
                         "{\"type\":\"object\"}},\"active_count\":{\"type\":\"integer\"},"
                         "\"max_active_sandboxes\":{\"type\":\"integer\"},\"unsaved_count\":{\"type\":\"integer\","
                         "\"description\":\"Clone sandboxes with work not saved in an export\"}},"
                         "\"required\":[\"sandboxes\","
                         "\"active_count\"]}",
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_sandbox_list,
    },
    {
        .name = "sandbox_get",
        .title = "Get sandbox",
        .description = "Show one sandbox: status, workspace, its bash sessions, and the operator's global "
                       "instructions (agents_md). Call it first when reopening a sandbox.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
        .output_schema = SANDBOX_OUT,
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
                       "pass force: true to remove it anyway (the answer then says what was lost). Unsaved state "
                       "outside /workspace is lost.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"force\":{\"type\":\"boolean\",\"description\":\"Remove even when the work of a "
                        "clone sandbox cannot be saved (default false). Only after the person agreed to lose "
                        "it\"}},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
        .output_schema = SANDBOX_OUT,
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
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"message\":{\"type\":\"string\",\"maxLength\":1000,\"description\":\"What this "
                        "checkpoint is (kept with it and used as the snapshot commit's message)\"}},"
                        "\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
                         "\"export_id\":{\"type\":\"string\"},\"kind\":{\"type\":\"string\",\"enum\":[\"git\","
                         "\"tar\",\"none\"],\"description\":\"git: a bundle; tar: a plain copy; none: nothing "
                         "new since the sandbox was made\"},\"saved\":{\"type\":\"boolean\",\"description\":"
                         "\"false: the state was saved already, export_id is that export\"},"
                         "\"reason\":{\"type\":\"string\"},\"refs\":{\"type\":\"integer\",\"description\":"
                         "\"Branches and tags\"},\"commits_ahead\":{\"type\":\"integer\",\"description\":"
                         "\"Commits not in the approved repository\"},\"dirty_files\":{\"type\":\"integer\","
                         "\"description\":\"Uncommitted and untracked files in the snapshot\"},"
                         "\"bytes\":{\"type\":\"integer\"},\"created_at\":{\"type\":\"string\"},"
                         "\"message\":{\"type\":\"string\"},\"command\":{\"type\":\"string\","
                         "\"description\":\"What the person runs on their machine to bring it home\"}},"
                         "\"required\":[\"sandbox_id\",\"export_id\",\"kind\",\"saved\",\"command\"]}",
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
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"port\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":65535,\"description\":"
                        "\"TCP port the server inside the sandbox listens on, e.g. 8000\"}},"
                        "\"required\":[\"sandbox_id\",\"port\"],\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
                         "\"port\":{\"type\":\"integer\",\"description\":\"The port inside the sandbox\"},"
                         "\"host\":{\"type\":\"string\",\"description\":\"Host address it is published "
                         "on\"},\"host_port\":{\"type\":\"integer\"},"
                         "\"url\":{\"type\":\"string\",\"description\":\"Open this on the user's "
                         "machine\"},\"created\":{\"type\":\"boolean\",\"description\":\"false: the "
                         "port was exposed already; this is the same mapping\"},"
                         "\"created_at\":{\"type\":\"string\"},\"message\":{\"type\":\"string\"}},"
                         "\"required\":[\"sandbox_id\",\"port\",\"host\",\"host_port\",\"url\"]}",
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
        .input_schema = "{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"workspaces\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"object\"}}},\"required\":[\"workspaces\"]}",
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
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"command\":{\"type\":\"string\",\"description\":\"Shell command, run with bash "
                        "-c\"},"
                        "\"cwd\":{\"type\":\"string\",\"description\":\"Working directory inside the "
                        "sandbox (default /workspace)\"}," YIELD_PROP
                        ",\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Stop the "
                        "command and everything it started after this long (SIGTERM, then SIGKILL after "
                        "1.5 s); default: no limit\"},"
                        "\"interactive\":{\"type\":\"boolean\",\"description\":\"Keep standard input open "
                        "so bash_input can answer prompts (default false: input is at end-of-file)\"},"
                        "\"tty\":{\"type\":\"boolean\",\"description\":\"Run on a pseudo-terminal, for "
                        "programs that need one (implies interactive)\"},"
                        "\"rows\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":"
                        "\"Terminal rows with tty (default 24)\"},"
                        "\"cols\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":"
                        "\"Terminal columns with tty (default 80)\"}," TAIL_PROP
                        "},\"required\":[\"sandbox_id\",\"command\"],\"additionalProperties\":false}",
        .output_schema = BASH_OUT,
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
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"session_id\":{\"type\":\"string\",\"description\":\"The session_id a bash call "
                        "returned (bash_...)\"}," YIELD_PROP "," TAIL_PROP
                        "},\"required\":[\"sandbox_id\",\"session_id\"],\"additionalProperties\":false}",
        .output_schema = BASH_OUT,
        .hints = MCP_HINT_READ_ONLY,
        .handler = tool_bash_poll,
    },
    {
        .name = "bash_stop",
        .title = "Stop a shell session",
        .description = "Stop a bash session and every process it started, also background jobs and "
                       "daemons (SIGTERM, then SIGKILL after 1.5 s). Returns the output not returned before; "
                       "status becomes killed (a session that had already exited keeps its exit_code).",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"session_id\":{\"type\":\"string\",\"description\":\"The session_id a bash call "
                        "returned (bash_...)\"}},\"required\":[\"sandbox_id\",\"session_id\"],"
                        "\"additionalProperties\":false}",
        .output_schema = BASH_OUT,
        .hints = MCP_HINT_DESTRUCTIVE | MCP_HINT_IDEMPOTENT,
        .handler = tool_bash_stop,
    },
    {
        .name = "bash_input",
        .title = "Send input to a shell session",
        .description = "Write text to the standard input of a bash session started with interactive: true (end "
                       "lines with \\n), and/or close it (close: true) so the program sees end-of-file. Then "
                       "call bash_poll for the output.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"session_id\":{\"type\":\"string\",\"description\":\"The session_id a bash call "
                        "returned (bash_...)\"},"
                        "\"data\":{\"type\":\"string\",\"description\":\"Text to write, for example "
                        "\\\"yes\\\\n\\\"\"},"
                        "\"close\":{\"type\":\"boolean\",\"description\":\"Close standard input after "
                        "writing (default false)\"}},\"required\":[\"sandbox_id\",\"session_id\"],"
                        "\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
                         "\"session_id\":{\"type\":\"string\"},\"bytes_written\":{\"type\":\"integer\"},"
                         "\"stdin_open\":{\"type\":\"boolean\"}},\"required\":[\"session_id\"]}",
        .hints = 0,
        .handler = tool_bash_input,
    },
    {
        .name = "bash_list",
        .title = "List shell sessions",
        .description = "List a sandbox's bash sessions (the recent ones and every running one) with command, "
                       "status (running, exited, killed, timed_out, or lost with a reason: interrupted by a "
                       "restart of the sandbox), start time and exit code.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        "},\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"sandbox_id\":{\"type\":\"string\"},"
                         "\"sessions\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
                         "\"total\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\"}},"
                         "\"required\":[\"sessions\"]}",
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
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"path\":{\"type\":\"string\",\"description\":\"File path\"},"
                        "\"offset\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"First line, "
                        "1-based (default 1)\"},"
                        "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100000,\"description\":"
                        "\"Lines to return (default 2000)\"},"
                        "\"line_numbers\":{\"type\":\"boolean\",\"description\":\"Prefix each line with "
                        "its number and a tab, like cat -n (default true); the numbers are not part of the "
                        "file\"}},\"required\":[\"sandbox_id\",\"path\"],"
                        "\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                         "\"content\":{\"type\":\"string\"},\"start_line\":{\"type\":\"integer\"},"
                         "\"lines\":{\"type\":\"integer\"},\"total_lines\":{\"type\":\"integer\"},"
                         "\"truncated\":{\"type\":\"boolean\"},\"size\":{\"type\":\"integer\"},"
                         "\"binary\":{\"type\":\"boolean\"},\"total_lines_known\":{\"type\":\"boolean\"},"
                         "\"sha256_skipped\":{\"type\":\"string\"},\"sha256\":{\"type\":\"string\","
                         "\"description\":\"Hash of the whole file; pass it to write as "
                         "expected_sha256\"}},\"required\":[\"path\"]}",
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_files_read,
    },
    {
        .name = "write",
        .title = "Write a file",
        .description = "Write a whole file in the sandbox atomically (a reader never sees half a file); "
                       "replaces an existing file, keeping its mode. create_dirs makes missing parent "
                       "directories.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"path\":{\"type\":\"string\",\"description\":\"File path\"},"
                        "\"content\":{\"type\":\"string\",\"description\":\"The complete new content\"},"
                        "\"create_dirs\":{\"type\":\"boolean\",\"description\":\"Create missing parent "
                        "directories (default false)\"},"
                        "\"expected_sha256\":{\"type\":\"string\",\"description\":\"The sha256 a read "
                        "returned: refuse, changing nothing, if the file changed since\"}},"
                        "\"required\":[\"sandbox_id\",\"path\",\"content\"],"
                        "\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                         "\"bytes_written\":{\"type\":\"integer\"},\"created\":{\"type\":\"boolean\"},"
                         "\"sha256\":{\"type\":\"string\"}},"
                         "\"required\":[\"path\",\"bytes_written\"]}",
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
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"path\":{\"type\":\"string\",\"description\":\"File path\"},"
                        "\"old_string\":{\"type\":\"string\",\"description\":\"Exact text to replace\"},"
                        "\"new_string\":{\"type\":\"string\",\"description\":\"Replacement text\"},"
                        "\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every match "
                        "(default false)\"},"
                        "\"expected_sha256\":{\"type\":\"string\",\"description\":\"The sha256 a read "
                        "returned: refuse, changing nothing, if the file changed since\"}},"
                        "\"required\":[\"sandbox_id\",\"path\",\"old_string\",\"new_string\"],"
                        "\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                         "\"replacements\":{\"type\":\"integer\"},\"bytes_written\":{\"type\":\"integer\"},"
                         "\"sha256\":{\"type\":\"string\"}},\"required\":[\"path\"]}",
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
        .input_schema =
            "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
            ",\"patch\":{\"type\":\"string\",\"description\":\"The patch text\"},"
            "\"cwd\":{\"type\":\"string\",\"description\":\"Directory the patch's relative "
            "paths start from (default /workspace)\"},"
            "\"expected_sha256\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
            "\"properties\":{\"path\":{\"type\":\"string\"},\"sha256\":{\"type\":\"string\"}},"
            "\"required\":[\"path\",\"sha256\"],\"additionalProperties\":false},"
            "\"description\":\"The sha256 read returned for each file the patch changes: refuse, "
            "changing nothing, if any of these files changed since\"}},\"required\":[\"sandbox_id\",\"patch\"],"
            "\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"files\":{\"type\":\"array\","
                         "\"items\":{\"type\":\"object\"}},\"summary\":{\"type\":\"string\"}},"
                         "\"required\":[\"files\"]}",
        .hints = MCP_HINT_DESTRUCTIVE,
        .handler = tool_files_apply_patch,
    },
    {
        .name = "search",
        .title = "Search files",
        .description = "Search files for a regular expression (PCRE2 syntax) under a path (default "
                       "/workspace), optionally only files matching glob (e.g. \\\"*.py\\\"); skips binary files "
                       "and .git. Results are path:line:text lines; says when the list was cut.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"pattern\":{\"type\":\"string\",\"description\":\"Regular expression\"},"
                        "\"path\":{\"type\":\"string\",\"description\":\"File or directory (default "
                        "/workspace)\"},"
                        "\"glob\":{\"type\":\"string\",\"description\":\"Only files whose name matches, "
                        "e.g. *.c\"},"
                        "\"case_insensitive\":{\"type\":\"boolean\",\"description\":\"Ignore case "
                        "(default false)\"},"
                        "\"max_matches\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,"
                        "\"description\":\"At most this many matches (default 200)\"}},"
                        "\"required\":[\"sandbox_id\",\"pattern\"],\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"matches\":{\"type\":\"string\"},"
                         "\"count\":{\"type\":\"integer\"},\"files_searched\":{\"type\":\"integer\"},"
                         "\"truncated\":{\"type\":\"boolean\"},\"truncated_reason\":{\"type\":\"string\"}},"
                         "\"required\":[\"matches\"]}",
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_files_search,
    },
    {
        .name = "list",
        .title = "List files",
        .description = "List files and directories under a path (default /workspace) to a depth (default 2), "
                       "optionally only files matching glob, with types and sizes, sorted; says when cut.",
        .input_schema = "{\"type\":\"object\",\"properties\":{" SANDBOX_ID_PROP
                        ",\"path\":{\"type\":\"string\",\"description\":\"Directory (default "
                        "/workspace)\"},"
                        "\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"description\":"
                        "\"Levels to descend; 1 = the directory's own entries (default 2)\"},"
                        "\"glob\":{\"type\":\"string\",\"description\":\"Only files whose name matches, "
                        "e.g. *.md\"},"
                        "\"max_entries\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10000,"
                        "\"description\":\"At most this many entries (default 1000)\"}},"
                        "\"required\":[\"sandbox_id\"],\"additionalProperties\":false}",
        .output_schema = "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
                         "\"entries\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
                         "\"count\":{\"type\":\"integer\"},\"truncated\":{\"type\":\"boolean\"}},"
                         "\"required\":[\"entries\"]}",
        .hints = MCP_HINT_READ_ONLY | MCP_HINT_IDEMPOTENT,
        .handler = tool_files_list,
    },
};

const struct mcp_tool *tools_table_plain(size_t *ret_n)
{
	*ret_n = sizeof(table) / sizeof(table[0]);
	return table;
}
