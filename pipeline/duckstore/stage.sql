-- Staging tables of the writer connection: the Appender fills them without
-- key checks, then merge.sql moves their rows into the real tables, where
-- the primary keys drop duplicates. TEMP: per connection, never in the
-- file or its WAL.
CREATE TEMP TABLE IF NOT EXISTS stage_exchanges AS SELECT * FROM exchanges LIMIT 0;
CREATE TEMP TABLE IF NOT EXISTS stage_bodies AS SELECT * FROM exchange_bodies LIMIT 0;
CREATE TEMP TABLE IF NOT EXISTS stage_annotations AS SELECT * FROM tool_annotations LIMIT 0;
CREATE TEMP TABLE IF NOT EXISTS stage_quarantine AS SELECT * FROM quarantine LIMIT 0;
