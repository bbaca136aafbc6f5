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
 *   hello {"attach_id":S (optional, 1-64 characters: names the control
 *          plane's attachment; the channel sends a new random one per
 *          attach)}
 *     → {"version":S (PROTO_VERSION: the protocol, decimal digits; see the
 *              version rule at PROTO_VERSION_NUM),"helper_version":S,"pid":N,"sessions":N,"running":N,
 *              "boot_id":S (32 hex digits, new at every start of the helper),
 *              "started_at_ms":N (wall clock of that start),
 *              "attached":bool (this hello named a new attach_id)}
 *     A boot_id other than the last one seen means the helper started again
 *     (its container restarted): see "lost" below. An attach_id other than
 *     the last one given means a new control plane attached: every waiting
 *     bash reply is forgotten unanswered (its id belonged to the previous
 *     attachment; the sessions go on) and every session's delivery cursor
 *     rewinds to its acknowledged offset (see "Delivery and
 *     acknowledgement"). A hello without attach_id, or with the same one
 *     again, changes nothing.
 *
 *   bash.start {"session_id":"bash_…" (chosen by the host, unique),
 *               "command":S, "cwd":S (default "/workspace"),
 *               "timeout_ms":N (0 or absent = none),
 *               "yield_time_ms":N (wait at most this long for exit, ≥ 0;
 *                 default 10000, clamped to 24 h),
 *               "max_output_bytes":N (cap on raw output bytes in this reply;
 *                 default 60000, clamped to [4, 4 MiB]; also for poll/stop),
 *               "tail":bool (default false; also for poll/stop: when the
 *                 rest of the output exceeds max_output_bytes, answer its
 *                 head and tail even while the session runs, see Snapshot,
 *                 "Head and tail"),
 *               "interactive":bool (default false: stdin is /dev/null; true:
 *                 stdin is a pipe fed by bash.input),
 *               "tty":bool (default false; true implies interactive: the shell
 *                 runs on a pseudo-terminal), "rows":N, "cols":N (its size,
 *                 default 24 x 80, each 1..1000, else INVALID_ARGUMENT;
 *                 ignored without tty),
 *               "hidden":bool (default false; true: the control plane's own
 *                 command (an export), left out of bash.list and its total;
 *                 bash.poll and bash.stop work on it as on any session)}
 *     session_id: 1-128 of [A-Za-z0-9_.-], not starting with '.'. command:
 *     at most 131071 bytes, no NUL. A missing cwd: INVALID_ARGUMENT naming it.
 *     256 sessions already running: LIMIT.
 *     Starts /bin/bash -c command in its own process group, below a keeper
 *     process of the session (a new session, a child subreaper, so every
 *     process the command starts stays below it), stdin
 *     /dev/null (or the input pipe), stdout+stderr into one pipe, and waits
 *     until the shell exits or yield_time_ms passes. With tty, stdin, stdout
 *     and stderr are the slave of a new pseudo-terminal, which becomes the
 *     session's controlling terminal, with the shell's group in the
 *     foreground (so ^C sent with bash.input is SIGINT),
 *     TERM is "xterm-256color" (otherwise the helper's own environment), the
 *     terminal echoes input and ends lines with "\r\n"; it is hung up (its
 *     master closed) only after the shell has exited and been reaped, so a
 *     program that closes its terminal early still exits with its own
 *     status. Reply: a snapshot
 *     (below) with the output produced so far (from offset 0). A duplicate
 *     session_id: CONFLICT.
 *
 *   bash.poll {"session_id":S, "yield_time_ms":N, "max_output_bytes":N,
 *              "tail":bool}
 *     Returns at once when undelivered output exists or the session has
 *     ended; otherwise waits until new output, exit, or yield_time_ms.
 *     Reply: a snapshot with only output not returned before.
 *
 *   bash.input {"session_id":S, "data":S (text for stdin, may be empty;
 *               default ""), "close":bool (default false; true: after data,
 *               close stdin so the program sees end of file)}
 *     → {"session_id":S, "bytes_written":N (bytes of data the program's stdin
 *        took during this call), "pending_input_bytes":N (input queued in
 *        the helper, written as the program reads), "stdin_open":bool (the
 *        session still takes input)}
 *     Never waits: what stdin does not take at once is queued and written
 *     when the program reads; close takes effect after the queued input.
 *     At most 1 MiB (1048576 bytes) may be queued per session: more is
 *     LIMIT and nothing of the request is sent. On a tty, close queues
 *     VEOF (^D, twice after a partial line) instead of closing. A program
 *     that closed its stdin or exited (EPIPE) makes stdin_open false, queued
 *     input is dropped. Unknown session: NOT_FOUND. Session started without
 *     interactive: INVALID_ARGUMENT ("… was not started with interactive:
 *     true; its stdin is at end-of-file"). Session ended, or its stdin
 *     closed: CONFLICT.
 *
 *   bash.stop {"session_id":S, "max_output_bytes":N, "tail":bool}
 *     SIGTERM (+SIGCONT) to every process the session started (every
 *     descendant of its keeper, whatever its process group or session:
 *     setsid, double forks and daemons included), then SIGKILL rounds from
 *     PROTO_KILL_GRACE_MS on until none is left (catching those forked
 *     meanwhile); replies when the shell's status is known and nothing of
 *     the session is left (at the latest about PROTO_KILL_GRACE_MS + 1000
 *     ms). Status "killed" unless the session had already ended: then its
 *     real status, and whatever it left behind (background jobs, whether or
 *     not they hold the output pipe) is stopped the same way. Reply: a
 *     snapshot.
 *
 *   bash.list {} → {"sessions":[{"session_id","command" (first 1000 bytes),
 *              "status","exit_code"?,"reason"? (as in a snapshot),"started_at_ms",
 *              "ended_at_ms"? (wall clock; not for lost),
 *              "signal"? (as in a snapshot), "interactive","tty","stdin_open",
 *              "pid","log_path","total_output_bytes","has_more_output"}],
 *              "total":N (sessions the helper remembers),
 *              "truncated":bool (some were left out)}
 *     Lists at most the PROTO_LIST_RECENT most recently started sessions
 *     plus every running one (at most 256 more), oldest first. The helper
 *     keeps at most 256 ended sessions; older ones are forgotten
 *     (bash.poll: NOT_FOUND) but their log files stay.
 *
 *   Delivery and acknowledgement (notifications: no id, never answered)
 *     Every snapshot carries "output_start":N and "output_end":N, the log
 *     offsets of the raw bytes it returned ([start, end); equal when it
 *     returned none). A reply can be lost on its way (the control plane was
 *     killed, or the call waiting for it was cancelled or timed out), so the
 *     helper keeps, beside the delivery cursor, the offset up to which the
 *     control plane acknowledged receipt. For a reply with start < end the
 *     control plane sends exactly one of
 *       {"jsonrpc":"2.0","method":"bash.ack","params":{"session_id":S,
 *        "start":N,"end":N}}   the reply was handed to a waiting caller;
 *       {"jsonrpc":"2.0","method":"bash.nack","params":{...same...}}
 *                               it arrived after its caller had gone.
 *     bash.ack moves the acknowledged offset to end when start is at or
 *     before it (a range after an unacknowledged gap does not move it).
 *     bash.nack rewinds the delivery cursor to start (never before the
 *     acknowledged offset), so the next bash.poll returns that output again.
 *     A new attachment (hello) rewinds every cursor to the acknowledged
 *     offset. So nothing the model has not seen is lost; output is repeated
 *     only when an acknowledgement itself was lost (at most the last answer
 *     before the control plane was killed), or when, of two concurrent calls
 *     on one session, an earlier answer was dropped and a later one was not.
 *     Malformed acknowledgements and unknown sessions are ignored.
 *
 *   Snapshot: {"session_id":S,"status":"running"|"exited"|"killed"|"timed_out"|
 *              "lost", "exit_code":N (present when ended but not lost;
 *              128+signal when the shell died of a signal), "reason":S (lost:
 *              "the sandbox restarted at <RFC 3339 UTC>; the command
 *              was interrupted (its output up to then is in <log_path>)";
 *              any status when the session's keeper was killed from
 *              outside: "the session's keeper process (pid N, the shell's
 *              parent) was killed by SIGKILL; ..."; the session then ends
 *              "killed", or "lost" when the shell's status went with the
 *              keeper), "signal":S (only with a signal exit: its name,
 *              e.g. "SIGKILL"), "stdin_open":bool (interactive sessions
 *              only), "output":S (valid UTF-8: invalid bytes
 *              become U+FFFD, a multi-byte character is never split across
 *              replies; control bytes other than \n \t \r pass through JSON
 *              escaping), "output_bytes":N (raw bytes consumed this reply),
 *              "has_more_output":bool (undelivered bytes remain after this
 *              reply, so a bash.poll now returns at once; the start of a
 *              character whose remaining bytes have not arrived yet is held
 *              back and does not count), "total_output_bytes":N, "log_path":S
 *              (full output, inside the sandbox), "pid":N (the shell's, also
 *              its process group id; its parent is the keeper),
 *              "dropped_output_bytes":N (only when output was lost: beyond
 *              1 GiB per session, or the log could not be written),
 *              "output_start":N, "output_end":N (see above)}
 *     Head and tail: when the output not yet delivered exceeds
 *     max_output_bytes (M ≥ 64) and the session has ended (or "tail" was
 *     asked), "output" is the first M/2 bytes, a marker line, and the last
 *     bytes of the log from the first line start in the last M/2 bytes (or
 *     from a character boundary when that window holds no line start in its
 *     first half). The marker says how many bytes were left out, their log
 *     offsets and the command that prints them ("[... N bytes left out
 *     here: bytes A to B of T in <log_path>; read them with bash: tail -c
 *     +A+1 <log_path> | head -c N (or read that file with offset/limit)
 *     ...]"); "omitted_start":A, "omitted_end":B, "omitted_output_bytes":N
 *     say the same. The delivery cursor moves past the tail: the left-out
 *     bytes count as delivered (output_bytes counts them), so a later
 *     bash.poll neither repeats nor skips anything the answer did not
 *     account for. While the session runs (no "tail"), delivery stays exact
 *     cursor delivery of up to 7M/8 bytes, and "latest_output" (with
 *     "latest_output_start":N, its log offset) adds the newest lines from
 *     the last M/8 bytes of the log, which do not move the cursor.
 *     Carriage-return progress lines are collapsed in "output": each
 *     complete line of a reply (ending in \n) that holds a \r not followed
 *     by \n keeps only what follows its last such \r ("10%\r20%\r30%\n"
 *     is "30%\n"); "\r\n" stays, and a last line without \n is sent as
 *     is. output_bytes still counts the raw bytes; the log has everything.
 *     A session's full output is appended to log_path
 *     (/tmp/chat2sbx/bash/<session_id>.log); delivery cursors are kept per
 *     session in the helper, so nothing is lost between calls and across a
 *     control-plane re-attach (see "Delivery and acknowledgement"). Beside
 *     it, <session_id>.json records the session (command, start, delivered
 *     and acknowledged bytes, and its end once reaped; a new helper resumes
 *     delivery at the acknowledged offset);
 *     a helper that starts again in the same container loads those records:
 *     ended sessions keep their status and exit code, sessions that were
 *     still running become "lost" (never signalled: their processes died
 *     with the old helper), and bash.poll returns the rest of their log.
 *     The shell's exit ends the session even when a background job still holds
 *     the output pipe; output such a job writes later is still collected.
 *     timeout_ms expiry: stops the session like bash.stop (SIGTERM to every
 *     process it started, SIGKILL rounds after PROTO_KILL_GRACE_MS); status
 *     "timed_out". After the shell's exit, an expiry still ends what the
 *     shell left behind (the session keeps the shell's status).
 *
 *   file.read {"path":S, "offset":N (first line, 1-based, default 1),
 *              "limit":N (lines, default 2000), "max_bytes":N (content bytes,
 *              default 262144, clamped to 4 MiB), "numbered":bool (default
 *              false: content is the file's bytes; true: each line prefixed
 *              by its number right-aligned in 6 columns and a tab, like
 *              cat -n, "     1\thello\n"; max_bytes then bounds the numbered
 *              text and lines that no longer fit are left out)}
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
 *   file.edit {"path":S, "old_string":S (non-empty), "new_string":S (≠ old),
 *              "replace_all":bool (default false),
 *              "expected_sha256":S (optional, as for file.write)}
 *     → {"path":S (absolute), "replacements":N, "bytes_written":N,
 *        "sha256":S (new content)}
 *     Exact bytes, matches counted left to right without overlap. In a CRLF
 *     file ("\r\n" and no bare "\n") an old_string/new_string holding "\n"
 *     and no "\r" has its "\n" turned into "\r\n" first, so LF strings edit
 *     CRLF files and they stay CRLF; only the matched bytes change (a
 *     missing final newline stays missing). No match: NOT_FOUND ("old_string
 *     was not found in '<path>'; read the file again …"). More than one
 *     match without replace_all: CONFLICT ("old_string matches N times in
 *     '<path>' (lines a, b, c, …); add surrounding context …", at most 20
 *     lines listed). Empty old_string or old == new: INVALID_ARGUMENT.
 *     expected_sha256 mismatch: CONFLICT ("changed since it was read"),
 *     nothing written. Binary (NUL in the first 8 KiB): INVALID_ARGUMENT.
 *     Over PROTO_READ_WHOLE_MAX bytes: LIMIT. Missing: NOT_FOUND. Written
 *     like file.write (atomic, mode/owner kept, symlinks followed), guarded
 *     by the hash of what was read (a change in between: CONFLICT).
 *
 *   file.apply_patch {"patch":S, "cwd":S (default /workspace: relative paths
 *              in the patch resolve against it; must be a directory),
 *              "expected_sha256":{path:S} (optional: each named file, path as
 *              in the patch, must still have the sha256 read returned, else
 *              CONFLICT "changed since it was read" and nothing changes)}
 *     → {"files":[{"path":S (absolute),"action":"add"|"update"|"delete"|
 *        "move","to":S (absolute, move only)}] (in patch order),
 *        "summary":S ("applied the patch to N files:" then one line per
 *        section: "A p", "M p", "D p", "R p -> q", paths as written)}
 *     patch: V4A ("*** Begin Patch" / "*** Add File: p" + "+" lines /
 *     "*** Update File: p" [+ "*** Move to: q"] + hunks / "*** Delete File:
 *     p" / "*** End Patch"; a hunk: optional "@@" or "@@ anchor" lines, then
 *     ' ', '-', '+' lines, optionally "*** End of File") or a unified diff
 *     (diff -u, git diff: "--- a/p", "+++ b/p", "@@ -l,n +l,n @@";
 *     /dev/null old: add, new: delete; a/ and b/ stripped; git "rename
 *     from/to": move; "new file mode"/"deleted file mode" without hunks:
 *     empty add/delete; "\ No newline at end of file" honoured; binary and
 *     copy patches: INVALID_ARGUMENT).
 *     A hunk's old lines (context + removed) are searched at or after the end
 *     of the previous hunk of that file (and after its anchor lines: a line
 *     equal to the anchor, else one containing it): exact, then ignoring
 *     trailing whitespace, then leading and trailing whitespace, nothing
 *     fuzzier; "*** End of File": only at the end; a unified hunk's line
 *     number picks the nearest of several matches. Context lines keep the
 *     file's bytes. A hunk with only added lines goes after its anchor, or at
 *     the end of the file (unified: after line l). CRLF files keep CRLF; a
 *     missing final newline stays missing, also when lines are added at the
 *     end (unified markers decide when present).
 *     All or nothing: everything is parsed and computed in memory first;
 *     then changed/added files are written (each atomically as file.write,
 *     create_dirs, guarded by the hash read), deletions and moved-away names
 *     last. A move keeps the mode. Errors (all end "nothing was changed"):
 *     malformed patch: INVALID_ARGUMENT (names the patch line); a hunk that
 *     does not apply: CONFLICT ("apply_patch: '<path>' hunk K of N does not
 *     apply: could not find the lines starting with '<line>' (after line
 *     L)[: the closest match …]; read the file again; nothing was
 *     changed"); Add File on an existing file, or a move onto one: CONFLICT;
 *     Update/Delete of a missing file: NOT_FOUND; binary file:
 *     INVALID_ARGUMENT; a file over PROTO_READ_WHOLE_MAX, or over 256 MiB
 *     read in total: LIMIT; a patch text over PROTO_PATCH_TEXT_MAX bytes or
 *     one touching more than PROTO_PATCH_FILES_MAX files: LIMIT, before any
 *     file is read (the helper answers nothing else while it applies one, so
 *     its work is bounded). A write failing in the write phase after
 *     others succeeded: INTERNAL naming the files already changed (they are
 *     not rolled back).
 *
 *   file.search {"pattern":S (PCRE2 regular expression), "path":S (file or
 *                directory, default /workspace), "glob":S (optional: only
 *                files whose name, or relative path when glob holds a '/',
 *                matches this fnmatch(3) pattern; FNM_PATHNAME off; ignored
 *                for a file named by path), "case_insensitive":bool (default
 *                false), "max_matches":N (default 200, clamped to 5000),
 *                "max_bytes":N (bound on "matches", default 60000, clamped
 *                to 4 MiB)}
 *     → {"path":S (absolute), "matches":S (one "path:line:text\n" per
 *        matching line; path relative to the searched directory when that
 *        is inside the workspace, else absolute; a file named by path is
 *        shown relative to the workspace when inside it; text cut at 500
 *        bytes at a character boundary, then "…"; UTF-8 made safe),
 *        "count":N (lines in matches), "files_searched":N (text files
 *        scanned), "truncated":bool, "truncated_reason":"max_matches"|
 *        "max_bytes"|"time"|"max_files" (only when truncated)}
 *     Compiled with PCRE2_UTF | PCRE2_MATCH_INVALID_UTF (invalid bytes in
 *     a file match nothing but do not stop matching; \xff in a pattern is
 *     U+00FF), JIT when available; each line is matched without its '\n'.
 *     Directories are walked depth-first in strcmp order of names: ".git"
 *     directories and symlinks to directories are not entered, /proc-like
 *     file systems are not descended into, symlinks to files are searched.
 *     Skipped: binary files (a NUL in the first 8 KiB), empty files and
 *     files over PROTO_SEARCH_FILE_MAX bytes. A line on which PCRE2 hits its
 *     match limit counts as not matching. Bounds: truncated with
 *     "max_matches" or "max_bytes" when one more matching line was found
 *     but did not fit; "max_files" after PROTO_WALK_MAX_ENTRIES directory
 *     entries; "time" after PROTO_SEARCH_TIME_MS of wall time (the loop is
 *     single-threaded). Bad pattern: INVALID_ARGUMENT with PCRE2's message
 *     and the offset ("pattern is not a valid regular expression (PCRE2
 *     syntax): missing closing parenthesis at offset 3"). Missing path:
 *     NOT_FOUND. Device, FIFO or socket: INVALID_ARGUMENT.
 *
 *   file.list {"path":S (directory, default /workspace), "depth":N (levels,
 *              1 = the directory's own entries; default 2, 1..10, clamped
 *              above), "glob":S (optional, as in file.search; filters files,
 *              symlinks and other entries; directories are always listed),
 *              "max_entries":N (default 1000, clamped to 10000)}
 *     → {"path":S (absolute), "entries":[{"path":S (relative to path),
 *        "type":"file"|"dir"|"symlink"|"other", "size":N (files only),
 *        "target":S (symlinks only, as stored in the link),
 *        "contents_skipped":true (".git" directories only)}], "count":N,
 *        "truncated":bool (max_entries reached with more to list, or the
 *        walk stopped after PROTO_WALK_MAX_ENTRIES entries)}
 *     Depth-first, names in strcmp order, a directory right before its
 *     contents; symlinks are listed, never followed (path itself may be a
 *     symlink to a directory); a directory that cannot be opened is listed
 *     without contents; names are UTF-8 made safe. Not a directory:
 *     INVALID_ARGUMENT. Missing: NOT_FOUND.
 *
 *   blob.open {"path":S (absolute), "unlink":bool (default false)}
 *     → {"handle":S, "size":N (bytes when opened)}
 *   blob.read {"handle":S, "offset":N (≥ 0), "length":N (1..PROTO_BLOB_CHUNK_MAX,
 *              default PROTO_BLOB_CHUNK_MAX)}
 *     → {"data":S (standard base64, RFC 4648 section 4), "bytes":N,
 *        "eof":bool (nothing follows offset + bytes)}
 *   blob.close {"handle":S} → {}
 *   channel.connect {"token":S (32 hex digits)} → {"connected":true}
 *     The direct channel (issue 27): the control plane has just made a
 *     listening Unix socket at PROTO_CHANNEL_SOCKET (a directory of its own,
 *     mounted read-only at PROTO_CHANNEL_DIR in runc sandboxes) and asks the
 *     helper to connect to it and write the token and a newline first. The
 *     helper reaches it through the directory it opened when it started
 *     (before anything else ran in the sandbox), never by the path, which
 *     root in the sandbox can redirect by renaming /.chat2sbx. The
 *     answer goes out where answers went so far; from then on every
 *     line the helper writes (answers and notifications) goes over the socket,
 *     and requests are read from both. When the socket ends, or a new control
 *     plane attaches (a hello or attach naming a new attach_id), the helper
 *     closes it and writes on stdout again. Errors: "INVALID_ARGUMENT" for a
 *     bad token, "INTERNAL" when the socket cannot be reached (no such
 *     directory in this sandbox, a runtime that cannot reach host sockets):
 *     the control plane then stays on stdin/stdout. Older helpers answer
 *     -32601, which means the same.
 *     A file's bytes in bounded chunks (exports: a git bundle or a tar the
 *     control plane had a script make). open takes a regular file only
 *     (never a final symlink; a FIFO or device: INVALID_ARGUMENT, and the
 *     open never blocks); with unlink its name is removed at once, so later
 *     reads see the file as opened. At most BLOB_MAX_OPEN (4) at once: LIMIT.
 *     Unknown handle: NOT_FOUND. A new attachment (hello with a new
 *     attach_id) closes every open blob. The size is a hint: the file may
 *     still grow or shrink; the host reads until eof and enforces its own cap.
 *
 * Paths: relative paths are resolved against /workspace; absolute paths are
 * used as given (the whole container is the sandbox's to use). */
#ifndef CHAT2SBX_PROTO_H
#define CHAT2SBX_PROTO_H

/* The protocol's version, the "version" of hello's answer: an integer,
 * raised whenever the helper's side changes in a way an older control plane
 * would misread (a method removed or renamed, a member's meaning changed).
 * Adding an optional member or a new method does not raise it.
 * PROTO_HOST_MIN is the oldest helper protocol this control plane still
 * speaks. The rule (controlplane/helper/version.c, docs/operations.md
 * "Upgrades"): the control plane accepts a helper whose version v is an
 * integer with PROTO_HOST_MIN <= v <= PROTO_VERSION_NUM. A new sandbox whose
 * helper is outside that range is undone; a re-attached one (a sandbox that
 * kept running across an upgrade keeps its old helper) is marked failed with
 * what to do. PROTO_VERSION is the same number as the string hello sends. */
#define PROTO_VERSION_NUM 1
#define PROTO_HOST_MIN 1
#define PROTO_STR_(x) #x
#define PROTO_STR(x) PROTO_STR_(x)
#define PROTO_VERSION PROTO_STR(PROTO_VERSION_NUM)
/* What both sides must agree on. A request line (control plane → helper)
 * is at most PROTO_MAX_FRAME bytes, the helper's own bound; a reply line
 * (helper → control plane) at most PROTO_MAX_REPLY_FRAME, the control
 * plane's bound (a longer one closes the channel). */
#define PROTO_MAX_FRAME (32u * 1024 * 1024)
#define PROTO_MAX_REPLY_FRAME (64u * 1024 * 1024)
#define PROTO_DEFAULT_YIELD_MS 10000 /* bash.start/bash.poll yield_time_ms when absent */
/* bash.start command: at most this many bytes, Linux's limit on one exec
 * argument (MAX_ARG_STRLEN, 32 pages) less the terminating NUL. */
#define PROTO_COMMAND_MAX (128 * 1024 - 1)
#define PROTO_KILL_GRACE_MS 1500
/* The helper's environment, the same in a container (lifecycle/create.c)
 * and in a vm guest (template/vm/src/guest_init.c): the fixed entries as
 * initialisers of a NULL-terminated char * array, followed by
 * PROTO_HELPER_ENV_SANDBOX_ID "=<sandbox id>". The helper's sessions
 * inherit it (bash.start). */
#define PROTO_HELPER_ENV_FIXED                                                                                         \
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8",             \
	    "TERM=dumb", "USER=root"
#define PROTO_HELPER_ENV_SANDBOX_ID "CHAT2SBX_SANDBOX_ID"
#define PROTO_WORKSPACE "/workspace"
#define PROTO_LOG_DIR "/tmp/chat2sbx/bash"
#define PROTO_CHANNEL_DIR "/.chat2sbx/channel" /* channel.connect: where its socket is seen */
#define PROTO_CHANNEL_SOCKET_NAME "s"          /* channel.connect: its name there */
#define PROTO_CHANNEL_SOCKET PROTO_CHANNEL_DIR "/" PROTO_CHANNEL_SOCKET_NAME /* channel.connect: the socket itself */
#define PROTO_CHANNEL_TOKEN_LEN 32                  /* channel.connect: hex digits of the token */
#define PROTO_LIST_RECENT 50                        /* bash.list: latest sessions listed (+ running ones) */
#define PROTO_READ_WHOLE_MAX (64ull * 1024 * 1024)  /* file.read: larger files are not hashed or counted */
#define PROTO_SEARCH_FILE_MAX (64ull * 1024 * 1024) /* file.search: larger files are skipped */
#define PROTO_SEARCH_TIME_MS 5000                   /* file.search: wall-time bound */
#define PROTO_WALK_MAX_ENTRIES 100000               /* file.search/file.list: entries walked at most */
#define PROTO_BLOB_CHUNK_MAX (1024 * 1024)          /* blob.read: raw bytes per reply at most */
#define PROTO_PATCH_TEXT_MAX (8u * 1024 * 1024)     /* file.apply_patch: bytes of patch text at most */
#define PROTO_PATCH_FILES_MAX 1000                  /* file.apply_patch: files one patch may touch */

/* JSON-RPC 2.0 error codes (JSON-RPC 2.0 specification, section 5.1). */
#define PROTO_ERR_PARSE (-32700)
#define PROTO_ERR_INVALID_REQUEST (-32600)
#define PROTO_ERR_METHOD_NOT_FOUND (-32601)
#define PROTO_ERR_INVALID_PARAMS (-32602)
#define PROTO_ERR_INTERNAL (-32603)
/* Application error (operation failed; data.code says why). */
#define PROTO_ERR_OPERATION (-32000)

#endif
