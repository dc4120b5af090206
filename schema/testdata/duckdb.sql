-- migration schema_migrations
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       VARCHAR NOT NULL,
    checksum   VARCHAR NOT NULL,
    applied_at TIMESTAMP NOT NULL
);

-- migration exchanges
CREATE TABLE IF NOT EXISTS exchanges (
    exchange_id               VARCHAR NOT NULL,
    request_event_id          VARCHAR NOT NULL,
    response_event_id         VARCHAR NOT NULL,
    ts                        TIMESTAMP NOT NULL,
    end_ts                    TIMESTAMP NOT NULL,
    duration_ms               DOUBLE NOT NULL,
    source                    VARCHAR NOT NULL,
    sources                   VARCHAR[] NOT NULL,
    one_sided                 BOOLEAN NOT NULL,
    observer                  VARCHAR NOT NULL,
    server                    VARCHAR NOT NULL,
    url                       VARCHAR NOT NULL,
    client_name               VARCHAR NOT NULL,
    client_version            VARCHAR NOT NULL,
    session_id                VARCHAR NOT NULL,
    http_method               VARCHAR NOT NULL,
    http_status               INTEGER NOT NULL,
    request_bytes             BIGINT NOT NULL,
    response_bytes            BIGINT NOT NULL,
    body_truncated            BOOLEAN NOT NULL,
    transport_error           VARCHAR NOT NULL,
    stream_close_reason       VARCHAR NOT NULL,
    idempotency_key           VARCHAR NOT NULL,
    layer                     VARCHAR NOT NULL,
    outcome                   VARCHAR NOT NULL,
    error_class               VARCHAR NOT NULL,
    jsonrpc_code              BIGINT,
    error_message             VARCHAR NOT NULL,
    retry_after_s             BIGINT,
    retry_advice              VARCHAR NOT NULL,
    outcome_known             BOOLEAN NOT NULL,
    side_effect_risk          VARCHAR NOT NULL,
    rule                      VARCHAR NOT NULL,
    jsonrpc_id                VARCHAR NOT NULL,
    method                    VARCHAR NOT NULL,
    tool_name                 VARCHAR NOT NULL,
    params_hash               VARCHAR NOT NULL,
    protocol_version          VARCHAR NOT NULL,
    content_type              VARCHAR NOT NULL,
    transport                 VARCHAR NOT NULL,
    sse_events                INTEGER NOT NULL,
    batch                     INTEGER NOT NULL,
    notification              BOOLEAN NOT NULL,
    continuation              BOOLEAN NOT NULL,
    attempt                   INTEGER NOT NULL,
    retry_of                  VARCHAR NOT NULL,
    retry_origin              VARCHAR NOT NULL,
    chain_id                  VARCHAR NOT NULL,
    unknown_side_effect_retry BOOLEAN NOT NULL,
    continues                 VARCHAR NOT NULL,
    client_outcome            VARCHAR NOT NULL,
    client_disagrees          BOOLEAN NOT NULL,
    no_response_reason        VARCHAR NOT NULL
);

-- migration exchange_bodies
CREATE TABLE IF NOT EXISTS exchange_bodies (
    exchange_id      VARCHAR NOT NULL,
    ts               TIMESTAMP NOT NULL,
    request_headers  JSON NOT NULL,
    response_headers JSON NOT NULL,
    request_body     VARCHAR NOT NULL,
    response_body    VARCHAR NOT NULL,
    truncated        BOOLEAN NOT NULL
);

-- migration tool_annotations
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

-- migration quarantine
CREATE TABLE IF NOT EXISTS quarantine (
    ts       TIMESTAMP NOT NULL,
    position VARCHAR PRIMARY KEY,
    reason   VARCHAR NOT NULL,
    raw      BLOB NOT NULL
);

-- migration bodies_as_bytes
ALTER TABLE exchange_bodies ALTER request_body TYPE BLOB USING encode(request_body);

ALTER TABLE exchange_bodies ALTER response_body TYPE BLOB USING encode(response_body);

CHECKPOINT;

-- migration ingest_state
CREATE TABLE IF NOT EXISTS ingest_streams (
    stream      VARCHAR PRIMARY KEY,
    topic       VARCHAR NOT NULL,
    part        INTEGER NOT NULL,
    next_offset BIGINT NOT NULL,
    max_ts_ns   BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS ingest_waiting (
    stream        VARCHAR NOT NULL,
    stream_offset BIGINT NOT NULL,
    event_id      VARCHAR NOT NULL,
    ts            TIMESTAMP NOT NULL,
    event         BLOB NOT NULL
);

-- migration evidence
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS evidence VARCHAR;

UPDATE exchanges SET evidence = CASE
    WHEN starts_with(rule, 'envelope-') THEN 'envelope'
    WHEN starts_with(rule, 'status_only-') THEN 'status_only'
    WHEN rule IN ('transport-error', 'no-response', 'no-response-evicted') THEN ''
    ELSE 'bodies' END
WHERE evidence IS NULL;

ALTER TABLE exchanges ALTER COLUMN evidence SET NOT NULL;

-- migration headers_json_objects
UPDATE exchange_bodies SET request_headers = CAST(request_headers->>'$' AS JSON)
WHERE json_type(request_headers) = 'VARCHAR';

UPDATE exchange_bodies SET response_headers = CAST(response_headers->>'$' AS JSON)
WHERE json_type(response_headers) = 'VARCHAR';

-- migration retry_origin_filled
UPDATE exchanges SET retry_origin = CASE WHEN retry_of <> '' OR attempt > 1 THEN 'unknown' ELSE 'none' END
WHERE retry_origin = '' OR (retry_origin = 'none' AND (retry_of <> '' OR attempt > 1));

-- migration ingest_held
ALTER TABLE ingest_streams ADD COLUMN IF NOT EXISTS held BIGINT[] DEFAULT [];

-- migration headers_as_text
ALTER TABLE exchange_bodies ALTER request_headers TYPE VARCHAR;

ALTER TABLE exchange_bodies ALTER response_headers TYPE VARCHAR;

CHECKPOINT;

-- migration merged_event_ids
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS merged_event_ids VARCHAR[];

ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS merged_observers VARCHAR[];

ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS merged_offsets_ms DOUBLE[];

UPDATE exchanges SET merged_event_ids = [] WHERE merged_event_ids IS NULL;

UPDATE exchanges SET merged_observers = [] WHERE merged_observers IS NULL;

UPDATE exchanges SET merged_offsets_ms = [] WHERE merged_offsets_ms IS NULL;

ALTER TABLE exchanges ALTER COLUMN merged_event_ids SET NOT NULL;

ALTER TABLE exchanges ALTER COLUMN merged_observers SET NOT NULL;

ALTER TABLE exchanges ALTER COLUMN merged_offsets_ms SET NOT NULL;

-- migration ingest_merge_lag
ALTER TABLE ingest_streams ADD COLUMN IF NOT EXISTS merge_lag_ns BIGINT DEFAULT 0;

ALTER TABLE ingest_streams ADD COLUMN IF NOT EXISTS merge_lag_at_ns BIGINT DEFAULT 0;

