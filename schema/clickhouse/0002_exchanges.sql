-- exchanges holds one row per HTTP exchange: every column of the exchange
-- record (log contract, section 2). Times are DateTime64(3, 'UTC').
--
-- Duplicates: exchange_id is deterministic, so a replayed exchange is the
-- same row. ReplacingMergeTree collapses rows whose sorting key is equal,
-- and the key ends in exchange_id; readers never rely on merges having run
-- and read `LIMIT 1 BY exchange_id` (or aggregate by it) instead of FINAL.
--
-- ORDER BY (toStartOfHour(ts), server, ts, exchange_id): the hour bucket
-- first (the OpenTelemetry exporter's and SigNoz's pattern), then server.
-- Every question filters a time range and most filter or group by server.
-- Measured in chDB (tests/chdb/order_by.py), rows read by a filter on
-- 3,000,000 rows over 1 day of 40 servers (~125k rows an hour):
--
--   filter             hour,server   server,hour   server,ts       ts
--   1h all servers          139264        745343      745343   139264
--   1h one server            16384          8192        8192   139264
--   6h all servers          759697       1325067     1325067   759697
--   6h one server            80681         16384        8192   759697
--   1d one server           309863         32768       32768  3000000
--
-- It reads as little as a plain ts key for the all-server questions
-- (leaderboards, breakdowns) and 8-10x less for one server; server-first
-- keys win for one server over days but read 5x more without one.
-- ClickHouse does not derive a condition on toStartOfHour(ts) from one on
-- a DateTime64 ts (EXPLAIN indexes=1 shows the key unused), so every query
-- also states `toStartOfHour(ts) >= toStartOfHour({from})` and
-- `toStartOfHour(ts) < {to}`. ts inside (bucket, server) keeps a session's
-- and a chain's rows close; exchange_id last makes the key one row per
-- exchange, which the replacing merge collapses on.
CREATE TABLE IF NOT EXISTS {{.DB}}.{{local "exchanges"}} {{onCluster}}
(
    exchange_id               String CODEC(ZSTD(1)),
    request_event_id          String CODEC(ZSTD(1)),
    response_event_id         String CODEC(ZSTD(1)),
    ts                        DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    end_ts                    DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    duration_ms               Float64 CODEC(ZSTD(1)),
    source                    Enum8('' = 0, 'gateway' = 1, 'client' = 2, 'server' = 3),
    sources                   Array(LowCardinality(String)),
    one_sided                 Bool,
    observer                  LowCardinality(String),
    server                    LowCardinality(String),
    url                       String CODEC(ZSTD(1)),
    client_name               LowCardinality(String),
    client_version            LowCardinality(String),
    session_id                String CODEC(ZSTD(1)),
    http_method               LowCardinality(String),
    http_status               UInt16 CODEC(T64, ZSTD(1)),
    request_bytes             UInt32 CODEC(T64, ZSTD(1)),
    response_bytes            UInt32 CODEC(T64, ZSTD(1)),
    body_truncated            Bool,
    transport_error           LowCardinality(String),
    stream_close_reason       LowCardinality(String),
    idempotency_key           String CODEC(ZSTD(1)),
    layer                     LowCardinality(String),
    outcome                   LowCardinality(String),
    error_class               LowCardinality(String),
    -- NULL: the exchange carried no JSON-RPC error code.
    jsonrpc_code              Nullable(Int64),
    error_message             String CODEC(ZSTD(3)),
    -- NULL: no Retry-After header (0 is "retry now").
    retry_after_s             Nullable(Int64),
    retry_advice              Enum8('' = 0, 'NONE' = 1, 'RETRY_AFTER' = 2, 'RETRY_IF_SAFE' = 3, 'FIX_REQUEST' = 4, 'REAUTHENTICATE' = 5, 'REINITIALIZE' = 6, 'DO_NOT_RETRY_BLINDLY' = 7, 'CONTINUE_INPUT' = 8),
    outcome_known             Bool,
    side_effect_risk          Enum8('' = 0, 'none' = 1, 'possible' = 2, 'unknown' = 3),
    rule                      LowCardinality(String),
    jsonrpc_id                String CODEC(ZSTD(1)),
    method                    LowCardinality(String),
    tool_name                 LowCardinality(String),
    params_hash               String CODEC(ZSTD(1)),
    protocol_version          LowCardinality(String),
    content_type              LowCardinality(String),
    transport                 Enum8('' = 0, 'json' = 1, 'sse' = 2, 'empty' = 3, 'none' = 4),
    sse_events                UInt32 CODEC(T64, ZSTD(1)),
    batch                     UInt32 CODEC(T64, ZSTD(1)),
    notification              Bool,
    continuation              Bool,
    attempt                   UInt32 CODEC(T64, ZSTD(1)),
    retry_of                  String CODEC(ZSTD(1)),
    retry_origin              LowCardinality(String),
    chain_id                  String CODEC(ZSTD(1)),
    unknown_side_effect_retry Bool,
    continues                 String CODEC(ZSTD(1)),
    client_outcome            LowCardinality(String),
    client_disagrees          Bool,
    no_response_reason        LowCardinality(String),

    INDEX idx_exchange_id exchange_id TYPE bloom_filter(0.001) GRANULARITY 1,
    INDEX idx_session_id session_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_chain_id chain_id TYPE bloom_filter(0.01) GRANULARITY 1,
    INDEX idx_error_message lowerUTF8(error_message) TYPE ngrambf_v1(3, 4096, 2, 0) GRANULARITY 1
)
ENGINE = {{engine "ReplacingMergeTree" ""}}
PARTITION BY toDate(ts)
ORDER BY (toStartOfHour(ts), server, ts, exchange_id)
{{ttl "ts" .TTL}}
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1{{dedupWindow}};
{{distributed "exchanges" "cityHash64(exchange_id)"}}
