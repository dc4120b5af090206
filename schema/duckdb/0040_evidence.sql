-- evidence: how much of the exchange the record held (bodies, envelope,
-- status_only; classify.Evidence). The pipeline writes it on every
-- exchange. Rows written before this migration carried it only in the
-- prefix of their rule (envelope-..., status_only-...): they get it from
-- there; rows of a rule decided without bodies whatever the source
-- (transport-error, no-response, no-response-evicted) get '' (unknown);
-- every other row came from a body-carrying source: 'bodies'. Running it
-- twice is a no-op: the UPDATE touches only rows still without a value
-- (NULL, which a column added to a filled table holds), and the column
-- is NOT NULL like the others after it (DuckDB adds no column with a
-- constraint).
ALTER TABLE exchanges ADD COLUMN IF NOT EXISTS evidence VARCHAR;
UPDATE exchanges SET evidence = CASE
    WHEN starts_with(rule, 'envelope-') THEN 'envelope'
    WHEN starts_with(rule, 'status_only-') THEN 'status_only'
    WHEN rule IN ('transport-error', 'no-response', 'no-response-evicted') THEN ''
    ELSE 'bodies' END
WHERE evidence IS NULL;
ALTER TABLE exchanges ALTER COLUMN evidence SET NOT NULL;
