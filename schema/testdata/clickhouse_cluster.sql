-- migration schema_migrations
CREATE TABLE IF NOT EXISTS mcplens.schema_migrations ON CLUSTER 'mcplens_cluster'
(
    version    UInt32,
    name       String,
    checksum   String,
    applied_at DateTime64(3, 'UTC')
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}', applied_at)
ORDER BY version;

-- migration exchanges
CREATE TABLE IF NOT EXISTS mcplens.exchanges_local ON CLUSTER 'mcplens_cluster'
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
    jsonrpc_code              Nullable(Int64),
    error_message             String CODEC(ZSTD(3)),
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toDate(ts)
ORDER BY (toStartOfHour(ts), server, ts, exchange_id)
TTL toDateTime(ts) + INTERVAL 2592000 SECOND
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS mcplens.exchanges ON CLUSTER 'mcplens_cluster' AS mcplens.exchanges_local
ENGINE = Distributed('mcplens_cluster', 'mcplens', 'exchanges_local', cityHash64(exchange_id));

-- migration exchange_bodies
CREATE TABLE IF NOT EXISTS mcplens.exchange_bodies_local ON CLUSTER 'mcplens_cluster'
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
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toDate(ts)
ORDER BY (ts, exchange_id)
TTL toDateTime(ts) + INTERVAL 604800 SECOND
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS mcplens.exchange_bodies ON CLUSTER 'mcplens_cluster' AS mcplens.exchange_bodies_local
ENGINE = Distributed('mcplens_cluster', 'mcplens', 'exchange_bodies_local', cityHash64(exchange_id));

-- migration tool_annotations
CREATE TABLE IF NOT EXISTS mcplens.tool_annotations_local ON CLUSTER 'mcplens_cluster'
(
    server      LowCardinality(String),
    tool        LowCardinality(String),
    read_only   Bool,
    destructive Bool,
    idempotent  Bool,
    open_world  Bool,
    seen_at     DateTime64(3, 'UTC')
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', seen_at)
ORDER BY (server, tool)
SETTINGS index_granularity = 8192;

CREATE TABLE IF NOT EXISTS mcplens.tool_annotations ON CLUSTER 'mcplens_cluster' AS mcplens.tool_annotations_local
ENGINE = Distributed('mcplens_cluster', 'mcplens', 'tool_annotations_local', cityHash64(server, tool));

-- migration quarantine
CREATE TABLE IF NOT EXISTS mcplens.quarantine_local ON CLUSTER 'mcplens_cluster'
(
    ts       DateTime64(3, 'UTC') CODEC(Delta(8), ZSTD(1)),
    position String CODEC(ZSTD(1)),
    reason   LowCardinality(String),
    raw      String CODEC(ZSTD(3))
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}')
PARTITION BY toYYYYMM(ts)
ORDER BY position
TTL toDateTime(ts) + INTERVAL 2592000 SECOND
SETTINGS index_granularity = 8192;

CREATE TABLE IF NOT EXISTS mcplens.quarantine ON CLUSTER 'mcplens_cluster' AS mcplens.quarantine_local
ENGINE = Distributed('mcplens_cluster', 'mcplens', 'quarantine_local', cityHash64(position));

-- migration ingest_state
CREATE TABLE IF NOT EXISTS mcplens.ingest_streams ON CLUSTER 'mcplens_cluster'
(
    stream      String,
    topic       String,
    part        Int32,
    next_offset Int64,
    low_offset  Int64,
    max_ts_ns   Int64,
    written_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}')
PARTITION BY toDate(written_at)
ORDER BY (stream, written_at)
TTL toDateTime(written_at) + INTERVAL 604800 SECOND
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS mcplens.ingest_waiting ON CLUSTER 'mcplens_cluster'
(
    stream        String,
    stream_offset Int64,
    event_id      String,
    ts            DateTime64(3, 'UTC'),
    event         String CODEC(ZSTD(3)),
    written_at    DateTime DEFAULT now()
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}')
PARTITION BY toDate(written_at)
ORDER BY (stream, stream_offset, event_id)
TTL toDateTime(written_at) + INTERVAL 604800 SECOND
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;

CREATE TABLE IF NOT EXISTS mcplens.ingest_released ON CLUSTER 'mcplens_cluster'
(
    stream        String,
    stream_offset Int64,
    event_id      String,
    written_at    DateTime DEFAULT now()
)
ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}')
PARTITION BY toDate(written_at)
ORDER BY (stream, stream_offset, event_id)
TTL toDateTime(written_at) + INTERVAL 604800 SECOND
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;

-- migration event_id_indexes
ALTER TABLE mcplens.exchanges_local ON CLUSTER 'mcplens_cluster' ADD INDEX IF NOT EXISTS idx_request_event_id request_event_id TYPE bloom_filter(0.001) GRANULARITY 1;

ALTER TABLE mcplens.exchanges_local ON CLUSTER 'mcplens_cluster' ADD INDEX IF NOT EXISTS idx_response_event_id response_event_id TYPE bloom_filter(0.001) GRANULARITY 1;

-- migration ingest_intents
CREATE TABLE IF NOT EXISTS mcplens.ingest_intents ON CLUSTER 'mcplens_cluster'
(
    stream      String,
    topic       String,
    part        Int32,
    next_offset Int64,
    written_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplicatedMergeTree('/clickhouse/tables/all/{database}/{table}', '{replica}')
PARTITION BY toDate(written_at)
ORDER BY (stream, written_at)
TTL toDateTime(written_at) + INTERVAL 604800 SECOND
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1;

-- migration evidence
ALTER TABLE mcplens.exchanges_local ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS evidence LowCardinality(String)
    DEFAULT multiIf(startsWith(rule, 'envelope-'), 'envelope', startsWith(rule, 'status_only-'), 'status_only',
                    rule IN ('transport-error', 'no-response', 'no-response-evicted'), '', 'bodies');

ALTER TABLE mcplens.exchanges ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS evidence LowCardinality(String)
    DEFAULT multiIf(startsWith(rule, 'envelope-'), 'envelope', startsWith(rule, 'status_only-'), 'status_only',
                    rule IN ('transport-error', 'no-response', 'no-response-evicted'), '', 'bodies');

-- migration retry_origin_filled
ALTER TABLE mcplens.exchanges_local ON CLUSTER 'mcplens_cluster' UPDATE retry_origin = if(retry_of != '' OR attempt > 1, 'unknown', 'none')
WHERE retry_origin = '' OR (retry_origin = 'none' AND (retry_of != '' OR attempt > 1))
SETTINGS mutations_sync = 0;

-- migration ingest_held
ALTER TABLE mcplens.ingest_streams ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS held Array(Int64) AFTER max_ts_ns;

-- migration merged_event_ids
ALTER TABLE mcplens.exchanges_local ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merged_event_ids Array(String) DEFAULT [];

ALTER TABLE mcplens.exchanges_local ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merged_observers Array(LowCardinality(String)) DEFAULT [];

ALTER TABLE mcplens.exchanges_local ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merged_offsets_ms Array(Float64) DEFAULT [];

ALTER TABLE mcplens.exchanges ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merged_event_ids Array(String) DEFAULT [];

ALTER TABLE mcplens.exchanges ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merged_observers Array(LowCardinality(String)) DEFAULT [];

ALTER TABLE mcplens.exchanges ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merged_offsets_ms Array(Float64) DEFAULT [];

-- migration ingest_merge_lag
ALTER TABLE mcplens.ingest_streams ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merge_lag_ns Int64 DEFAULT 0 AFTER held;

ALTER TABLE mcplens.ingest_streams ON CLUSTER 'mcplens_cluster' ADD COLUMN IF NOT EXISTS merge_lag_at_ns Int64 DEFAULT 0 AFTER merge_lag_ns;

