-- exchanges: the same columns as the ClickHouse table, in DuckDB types.
-- Times are TIMESTAMP holding UTC at millisecond precision (the store
-- truncates, as ClickHouse's DateTime64(3) does).
--
-- exchange_id is unique, enforced by the only writer (duckstore): a batch
-- is inserted with an anti-join against the stored rows of the batch's ts
-- range (an exchange id always comes with the same request ts), so readers
-- need no deduplication and the DuckDB rendering of the questions drops
-- their `LIMIT 1 BY exchange_id`. Not a PRIMARY KEY: DuckDB's ART index on
-- a million ids made every batch insert and checkpoint rewrite it (10k-row
-- batches took 3-10x longer), while the ts zone maps make the anti-join
-- read only the batch's row groups.
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
