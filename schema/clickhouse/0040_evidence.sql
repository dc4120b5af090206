-- evidence: how much of the exchange the record held (bodies, envelope,
-- status_only; classify.Evidence). The store writes it on every
-- exchange. Parts written before this migration lack the column; the
-- server reads it there from the DEFAULT expression, which derives it
-- from the rule's prefix (envelope-..., status_only-...), '' (unknown)
-- for a rule decided without bodies whatever the source (transport-error,
-- no-response, no-response-evicted), 'bodies' for every other row, the
-- same values DuckDB's migration writes. Merges write it down. On a
-- cluster the Distributed table gets the column too.
ALTER TABLE {{.DB}}.{{local "exchanges"}} {{onCluster}} ADD COLUMN IF NOT EXISTS evidence LowCardinality(String)
    DEFAULT multiIf(startsWith(rule, 'envelope-'), 'envelope', startsWith(rule, 'status_only-'), 'status_only',
                    rule IN ('transport-error', 'no-response', 'no-response-evicted'), '', 'bodies');
{{if .Cluster}}ALTER TABLE {{.DB}}.exchanges {{onCluster}} ADD COLUMN IF NOT EXISTS evidence LowCardinality(String)
    DEFAULT multiIf(startsWith(rule, 'envelope-'), 'envelope', startsWith(rule, 'status_only-'), 'status_only',
                    rule IN ('transport-error', 'no-response', 'no-response-evicted'), '', 'bodies');{{end}}
