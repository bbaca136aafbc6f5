-- 0013: the owner's page (issue 26) decides approvals, destroys sandboxes and
-- applies saved work as the person at the machine, and its rows say so:
-- actor 'ui'. SQLite cannot change a CHECK in place, so the table is made
-- again with the same columns and rows (ids kept) and its indexes.

CREATE TABLE audit_new (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    at_ms        INTEGER NOT NULL,
    actor        TEXT NOT NULL CHECK (actor IN ('mcp', 'cli', 'serve', 'ui')),
    action       TEXT NOT NULL,
    sandbox_id   TEXT,
    target       TEXT,
    status       TEXT NOT NULL,
    duration_ms  INTEGER NOT NULL DEFAULT 0,
    message      TEXT,
    method       TEXT,
    session      TEXT
);
INSERT INTO audit_new (id, at_ms, actor, action, sandbox_id, target, status, duration_ms, message, method, session)
    SELECT id, at_ms, actor, action, sandbox_id, target, status, duration_ms, message, method, session FROM audit;
DROP TABLE audit;
ALTER TABLE audit_new RENAME TO audit;
CREATE INDEX audit_at ON audit (at_ms);
CREATE INDEX audit_sandbox ON audit (sandbox_id, at_ms);
