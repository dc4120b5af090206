-- Staging tables of the writer connection. TEMP: per connection, never in
-- the file or its WAL. stage_ids holds the ids of a batch's exchanges to
-- look them up among stored rows (half_event: the one event id of an
-- exchange that has only a request or only a response, "" otherwise); the
-- small tables are staged whole and merged by merge.sql; stage_released
-- names the waiting events a batch takes out of ingest_waiting.
CREATE TEMP TABLE IF NOT EXISTS stage_ids (exchange_id VARCHAR, ts TIMESTAMP, half_event VARCHAR);
CREATE TEMP TABLE IF NOT EXISTS stage_annotations AS SELECT * FROM tool_annotations LIMIT 0;
CREATE TEMP TABLE IF NOT EXISTS stage_quarantine AS SELECT * FROM quarantine LIMIT 0;
CREATE TEMP TABLE IF NOT EXISTS stage_released (stream VARCHAR, stream_offset BIGINT, event_id VARCHAR);
