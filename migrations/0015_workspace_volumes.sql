-- 0015: a managed workspace on another node outlives its sandbox (issue 28),
-- as one on this machine does. Its files are an engine volume of that node
-- (a node gives chat2sbx its engine API only: a volume is the one storage
-- that API makes, lists and removes), so the row records where: the node
-- and the volume's name. A later sandbox_create with its workspace_id goes
-- to that node and mounts the same volume; removing a sandbox keeps it, as
-- removing one on this machine keeps the workspace's directory.
--
-- node is 'local' for every workspace of this machine (all rows before
-- this migration but those below); volume is NULL there (path holds the
-- files). A managed workspace made on a node before this migration had a
-- volume named after its sandbox ('chat2sbx-ws-' || sandbox id): a row
-- whose newest sandbox still holding its container is on a node is given
-- that node and that name, so the volume is kept from now on too (one whose
-- newest is on 'local' has its files here). Rows whose volume went
-- with their sandbox were marked trashed then and stay so.

ALTER TABLE workspaces ADD COLUMN node TEXT NOT NULL DEFAULT 'local';
ALTER TABLE workspaces ADD COLUMN volume TEXT;

UPDATE workspaces
   SET node = (SELECT s.node FROM sandboxes s
                WHERE s.workspace_id = workspaces.id AND s.status <> 'removed'
                ORDER BY s.created_at_ms DESC LIMIT 1),
       volume = 'chat2sbx-ws-' || (SELECT s.id FROM sandboxes s
                WHERE s.workspace_id = workspaces.id AND s.status <> 'removed'
                ORDER BY s.created_at_ms DESC LIMIT 1)
 WHERE mode = 'managed' AND trashed_at_ms IS NULL
   AND (SELECT s.node FROM sandboxes s
         WHERE s.workspace_id = workspaces.id AND s.status <> 'removed'
         ORDER BY s.created_at_ms DESC LIMIT 1) <> 'local';
