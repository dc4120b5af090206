-- Records how far a stream is handled (one row per stream).
INSERT INTO ingest_streams (stream, topic, part, next_offset, max_ts_ns, held, merge_lag_ns, merge_lag_at_ns)
VALUES ($stream, $topic, $part, $next, $max_ts_ns, $held, $merge_lag_ns, $merge_lag_at_ns)
ON CONFLICT (stream) DO UPDATE SET
    topic = excluded.topic,
    part = excluded.part,
    next_offset = excluded.next_offset,
    max_ts_ns = excluded.max_ts_ns,
    held = excluded.held,
    merge_lag_ns = excluded.merge_lag_ns,
    merge_lag_at_ns = excluded.merge_lag_at_ns;
