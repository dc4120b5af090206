-- One stream's waiting events from its low offset on, less those a later
-- batch released, each once, in offset order.
SELECT stream_offset, event_id, ts, event
FROM ingest_waiting
WHERE stream = @stream AND stream_offset >= @low
  AND (stream_offset, event_id) NOT IN (
    SELECT stream_offset, event_id FROM ingest_released
    WHERE stream = @stream AND stream_offset >= @low
  )
ORDER BY stream_offset, event_id
LIMIT 1 BY stream_offset, event_id;
