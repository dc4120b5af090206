-- quarantine holds input lines that could not be decoded: the raw bytes,
-- where they came from (file:line or topic/partition/offset), why, and when
-- they were rejected. The source position is the key: a line re-read after
-- a restart replaces its earlier row.
CREATE TABLE IF NOT EXISTS {{.DB}}.{{local "quarantine"}} {{onCluster}}
(
    ts       DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    position String CODEC(ZSTD(1)),
    reason   LowCardinality(String),
    raw      String CODEC(ZSTD(3))
)
ENGINE = {{engine "ReplacingMergeTree" ""}}
PARTITION BY toYYYYMM(ts)
ORDER BY position
{{ttl "ts" .TTL}}
SETTINGS index_granularity = 8192{{dedupWindow}};
{{distributed "quarantine" "cityHash64(position)"}}
