-- The marks of the streams asked for (or of all of them): the largest
-- next offset and event time written, the smallest low offset among
-- the marks of the last ten minutes before the newest (see
-- schema/clickhouse/0011_ingest_state.sql), and the held offsets of the
-- newest mark of the largest next offset (two marks written in the same
-- millisecond may tie: the pipeline checks the rows of held events
-- against the store, so either is safe), and the merges' extra wait
-- learned last.
SELECT m.stream, argMax(m.topic, m.next_offset), argMax(m.part, m.next_offset), max(m.next_offset),
       minIf(m.low_offset, m.written_at >= n.newest - INTERVAL 10 MINUTE), max(m.max_ts_ns),
       argMax(m.held, (m.next_offset, m.written_at)),
       argMax(m.merge_lag_ns, m.merge_lag_at_ns), max(m.merge_lag_at_ns)
FROM ingest_streams AS m
INNER JOIN (
    SELECT stream, max(written_at) AS newest FROM ingest_streams
    WHERE @all OR has(@streams, stream) GROUP BY stream
) AS n ON n.stream = m.stream
WHERE @all OR has(@streams, m.stream)
GROUP BY m.stream
ORDER BY m.stream;
