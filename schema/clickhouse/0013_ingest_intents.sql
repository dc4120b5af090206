-- What a batch is about to store, written before its rows: each stream's
-- next offset once the batch is stored, the same as the marks it writes
-- last. ClickHouse has no transaction across tables, so an ingester that
-- dies (or loses the server) between a batch's rows and its marks leaves
-- exchanges stored past the stream's last mark. The stream's next owner
-- resumes at that mark and re-reads those events, and forms their
-- exchanges again in batches of its own (another token, so the
-- deduplication window does not catch them). A stream whose newest intent
-- is ahead of its newest mark tells it where that unsure range ends: the
-- exchanges and quarantined lines it forms from events before that offset
-- are looked up and left out if stored. A stream with an intent and no
-- mark yet (its first batch was cut off) is resumed from its start.
CREATE TABLE IF NOT EXISTS {{.DB}}.ingest_intents {{onCluster}}
(
    stream      String,
    topic       String,
    part        Int32,
    next_offset Int64,
    written_at  DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = {{engineGlobal "MergeTree" ""}}
PARTITION BY toDate(written_at)
ORDER BY (stream, written_at)
{{ttl "written_at" .BodyTTL}}
SETTINGS index_granularity = 8192, ttl_only_drop_parts = 1{{dedupWindow}};
