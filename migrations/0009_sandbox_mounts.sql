-- 0009: the extra bind mounts of a sandbox and the host identity (st_dev,
-- st_ino) each one was verified to have from inside the container at
-- create: in direct mode the parts of the repository's .git that are
-- mounted over the sandbox's view (.git itself read-write; config, hooks,
-- commondir, ... read-only; lifecycle/git_guard.c). The engine resolves each
-- source again at every container start, and a host-side replacement of a
-- source drops its mount inside, so both sides are checked against these
-- rows (lifecycle/recovery.c, lifecycle/git_guard.c). The workspace mount
-- itself stays in sandboxes.mount_dev/mount_ino (0007).
CREATE TABLE sandbox_mounts (
    sandbox_id  TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    target      TEXT NOT NULL,                -- inside the container: /workspace/.git/config
    source      TEXT NOT NULL,                -- host path given to the engine
    read_only   INTEGER NOT NULL CHECK (read_only IN (0, 1)),
    dev         INTEGER NOT NULL,
    ino         INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, target)
);
