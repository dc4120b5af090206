-- exchange_bodies: redacted, capped headers and bodies by exchange_id
-- (unique like the exchanges', enforced the same way). Headers are JSON
-- objects here (ClickHouse: Map): appending a MAP value allocated per
-- entry and was 40% of the Appender's time; the store decodes JSON
-- columns to maps, so both engines answer with the same values.
CREATE TABLE IF NOT EXISTS exchange_bodies (
    exchange_id      VARCHAR NOT NULL,
    ts               TIMESTAMP NOT NULL,
    request_headers  JSON NOT NULL,
    response_headers JSON NOT NULL,
    request_body     VARCHAR NOT NULL,
    response_body    VARCHAR NOT NULL,
    truncated        BOOLEAN NOT NULL
);
