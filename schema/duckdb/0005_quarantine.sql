-- quarantine: undecodable input lines by source position.
CREATE TABLE IF NOT EXISTS quarantine (
    ts       TIMESTAMP NOT NULL,
    position VARCHAR PRIMARY KEY,
    reason   VARCHAR NOT NULL,
    raw      BLOB NOT NULL
);
