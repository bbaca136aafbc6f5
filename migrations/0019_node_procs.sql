-- 0019: a node's real process limits (issue 28). /info does not give a
-- node's kernel.pid_max or kernel.threads-max, so a node's process budget
-- assumed the kernel's default (32768). Each node's disk probe
-- (lifecycle/node_disk.c) now reads both from its /proc once it runs (the
-- kernel's values, not a model's: nothing of a model's runs there); NULL
-- until read, and the assumption holds meanwhile.

ALTER TABLE nodes ADD COLUMN pid_max INTEGER;
ALTER TABLE nodes ADD COLUMN threads_max INTEGER;
