-- The ingest pipeline's state (pipeline.StateSink), written in the same
-- transaction as each batch: how far each source stream (Kafka partition,
-- file) is handled, and the events still waiting for their other half or
-- for other observers' records. With it the committed offset moves past
-- waiting requests, and a restart resumes from here instead of re-reading
-- and re-pairing the tail.
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
