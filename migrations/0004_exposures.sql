-- 0004: exposures (sandbox_expose). One row per published container TCP port:
-- a forwarder container on a per-sandbox engine network listens on
-- host:host_port and relays to the sandbox's container_port. The row is the
-- registry's half; the engine's half carries the same sandbox id and port in
-- labels, so the two can be reconciled. Times are ms since the Unix epoch.

CREATE TABLE exposures (
    sandbox_id      TEXT NOT NULL REFERENCES sandboxes(id) ON DELETE CASCADE,
    container_port  INTEGER NOT NULL CHECK (container_port BETWEEN 1 AND 65535),
    host            TEXT NOT NULL,                    -- CHAT2SBX_EXPOSE_HOST when it was made
    host_port       INTEGER NOT NULL CHECK (host_port BETWEEN 1 AND 65535),
    forwarder_name  TEXT NOT NULL UNIQUE,             -- engine container name
    forwarder_id    TEXT,                             -- engine container id
    network         TEXT NOT NULL,                    -- per-sandbox engine network name
    created_at_ms   INTEGER NOT NULL,
    PRIMARY KEY (sandbox_id, container_port)
);

-- One host address and port serve at most one exposure.
CREATE UNIQUE INDEX exposures_host_port ON exposures (host, host_port);
