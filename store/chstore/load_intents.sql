-- Each stream's newest intent: the next offset its newest batch meant to
-- reach (schema/clickhouse/0013_ingest_intents.sql). Ahead of the
-- stream's mark, it ends the range whose rows may be stored already.
SELECT stream, argMax(topic, next_offset), argMax(part, next_offset), max(next_offset)
FROM ingest_intents
WHERE @all OR has(@streams, stream)
GROUP BY stream;
