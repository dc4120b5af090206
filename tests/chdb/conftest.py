"""Shared fixtures of the chDB tests: the repository layout and a chDB
session with the real ClickHouse DDL (schema/testdata/clickhouse_*.sql,
rendered by `go test ./schema -run TestRenderedGolden -update`). The
conformance data is loaded into the variant without TTLs: its fixture times
are fixed, the wall clock is not, and ClickHouse hides TTL-expired rows
from reads before any merge removes them."""
import json
import pathlib
import re

import pytest
from chdb import session as chdb_session

ROOT = pathlib.Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "testdata" / "conformance"
QUERIES = ROOT / "queries"
SCHEMA = ROOT / "schema" / "testdata"

TABLES = ["exchanges", "exchange_bodies", "tool_annotations", "quarantine"]


def statements(path):
    """Statements of a rendered DDL file, comment lines dropped."""
    out = []
    for chunk in path.read_text().split(";\n"):
        lines = [l for l in chunk.splitlines() if not l.lstrip().startswith("--")]
        stmt = "\n".join(lines).strip()
        if stmt:
            out.append(stmt)
    return out


def new_session(ddl="clickhouse_single_nottl.sql"):
    s = chdb_session.Session()
    s.query("CREATE DATABASE IF NOT EXISTS mcplens")
    for stmt in statements(SCHEMA / ddl):
        s.query(stmt)
    s.query("USE mcplens")
    # 64-bit integers as JSON numbers, like the Go side writes them.
    s.query("SET output_format_json_quote_64bit_integers = 0")
    return s


def corpus_rows():
    rows = {t: [] for t in TABLES}
    with open(CONFORMANCE / "corpus.ndjson") as f:
        for line in f:
            d = json.loads(line)
            rows[d["table"]].append(d["row"])
    return rows


def insert(s, table, rows, token=None):
    if not rows:
        return
    settings = "SETTINGS date_time_input_format = 'best_effort'"
    if token:
        settings += f", insert_deduplication_token = '{token}'"
    data = "\n".join(json.dumps(r) for r in rows)
    s.query(f"INSERT INTO mcplens.{table} {settings} FORMAT JSONEachRow\n{data}")


@pytest.fixture(scope="module")
def loaded():
    s = new_session()
    rows = corpus_rows()
    for t in TABLES:
        insert(s, t, rows[t], token=f"corpus:{t}")
    yield s
    s.close()


PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}")


def query_params(sql):
    return dict(PLACEHOLDER.findall(sql))
