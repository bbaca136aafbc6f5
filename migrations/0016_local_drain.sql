-- 0016: node 'local' (this machine's engine) can be drained like any node
-- (issue 28): no new sandbox is placed on it, its sandboxes keep working.
-- 'local' has no row in nodes (0014 says why), so its state lives here: at
-- most one row; no row is 'ready'. 'down' is not kept: this machine's
-- engine is asked directly by whoever needs it.

CREATE TABLE node_local (
    id     INTEGER PRIMARY KEY CHECK (id = 1),
    state  TEXT NOT NULL CHECK (state IN ('ready', 'draining'))
);
