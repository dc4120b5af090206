-- tool_annotations: the latest annotations per server and tool (the store
-- replaces a row only with a newer seen_at).
CREATE TABLE IF NOT EXISTS tool_annotations (
    server      VARCHAR NOT NULL,
    tool        VARCHAR NOT NULL,
    read_only   BOOLEAN NOT NULL,
    destructive BOOLEAN NOT NULL,
    idempotent  BOOLEAN NOT NULL,
    open_world  BOOLEAN NOT NULL,
    seen_at     TIMESTAMP NOT NULL,
    PRIMARY KEY (server, tool)
);
