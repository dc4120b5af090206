-- Headers written before this migration were appended as Go strings,
-- which DuckDB stores in a JSON column as a JSON *string* holding the
-- object's text, so request_headers->>'user-agent' was NULL. Unwrap
-- every such value into the object it spells. Running it twice is a
-- no-op: objects are left alone.
UPDATE exchange_bodies SET request_headers = CAST(request_headers->>'$' AS JSON)
WHERE json_type(request_headers) = 'VARCHAR';
UPDATE exchange_bodies SET response_headers = CAST(response_headers->>'$' AS JSON)
WHERE json_type(response_headers) = 'VARCHAR';
