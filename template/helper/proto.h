/* proto.h: the helper's wire format, the one source of truth shared by the
 * in-container helper (template/helper/) and the control plane's channel
 * (controlplane/helper/). Newline-delimited JSON-RPC 2.0 over the helper's
 * stdin (requests) and stdout (responses); stderr carries the helper's own log
 * lines. One JSON object per line; no line exceeds PROTO_MAX_FRAME bytes.
 *
 * Requests: {"jsonrpc":"2.0","id":<int>,"method":M,"params":{...}}
 * Responses: {"jsonrpc":"2.0","id":<same>,"result":{...}}
 *         or {"jsonrpc":"2.0","id":<same>,"error":{"code":C,"message":S,
 *              "data":{"code":"INVALID_ARGUMENT"|"NOT_FOUND"|"CONFLICT"|"LIMIT"|"INTERNAL"}}}
 * Responses may come in any order; the id pairs them. A request without an id
 * is ignored. Unknown methods: code -32601. Bad params: -32602 with
 * data.code "INVALID_ARGUMENT" and a message naming the field. A line over
 * PROTO_MAX_FRAME is dropped; it gets -32600 with data.code "LIMIT" when its
 * "id" can be found in it.
 *
 * Only the helper reads its stdin and writes its stdout: it makes itself
 * non-dumpable, so commands in the sandbox (root in the container) cannot
 * open /proc/1/fd/{0,1,2}, /proc/1/mem or ptrace it without CAP_SYS_PTRACE.
 * The host must never give a sandbox CAP_SYS_PTRACE (or a privileged mode),
 * or the channel can be forged from inside.
 *
 * Methods
 *   hello {} → {"version":S,"helper_version":S,"pid":N,"sessions":N,"running":N}
 *
 *   bash.start {"session_id":"bash_…" (chosen by the host, unique),
 *               "command":S, "cwd":S (default "/workspace"),
 *               "timeout_ms":N (0 or absent = none),
 *               "yield_time_ms":N (wait at most this long for exit, ≥ 0;
 *                 default 10000, clamped to 24 h),
 *               "max_output_bytes":N (cap on raw output bytes in this reply;
 *                 default 60000, clamped to [4, 4 MiB]; also for poll/stop)}
 *     session_id: 1-128 of [A-Za-z0-9_.-], not starting with '.'. command:
 *     at most 131071 bytes, no NUL. A missing cwd: INVALID_ARGUMENT naming it.
 *     256 sessions already running: LIMIT.
 *     Starts /bin/bash -c command in a new session/process group, stdin
 *     /dev/null, stdout+stderr into one pipe, and waits until the shell exits
 *     or yield_time_ms passes. Reply: a snapshot (below) with the output
 *     produced so far (from offset 0). A duplicate session_id: CONFLICT.
 *
 *   bash.poll {"session_id":S, "yield_time_ms":N, "max_output_bytes":N}
 *     Returns at once when undelivered output exists or the session has
 *     ended; otherwise waits until new output, exit, or yield_time_ms.
 *     Reply: a snapshot with only output not returned before.
 *
 *   bash.stop {"session_id":S, "max_output_bytes":N}
 *     SIGTERM (+SIGCONT) to the process group, SIGKILL after
 *     PROTO_KILL_GRACE_MS if anything of the group is still alive; replies
 *     when the shell has been reaped and nothing is left of its group (at the
 *     latest about PROTO_KILL_GRACE_MS + 1000 ms). Status "killed" unless the
 *     session had already ended: then its real status, and whatever is left
 *     in its process group (background jobs, whether or not they hold the
 *     output pipe) is stopped the same way. Reply: a snapshot.
 *
 *   bash.list {} → {"sessions":[{"session_id","command" (first 1000 bytes),
 *              "status","exit_code"?,"started_at_ms","ended_at_ms"? (wall clock),
 *              "pid","log_path","total_output_bytes","has_more_output"}],
 *              "total":N (sessions the helper remembers),
 *              "truncated":bool (some were left out)}
 *     Lists at most the PROTO_LIST_RECENT most recently started sessions
 *     plus every running one (at most 256 more), oldest first. The helper
 *     keeps at most 256 ended sessions; older ones are forgotten
 *     (bash.poll: NOT_FOUND) but their log files stay.
 *
 *   Snapshot: {"session_id":S,"status":"running"|"exited"|"killed"|"timed_out",
 *              "exit_code":N (present when not running; 128+signal when the
 *              shell died of a signal), "output":S (valid UTF-8: invalid bytes
 *              become U+FFFD, a multi-byte character is never split across
 *              replies; control bytes other than \n \t \r pass through JSON
 *              escaping), "output_bytes":N (raw bytes consumed this reply),
 *              "has_more_output":bool (undelivered bytes remain after this
 *              reply, so a bash.poll now returns at once; the start of a
 *              character whose remaining bytes have not arrived yet is held
 *              back and does not count), "total_output_bytes":N, "log_path":S
 *              (full output, inside the sandbox), "pid":N,
 *              "dropped_output_bytes":N (only when output was lost: beyond
 *              1 GiB per session, or the log could not be written)}
 *     A session's full output is appended to log_path
 *     (/tmp/chat2sbx/bash/<session_id>.log); delivery cursors are kept per
 *     session in the helper, so nothing is lost or repeated between calls and
 *     across a control-plane re-attach.
 *     The shell's exit ends the session even when a background job still holds
 *     the output pipe; output such a job writes later is still collected.
 *     timeout_ms expiry: SIGTERM, then SIGKILL after PROTO_KILL_GRACE_MS; status
 *     "timed_out".
 *
 *   file.read {"path":S, "offset":N (first line, 1-based, default 1),
 *              "limit":N (lines, default 2000), "max_bytes":N (content bytes,
 *              default 262144, clamped to 4 MiB)}
 *     → {"path":S (absolute), "content":S (the selected lines, UTF-8 made
 *        safe), "start_line":N, "lines":N (returned),
 *        "total_lines":N (absent when not known, see below),
 *        "total_lines_known":bool, "truncated":bool (more lines exist after
 *        the selection or max_bytes cut it), "size":N (file bytes),
 *        "binary":bool, "sha256":S (hex, of the whole file: pass it to
 *        file.write) or instead "sha256_skipped":S (why, e.g. "file larger
 *        than 67108864 bytes")}
 *     Whole lines only, unless the first selected line alone exceeds
 *     max_bytes: then its start (cut at a character boundary), lines 1,
 *     truncated true. An offset past the last line: INVALID_ARGUMENT.
 *     Files of at most PROTO_READ_WHOLE_MAX bytes are read whole: sha256 and
 *     total_lines are always given. Larger files are read only from their
 *     start to the end of the selection: no sha256 ("sha256_skipped"), and
 *     total_lines only when the selection reached the end of the file
 *     (total_lines_known says which); a selection that does not start within
 *     the first PROTO_READ_WHOLE_MAX bytes fails with LIMIT (the message
 *     points to sed -n 'A,Bp' / tail in bash).
 *     Binary files (a NUL byte in the first 8 KiB) return {"path","binary":
 *     true,"size","sha256" or "sha256_skipped"} and no content. Missing file:
 *     NOT_FOUND. Directory, device, FIFO or socket: INVALID_ARGUMENT.
 *
 *   file.write {"path":S, "content":S, "create_dirs":bool (default false),
 *               "expected_sha256":S (optional: the sha256 file.read returned)}
 *     → {"path":S, "bytes_written":N, "created":bool, "sha256":S (new content)}
 *     Atomic: temp file in the target's directory, fsync, rename. Keeps the
 *     mode of an existing file (0644 for a new one) and, as root, its owner.
 *     A symlink (dangling or not) is followed to the end of its chain and the
 *     file there is replaced, or created when the link dangles; the links
 *     stay ("created" then says whether that file is new). More than 40
 *     links or a loop: INVALID_ARGUMENT. A failed write leaves the old content
 *     and no temp file. Missing parent without create_dirs: NOT_FOUND.
 *     expected_sha256 given and the file changed or is gone: CONFLICT
 *     ("changed since read"); given for a file over PROTO_READ_WHOLE_MAX
 *     bytes (read returns no sha256 for it): LIMIT, nothing written. No
 *     space: LIMIT. Permission denied or read-only: INVALID_ARGUMENT.
 *
 * Paths: relative paths are resolved against /workspace; absolute paths are
 * used as given (the whole container is the sandbox's to use). */
#ifndef CHAT2SBX_PROTO_H
#define CHAT2SBX_PROTO_H

#define PROTO_VERSION "1"
#define PROTO_MAX_FRAME (32u * 1024 * 1024)
#define PROTO_KILL_GRACE_MS 1500
#define PROTO_WORKSPACE "/workspace"
#define PROTO_LOG_DIR "/tmp/chat2sbx/bash"
#define PROTO_LIST_RECENT 50                       /* bash.list: latest sessions listed (+ running ones) */
#define PROTO_READ_WHOLE_MAX (64ull * 1024 * 1024) /* file.read: larger files are not hashed or counted */

/* JSON-RPC 2.0 error codes (JSON-RPC 2.0 specification, section 5.1). */
#define PROTO_ERR_PARSE (-32700)
#define PROTO_ERR_INVALID_REQUEST (-32600)
#define PROTO_ERR_METHOD_NOT_FOUND (-32601)
#define PROTO_ERR_INVALID_PARAMS (-32602)
#define PROTO_ERR_INTERNAL (-32603)
/* Application error (operation failed; data.code says why). */
#define PROTO_ERR_OPERATION (-32000)

#endif
