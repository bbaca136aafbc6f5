-- 0008: the size of a sandbox's writable layer (issue 13), where the
-- engine's storage can limit it (HostConfig.StorageOpt size); 0 = none.
ALTER TABLE sandboxes ADD COLUMN disk_bytes INTEGER NOT NULL DEFAULT 0 CHECK (disk_bytes >= 0);
