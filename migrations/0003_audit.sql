-- 0003: the audit trail. Not logging: one row per tool call that reached a
-- handler and per approval decision, kept in the registry so the person at
-- the machine can see what was done (chat2sbx never stores secrets here).

CREATE TABLE audit (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms        INTEGER NOT NULL,
    actor        TEXT NOT NULL CHECK (actor IN ('mcp', 'cli', 'serve')),
    action       TEXT NOT NULL,             -- tool name, or approval.approve / approval.reject / workspace.add
    sandbox_id   TEXT,
    target       TEXT,                      -- approval id, workspace id, path … when it applies
    status       TEXT NOT NULL,             -- ok, or the error code (NOT_FOUND, DENIED, …)
    duration_ms  INTEGER NOT NULL DEFAULT 0,
    message      TEXT                       -- the error message, bounded
);

CREATE INDEX audit_at ON audit (at_ms);
CREATE INDEX audit_sandbox ON audit (sandbox_id, at_ms);
