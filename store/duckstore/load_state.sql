-- The stored ingest state: every stream's mark, then the waiting events in
-- offset order.
SELECT stream, topic, part, next_offset, max_ts_ns, held, merge_lag_ns, merge_lag_at_ns FROM ingest_streams ORDER BY stream;
SELECT stream, stream_offset, event_id, ts, event FROM ingest_waiting ORDER BY stream, stream_offset;
