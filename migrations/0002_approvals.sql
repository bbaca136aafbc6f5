-- 0002: host-path approvals. A person on this machine decides whether a host
-- directory may become a workspace; the decision is kept and reused for the
-- same resolved path and mode. Times are ms since the Unix epoch (UTC).

CREATE TABLE approvals (
    id              TEXT PRIMARY KEY,                 -- approval_…
    host_path       TEXT NOT NULL,                    -- as requested
    real_path       TEXT NOT NULL,                    -- resolved at request time
    mode            TEXT NOT NULL CHECK (mode IN ('clone', 'direct')),
    status          TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'rejected')),
    workspace_id    TEXT REFERENCES workspaces(id),   -- set when approved
    requested_by    TEXT NOT NULL,                    -- 'mcp' or 'cli'
    requested_at_ms INTEGER NOT NULL,
    decided_at_ms   INTEGER
);

-- One decision (or pending request) per resolved path and mode.
CREATE UNIQUE INDEX approvals_path_mode ON approvals (real_path, mode);

-- One workspace per resolved host path and mode.
CREATE UNIQUE INDEX workspaces_host_path_mode ON workspaces (path, mode) WHERE mode != 'managed';
