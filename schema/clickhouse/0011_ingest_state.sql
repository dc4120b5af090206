-- The ingest pipeline's state (pipeline.StateSink), written by each batch
-- after its rows: how far each source stream (a Kafka partition, a file)
-- is handled, the events still waiting for their other half or for other
-- observers' records, and the waiting events a later batch released. With
-- it the committed offset moves past waiting requests, and whichever
-- ingester is assigned a stream resumes it from here instead of
-- re-reading and re-pairing its tail.
--
-- ClickHouse has no transaction across tables, so a batch writes its rows,
-- then its waiting and released events, then its marks, and every table
-- is read so that any prefix of those inserts, and any repeat of them, is
-- a valid state: a stream resumes at the largest next_offset written (a
-- late or repeated mark never moves it back); a waiting event is keyed by
-- (stream, stream_offset, event_id) and counts until a row of
-- ingest_released names it. A mark also names low_offset, the oldest
-- event its stream had waiting, and a load reads the stream's events
-- from the smallest low_offset of the marks of the last ten minutes (the
-- marks a previous owner wrote while handing the stream over included),
-- so it touches only the stream's recent rows. The tables are replicated
-- to every node, like schema_migrations: any ingester reads any stream's
-- state. Saved events hold bodies, so the tables expire with bodies.
CREATE TABLE IF NOT EXISTS {{.DB}}.ingest_streams {{onCluster}}
(
    stream      String,
    topic       String,
    part        Int32,
    next_offset Int64,
    low_offset  Int64,
    max_ts_ns   Int64,
    written_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = {{engineGlobal "MergeTree" ""}}
PARTITION BY toDate(written_at)
ORDER BY (stream, written_at)
{{ttl "written_at" .BodyTTL}}
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1{{dedupWindow}};
CREATE TABLE IF NOT EXISTS {{.DB}}.ingest_waiting {{onCluster}}
(
    stream        String,
    stream_offset Int64,
    event_id      String,
    ts            DateTime64(3, 'UTC'),
    event         String CODEC(ZSTD(3)),
    written_at    DateTime DEFAULT now()
)
ENGINE = {{engineGlobal "ReplacingMergeTree" ""}}
PARTITION BY toDate(written_at)
ORDER BY (stream, stream_offset, event_id)
{{ttl "written_at" .BodyTTL}}
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1{{dedupWindow}};
CREATE TABLE IF NOT EXISTS {{.DB}}.ingest_released {{onCluster}}
(
    stream        String,
    stream_offset Int64,
    event_id      String,
    written_at    DateTime DEFAULT now()
)
ENGINE = {{engineGlobal "ReplacingMergeTree" ""}}
PARTITION BY toDate(written_at)
ORDER BY (stream, stream_offset, event_id)
{{ttl "written_at" .BodyTTL}}
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1{{dedupWindow}};
