-- Staging tables of the writer connection. TEMP: per connection, never in
-- the file or its WAL. stage_ids holds the ids of a batch's exchanges to
-- look them up among stored rows; the small tables are staged whole and
-- merged by merge.sql.
CREATE TEMP TABLE IF NOT EXISTS stage_ids (exchange_id VARCHAR, ts TIMESTAMP);
CREATE TEMP TABLE IF NOT EXISTS stage_annotations AS SELECT * FROM tool_annotations LIMIT 0;
CREATE TEMP TABLE IF NOT EXISTS stage_quarantine AS SELECT * FROM quarantine LIMIT 0;
