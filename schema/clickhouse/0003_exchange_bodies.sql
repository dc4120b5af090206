-- exchange_bodies holds the redacted, capped headers and bodies of each
-- exchange, apart from the exchange record so that analytics never read
-- them. Readers look a body up by exchange_id and ts (known from the
-- exchange record), which the sorting key serves directly. The TTL is
-- shorter than the exchanges' (default 7 days).
CREATE TABLE IF NOT EXISTS {{.DB}}.{{local "exchange_bodies"}} {{onCluster}}
(
    exchange_id      String CODEC(ZSTD(1)),
    ts               DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    request_headers  Map(LowCardinality(String), String) CODEC(ZSTD(3)),
    response_headers Map(LowCardinality(String), String) CODEC(ZSTD(3)),
    request_body     String CODEC(ZSTD(3)),
    response_body    String CODEC(ZSTD(3)),
    truncated        Bool,

    INDEX idx_exchange_id exchange_id TYPE bloom_filter(0.001) GRANULARITY 1
)
ENGINE = {{engine "ReplacingMergeTree" ""}}
PARTITION BY toDate(ts)
ORDER BY (ts, exchange_id)
{{ttl "ts" .BodyTTL}}
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1{{dedupWindow}};
{{distributed "exchange_bodies" "cityHash64(exchange_id)"}}
