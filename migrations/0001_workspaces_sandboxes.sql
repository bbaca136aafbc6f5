-- 0001: the registry's first tables: workspaces and the sandboxes that use them.
-- Times are milliseconds since the Unix epoch (UTC).

CREATE TABLE workspaces (
    id              TEXT PRIMARY KEY,                 -- ws_…
    mode            TEXT NOT NULL CHECK (mode IN ('managed', 'clone', 'direct')),
    path            TEXT NOT NULL,                    -- host directory behind /workspace
    host_path       TEXT,                             -- the approved host path (clone, direct)
    created_at_ms   INTEGER NOT NULL,
    released_at_ms  INTEGER,                          -- last sandbox removed (retention clock)
    trashed_at_ms   INTEGER                           -- moved to DATA_ROOT/trash
);

CREATE TABLE sandboxes (
    id                TEXT PRIMARY KEY,               -- sbx_…
    workspace_id      TEXT NOT NULL REFERENCES workspaces(id),
    status            TEXT NOT NULL CHECK (status IN ('creating', 'running', 'failed', 'removed')),
    container_name    TEXT NOT NULL UNIQUE,
    container_id      TEXT,
    image             TEXT NOT NULL,
    runtime           TEXT,
    memory_bytes      INTEGER,
    nano_cpus         INTEGER,
    network           INTEGER NOT NULL DEFAULT 1,
    failure_reason    TEXT,
    created_at_ms     INTEGER NOT NULL,
    updated_at_ms     INTEGER NOT NULL,
    last_activity_ms  INTEGER NOT NULL,
    removed_at_ms     INTEGER
);

-- One workspace has at most one live sandbox (DESIGN.md, Workspaces).
CREATE UNIQUE INDEX sandboxes_one_live_per_workspace
    ON sandboxes (workspace_id) WHERE status IN ('creating', 'running');
CREATE INDEX sandboxes_status ON sandboxes (status);
