-- 0017: the free space of each node's engine storage (issue 28, item 3:
-- the disk guard works per node). serve's node disk guard
-- (controlplane/lifecycle/node_disk.c) asks a small probe container on the
-- node for the filesystem of the engine's data and writes here what it
-- found, so `chat2sbx node list` and `node show` can tell it with or
-- without serve running. NULL: not known (never looked, the node lacks the
-- template image, or the probe failed). disk_low is 1 while serve refuses
-- creates there and keeps the node's sandboxes paused.

ALTER TABLE nodes ADD COLUMN disk_total_bytes INTEGER CHECK (disk_total_bytes >= 0);
ALTER TABLE nodes ADD COLUMN disk_free_bytes INTEGER CHECK (disk_free_bytes >= 0);
ALTER TABLE nodes ADD COLUMN disk_watermark_bytes INTEGER CHECK (disk_watermark_bytes >= 0);
ALTER TABLE nodes ADD COLUMN disk_low INTEGER CHECK (disk_low IN (0, 1));
ALTER TABLE nodes ADD COLUMN disk_checked_ms INTEGER;
