-- Applies a batch's state change (pipeline.StateSink) inside its
-- transaction, after the new waiting events were appended to
-- ingest_waiting and the released ones staged in stage_released.
DELETE FROM ingest_waiting AS w
USING stage_released AS r
WHERE w.stream = r.stream AND w.stream_offset = r.stream_offset AND w.event_id = r.event_id;
