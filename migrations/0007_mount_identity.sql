-- 0007: the identity (st_dev, st_ino on the host) of the host directory a
-- sandbox has bind-mounted (direct: at /workspace, clone: at
-- /.chat2sbx/source), verified when it was created. The engine resolves a
-- bind source again at every container start, so a restarted container is
-- checked against these (lifecycle/recovery.c). NULL: managed workspaces,
-- runtimes that do not show the host's identity, rows from before 0007.
ALTER TABLE sandboxes ADD COLUMN mount_dev INTEGER;
ALTER TABLE sandboxes ADD COLUMN mount_ino INTEGER;
