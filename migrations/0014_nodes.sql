-- 0014: more than one machine (issue 28). A node is another machine's Docker
-- Engine, reached at tcp://HOST:PORT with mutual TLS; sandboxes (and the
-- exports saved from them) record the node they ran on.
--
-- This machine's engine is node 'local' implicitly, not a row: its address
-- is configuration (CHAT2SBX_DOCKER_SOCKET, read at every start), it needs
-- no TLS files, and its facts are asked of the engine when wanted. With no
-- row for it, "no node added" is an empty table, so a single-machine
-- registry reads exactly as before, and a sandbox row without a node (every
-- row before this migration) is on 'local' by the column's default. The
-- name 'local' is reserved: `node add local` is refused.
--
-- The TLS columns hold paths of copies under STATE_DIR/nodes/<name>/ (0600
-- files in a 0700 directory), never the bytes. The labels are what the
-- engine's GET /info said at the last contact: runtimes (comma-separated
-- names), memory and CPUs, the engine's version; kvm is 1 or 0 once known
-- and NULL until then (/info does not tell).

CREATE TABLE nodes (
    name             TEXT PRIMARY KEY CHECK (name <> 'local'),
    endpoint         TEXT NOT NULL UNIQUE,          -- tcp://HOST:PORT
    tls_ca           TEXT NOT NULL,
    tls_cert         TEXT NOT NULL,
    tls_key          TEXT NOT NULL,
    runtimes         TEXT NOT NULL DEFAULT '',
    kvm              INTEGER CHECK (kvm IN (0, 1)),
    memory_bytes     INTEGER NOT NULL DEFAULT 0 CHECK (memory_bytes >= 0),
    cpus             INTEGER NOT NULL DEFAULT 0 CHECK (cpus >= 0),
    engine_version   TEXT,
    state            TEXT NOT NULL DEFAULT 'ready' CHECK (state IN ('ready', 'draining', 'down')),
    last_contact_ms  INTEGER,                        -- last answer to _ping and /info; NULL: never
    created_at_ms    INTEGER NOT NULL
);

ALTER TABLE sandboxes ADD COLUMN node TEXT NOT NULL DEFAULT 'local';
CREATE INDEX sandboxes_node ON sandboxes (node, status);
ALTER TABLE exports ADD COLUMN node TEXT NOT NULL DEFAULT 'local';
