-- schema_migrations records every numbered migration applied to this
-- database, so `--migrate` runs only the ones that are missing. In the
-- cluster variant it is replicated to every node of the cluster (one
-- replication group, no shard macro), so any node can tell what ran.
CREATE TABLE IF NOT EXISTS {{.DB}}.schema_migrations {{onCluster}}
(
    version    UInt32,
    name       String,
    checksum   String,
    applied_at DateTime64(3, 'UTC')
)
ENGINE = {{engineGlobal "ReplacingMergeTree" "applied_at"}}
ORDER BY version;
