-- Headers are stored as the text of their JSON object, not in a JSON
-- column: duckdb-go's Appender encodes every value it appends to a JSON
-- column with encoding/json (reflection, then a full validation pass),
-- two per body, while the sink already writes each object as compact
-- JSON (schema.AppendStringMap). DuckDB's JSON functions take the text as
-- they took the JSON type (request_headers->>'user-agent'), and the store
-- decodes these two columns into objects when it reads them
-- (store/duckstore/read.go). No value changes.
ALTER TABLE exchange_bodies ALTER request_headers TYPE VARCHAR;
ALTER TABLE exchange_bodies ALTER response_headers TYPE VARCHAR;
-- Written to the file at once, as 0010 writes its type change.
CHECKPOINT;
