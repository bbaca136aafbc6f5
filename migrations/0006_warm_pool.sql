-- 0006: the warm pool (issue 8). A pooled sandbox is started ahead of any
-- request, with its helper attached, so a sandbox_create for a new managed
-- workspace can claim it at once. Pooled rows are not user sandboxes: they
-- are hidden from listings, limits and expiry until a claim turns pooled to 0.
ALTER TABLE sandboxes ADD COLUMN pooled INTEGER NOT NULL DEFAULT 0 CHECK (pooled IN (0, 1));

CREATE INDEX sandboxes_pooled ON sandboxes (pooled, status);
