-- tool_annotations holds the latest known annotations of each tool of each
-- server, learned from recorded tools/list results. The replacing merge
-- keeps the row with the newest seen_at per (server, tool); readers take
-- argMax(..., seen_at) so unmerged parts do not matter. No TTL: a tool's
-- annotations stay valid until a newer tools/list says otherwise.
CREATE TABLE IF NOT EXISTS {{.DB}}.{{local "tool_annotations"}} {{onCluster}}
(
    server      LowCardinality(String),
    tool        LowCardinality(String),
    read_only   Bool,
    destructive Bool,
    idempotent  Bool,
    open_world  Bool,
    seen_at     DateTime64(3, 'UTC')
)
ENGINE = {{engine "ReplacingMergeTree" "seen_at"}}
ORDER BY (server, tool)
SETTINGS index_granularity = 8192{{dedupWindow}};
{{distributed "tool_annotations" "cityHash64(server, tool)"}}
