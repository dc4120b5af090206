-- Bodies are bytes, not text: a logger that cuts a body mid-character, or
-- a server that answers with a raw 0xFF, must not make the store refuse
-- the batch (DuckDB's VARCHAR takes only valid UTF-8). encode() turns each
-- stored text into its UTF-8 bytes, so no value changes. A type change
-- cannot say IF NOT EXISTS: run a second time it fails to bind (encode
-- takes text), it never converts twice.
ALTER TABLE exchange_bodies ALTER request_body TYPE BLOB USING encode(request_body);
ALTER TABLE exchange_bodies ALTER response_body TYPE BLOB USING encode(response_body);
-- DuckDB cannot replay a type change with USING from its write-ahead log
-- ("Failure while replaying WAL"), so write it to the file at once.
CHECKPOINT;
