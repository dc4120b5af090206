-- Bloom filters on the exchanges' event ids, for the sink's check of a
-- half (a response re-read without its request, a request whose response
-- was stored with it) against the exchanges already stored: it looks the
-- event id up within a few minutes of rows, and the filters skip every
-- granule that lacks it. Parts written before this migration have no
-- filter and are read whole by that check until they merge.
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} ADD INDEX IF NOT EXISTS idx_request_event_id request_event_id TYPE bloom_filter(0.001) GRANULARITY 1;
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} ADD INDEX IF NOT EXISTS idx_response_event_id response_event_id TYPE bloom_filter(0.001) GRANULARITY 1;
