"""The ClickHouse DDL of schema/ on the real engine (chDB).

Checked: the single-node variant (with its TTLs) executes, twice (every
statement is idempotent); every statement of the cluster variant parses
(EXPLAIN AST), its local tables execute once ON CLUSTER and the Keeper
arguments of the Replicated engines are taken off (chDB has no cluster and
no Keeper), and each Distributed table's sharding key is a valid
expression over its local table. Not checked here: replication and
distributed inserts themselves, which need a real cluster.

Also checked: the questions' filters use the sorting key and skip indexes
the DDL declares (EXPLAIN indexes=1)."""
import re

from chdb import session as chdb_session

from conftest import QUERIES, SCHEMA, TABLES, corpus_rows, insert, new_session, query_params, statements


def test_single_node_ddl_is_idempotent():
    s = chdb_session.Session()
    s.query("CREATE DATABASE IF NOT EXISTS mcplens")
    for _ in range(2):
        for stmt in statements(SCHEMA / "clickhouse_single.sql"):
            s.query(stmt)
    tables = str(s.query("SELECT name FROM system.tables WHERE database = 'mcplens' ORDER BY name", "CSV")).split()
    created = sorted(set(re.findall(r"CREATE TABLE IF NOT EXISTS mcplens\.(\w+)", (SCHEMA / "clickhouse_single.sql").read_text())))
    assert {"exchanges", "exchange_bodies", "quarantine", "schema_migrations", "tool_annotations", "ingest_streams"} <= set(created)
    assert tables == [f'"{t}"' for t in created]
    ttl = str(s.query("SELECT create_table_query FROM system.tables WHERE database = 'mcplens' AND name = 'exchanges'"))
    assert "TTL toDateTime(ts) + toIntervalSecond(2592000)" in ttl
    s.close()


def local_variant(stmt):
    """A cluster statement as one node without Keeper can run it."""
    stmt = re.sub(r" ON CLUSTER '[^']+'", "", stmt)
    return re.sub(r"Replicated(\w*MergeTree)\('[^']*', '[^']*'(?:, )?", r"\1(", stmt)


def test_cluster_ddl():
    s = chdb_session.Session()
    stmts = statements(SCHEMA / "clickhouse_cluster.sql")
    assert any("Distributed(" in x for x in stmts) and all("ON CLUSTER 'mcplens_cluster'" in x for x in stmts)
    s.query("CREATE DATABASE IF NOT EXISTS mcplens")
    distributed = 0
    for stmt in stmts:
        s.query("EXPLAIN AST " + stmt)
        m = re.search(r"ENGINE = Distributed\('[^']+', '(\w+)', '(\w+)', (.+)\)$", stmt)
        if m:
            db, local, key = m.groups()
            s.query(f"SELECT {key} FROM {db}.{local} LIMIT 0")
            distributed += 1
            continue
        # A table is replicated; an ALTER (an index, a data repair, a new
        # column) runs on the cluster's local tables, and a new column also
        # on the Distributed table in front of them (not created here: its
        # statement is parsed only).
        # A bookkeeping table replicated to every node whole (ingest state)
        # has no local table behind it: its ALTER runs as it is.
        table = stmt.split()[2] if stmt.startswith("ALTER TABLE ") else ""
        global_table = any(x.startswith(f"CREATE TABLE IF NOT EXISTS {table} ON CLUSTER ") and "Replicated" in x for x in stmts)
        if re.match(r"ALTER TABLE mcplens\.\w+ ON CLUSTER '[^']+' ADD COLUMN ", stmt) and "_local " not in stmt and not global_table:
            local = stmt.split()[2] + "_local"
            assert any(x.startswith(f"ALTER TABLE {local} ON CLUSTER ") and "ADD COLUMN" in x and x.split("ADD COLUMN")[1] == stmt.split("ADD COLUMN")[1]
                       for x in stmts), f"{stmt}: the column is not added to {local} alike"
            continue
        assert "Replicated" in stmt or re.match(r"ALTER TABLE mcplens\.\w+_local ON CLUSTER ", stmt) or global_table
        s.query(local_variant(stmt))
    assert distributed == 4
    s.close()


def explain(s, name, params):
    sql = (QUERIES / f"{name}.sql").read_text()
    return str(s.query("EXPLAIN indexes = 1 " + sql, "TSV", params=params)).replace("\\n", "\n")


def test_questions_use_key_and_skip_indexes():
    s = new_session()
    rows = corpus_rows()
    for t in TABLES:
        insert(s, t, rows[t])
    rng = {"from": "2026-11-02 00:00:00.000", "to": "2026-11-03 00:00:00.000", "limit": "10"}
    blank = {k: "" for k in ["server", "evidence", "client", "tool", "method", "outcome", "layer", "error_class"]}
    plan = explain(s, "search", {**rng, **blank, "after_ts": rng["from"], "after_id": "", "q_like": "%rate limit%"})
    assert re.search(r"PrimaryKey\n\s+Keys:\n\s+toStartOfHour\(ts\)", plan), plan
    assert "Name: idx_error_message" in plan, plan
    plan = explain(s, "exchange_ts", {"exchange_id": "x-1"})
    assert "Name: idx_exchange_id" in plan, plan
    plan = explain(s, "exchange", {"exchange_id": "x-1", "ts": rng["from"]})
    assert re.search(r"PrimaryKey\n\s+Keys:\n\s+toStartOfHour\(ts\)", plan), plan
    plan = explain(s, "session_timeline", {**rng, "session_id": "s-1", "after_ts": rng["from"], "after_id": ""})
    assert "Name: idx_session_id" in plan, plan
    plan = explain(s, "leaderboard", {**rng, "server": "srv-1", "evidence": "", "client": "", "group_by": "server", "order_by": "volume"})
    assert re.search(r"Keys:\n\s+toStartOfHour\(ts\)\n\s+server", plan), plan
    s.close()


def test_every_placeholder_is_typed():
    for path in sorted(QUERIES.glob("*.sql")):
        sql = "\n".join(l.split("--")[0] for l in path.read_text().splitlines())
        assert "{" not in re.sub(r"\{\w+:[^{}]+\}", "", sql), f"{path.name}: a brace that is not a typed parameter"
        for name, typ in query_params(sql).items():
            assert typ in ("String", "UInt32", "DateTime64(3, 'UTC')"), f"{path.name}: {name} has type {typ}"
