-- 0018: direct workspaces on another node (issue 28, item 4). A host
-- directory lives on one machine: an approval and the workspace it makes
-- record the node whose directory it is ('local' for this machine's, every
-- row before this migration), and placement puts that workspace's sandboxes
-- there only. A node says which of its directories may be asked for at all
-- (`chat2sbx node add --host-root DIR`, ':'-separated like
-- CHAT2SBX_ALLOWED_HOST_ROOTS; NULL: none of its paths).
--
-- The same path on two machines is two directories: the uniqueness of an
-- approval (path, mode) and of a host workspace (path, mode) becomes per node.

ALTER TABLE approvals ADD COLUMN node TEXT NOT NULL DEFAULT 'local';
ALTER TABLE nodes ADD COLUMN host_roots TEXT;

DROP INDEX approvals_path_mode;
CREATE UNIQUE INDEX approvals_node_path_mode ON approvals (node, real_path, mode);

DROP INDEX workspaces_host_path_mode;
CREATE UNIQUE INDEX workspaces_node_host_path_mode ON workspaces (node, path, mode) WHERE mode != 'managed';
