-- 0010: saved clone work (issue 14). A clone-mode sandbox's work is bundled
-- out of its container before any removal, and whenever the model asks
-- (sandbox_export); each save is a row of exports and a directory
-- DATA_ROOT/exports/<sandbox_id>/<export_id>/ with its manifest.
--
-- sandboxes gains the status 'expired' (idle past the timeout while its save
-- failed: the container is stopped, not removed, and the save is retried)
-- and the status 'removing' (issue 13 item 4: written before the engine is
-- asked to remove the container, so a removal a full disk interrupts is
-- finished by the next maintenance pass or start; it counts as live for the
-- one-live-sandbox-per-workspace rule when the status it replaced was,
-- which removing_from keeps),
-- the refs of the approved repository when the clone was made (what "nothing
-- new" compares with), and the last known answer to "unsaved work?". A CHECK
-- constraint cannot be altered in SQLite, so the table is rebuilt
-- (sqlite.org/lang_altertable.html, "other kinds of table schema changes").
-- exposures and sandbox_mounts (0009) refer to sandboxes; their rows are
-- kept aside while the table is rebuilt, since dropping sandboxes would
-- cascade (foreign keys are on and cannot be turned off in a transaction).
-- Every column of 0001..0009 is kept (disk_bytes from 0008).

CREATE TABLE exposures_keep AS SELECT * FROM exposures;
DROP TABLE exposures;
CREATE TABLE sandbox_mounts_keep AS SELECT * FROM sandbox_mounts;
DROP TABLE sandbox_mounts;

CREATE TABLE sandboxes_new (
    id                TEXT PRIMARY KEY,
    workspace_id      TEXT NOT NULL REFERENCES workspaces(id),
    status            TEXT NOT NULL CHECK (status IN ('creating', 'running', 'failed', 'removed', 'expired',
                                                      'removing')),
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
    removed_at_ms     INTEGER,
    pooled            INTEGER NOT NULL DEFAULT 0 CHECK (pooled IN (0, 1)),
    mount_dev         INTEGER,
    mount_ino         INTEGER,
    disk_bytes        INTEGER NOT NULL DEFAULT 0 CHECK (disk_bytes >= 0),
    removing_from     TEXT,              -- with status 'removing': the status it had when its removal began
    source_refs       TEXT,              -- clone of a git repository: "<oid> <refname>\n" of its heads and tags at create
    unsaved           INTEGER,           -- 1/0: work since the last export (as last checked); NULL: not known
    unsaved_checked_at_ms INTEGER
);
INSERT INTO sandboxes_new (id, workspace_id, status, container_name, container_id, image, runtime, memory_bytes,
                           nano_cpus, network, failure_reason, created_at_ms, updated_at_ms, last_activity_ms,
                           removed_at_ms, pooled, mount_dev, mount_ino, disk_bytes)
    SELECT id, workspace_id, status, container_name, container_id, image, runtime, memory_bytes, nano_cpus, network,
           failure_reason, created_at_ms, updated_at_ms, last_activity_ms, removed_at_ms, pooled, mount_dev, mount_ino,
           disk_bytes
    FROM sandboxes;
DROP TABLE sandboxes;
ALTER TABLE sandboxes_new RENAME TO sandboxes;

CREATE UNIQUE INDEX sandboxes_one_live_per_workspace
    ON sandboxes (workspace_id)
    WHERE status IN ('creating', 'running') OR (status = 'removing' AND removing_from IN ('creating', 'running'));
CREATE INDEX sandboxes_status ON sandboxes (status);
CREATE INDEX sandboxes_pooled ON sandboxes (pooled, status);

CREATE TABLE exposures (
    sandbox_id      TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    container_port  INTEGER NOT NULL CHECK (container_port BETWEEN 1 AND 65535),
    host            TEXT NOT NULL,
    host_port       INTEGER NOT NULL CHECK (host_port BETWEEN 1 AND 65535),
    forwarder_name  TEXT NOT NULL UNIQUE,
    forwarder_id    TEXT,
    network         TEXT NOT NULL,
    created_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, container_port)
);
CREATE UNIQUE INDEX exposures_host_port ON exposures (host, host_port);
INSERT INTO exposures SELECT * FROM exposures_keep;
DROP TABLE exposures_keep;

CREATE TABLE sandbox_mounts (
    sandbox_id  TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    target      TEXT NOT NULL,                -- inside the container: /workspace/.git/config
    source      TEXT NOT NULL,                -- host path given to the engine
    read_only   INTEGER NOT NULL CHECK (read_only IN (0, 1)),
    dev         INTEGER NOT NULL,
    ino         INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, target)
);
INSERT INTO sandbox_mounts SELECT * FROM sandbox_mounts_keep;
DROP TABLE sandbox_mounts_keep;

CREATE TABLE exports (
    id              TEXT PRIMARY KEY,                 -- exp_…
    sandbox_id      TEXT NOT NULL,                    -- kept after the sandbox row is removed
    workspace_id    TEXT NOT NULL REFERENCES workspaces(id),
    kind            TEXT NOT NULL CHECK (kind IN ('git', 'tar', 'none')),  -- none: nothing new, manifest only
    reason          TEXT NOT NULL CHECK (reason IN ('checkpoint', 'destroy', 'expire', 'cleanup')),
    path            TEXT NOT NULL,                    -- its directory (DATA_ROOT/exports/… or, once trashed, DATA_ROOT/trash/…)
    bytes           INTEGER NOT NULL DEFAULT 0,       -- bundle or archive size
    refs            INTEGER NOT NULL DEFAULT 0,       -- branches and tags it holds
    commits         INTEGER NOT NULL DEFAULT 0,       -- commits not in the approved repository when the clone was made
    dirty_files     INTEGER NOT NULL DEFAULT 0,       -- files in the snapshot of uncommitted and untracked changes
    fingerprint     TEXT,                             -- the clone's state it saved (a later save of the same state is skipped)
    message         TEXT,                             -- sandbox_export's message
    created_at_ms   INTEGER NOT NULL,
    applied_at_ms   INTEGER,                          -- last `chat2sbx export apply`
    applied_count   INTEGER NOT NULL DEFAULT 0,
    trashed_at_ms   INTEGER                           -- moved to DATA_ROOT/trash after 30 days (never deleted)
);
CREATE INDEX exports_sandbox ON exports (sandbox_id, created_at_ms);
