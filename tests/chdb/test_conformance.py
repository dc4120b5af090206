"""Every question of queries/ on the real ClickHouse engine (chDB): the
fixture corpus loaded into the real DDL, each case of cases.json run with
server-side parameters, rows compared with the expected answers that the
Go suite checks on DuckDB. A query that ClickHouse rejects, or that
answers differently, fails here; one that DuckDB rejects fails the Go
suite. Both run in `make test`."""
import datetime as dt
import json
import math
import re

import pytest

from conftest import CONFORMANCE, QUERIES, TABLES, corpus_rows, insert, new_session, query_params

CASES = json.loads((CONFORMANCE / "cases.json").read_text())
QUERY_FILES = sorted(p.stem for p in QUERIES.glob("*.sql"))
TS = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?Z?$")


def ch_param(ch_type, value):
    """A case argument as ClickHouse's parameter text, as chstore sends it."""
    if ch_type.startswith("DateTime64"):
        t = dt.datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(dt.timezone.utc)
        return t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond // 1000:03d}"
    return str(value)


def instant(s):
    s = s.replace(" ", "T")
    if not s.endswith("Z"):
        s += "Z"
    return dt.datetime.fromisoformat(s.replace("Z", "+00:00"))


def same(want, got, path="$"):
    """Compares JSON values by value and JSON type (a bool is never a
    number: in Python 1 == True, so that is checked first), floats within
    1e-9 relative, timestamps as instants (ClickHouse prints
    '2026-11-02 09:00:00.000', Go RFC 3339)."""
    if isinstance(want, bool) or isinstance(got, bool):
        assert type(want) is type(got) and want == got, f"{path}: want {want!r}, got {got!r} ({type(got).__name__})"
    elif isinstance(want, (int, float)) and isinstance(got, (int, float)):
        assert math.isclose(want, got, rel_tol=1e-9, abs_tol=0), f"{path}: want {want!r}, got {got!r}"
    elif isinstance(want, str) and isinstance(got, str) and TS.match(want) and TS.match(got):
        assert instant(want) == instant(got), f"{path}: want {want!r}, got {got!r}"
    elif isinstance(want, list) and isinstance(got, list):
        assert len(want) == len(got), f"{path}: want {len(want)} items, got {len(got)}:\nwant {want}\n got {got}"
        for i, (w, g) in enumerate(zip(want, got)):
            same(w, g, f"{path}[{i}]")
    elif isinstance(want, dict) and isinstance(got, dict):
        assert sorted(want) == sorted(got), f"{path}: want keys {sorted(want)}, got {sorted(got)}"
        for k in want:
            same(want[k], got[k], f"{path}.{k}")
    else:
        assert want == got, f"{path}: want {want!r}, got {got!r}"


def run(s, name, args):
    sql = (QUERIES / f"{name}.sql").read_text()
    types = query_params(sql)
    assert set(types) == set(args), f"{name}: case arguments {sorted(args)} vs parameters {sorted(types)}"
    params = {k: ch_param(types[k], v) for k, v in args.items()}
    out = str(s.query(sql, "JSONEachRow", params=params) if params else s.query(sql, "JSONEachRow"))
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def all_cases():
    for name in sorted(CASES):
        for case in CASES[name]:
            yield pytest.param(name, case, id=f"{name}/{case['name']}")


def test_every_query_has_cases():
    assert sorted(CASES) == QUERY_FILES


@pytest.mark.parametrize("name,case", list(all_cases()))
def test_question(loaded, name, case):
    want = json.loads((CONFORMANCE / "expected" / f"{name}.json").read_text())[case["name"]]
    same(want, run(loaded, name, case["args"]))


def test_inserted_twice_same_answers():
    """The corpus inserted three times (once more in small blocks without a
    token, as a replay of other batches would be, and once repeating the
    first blocks' tokens, as a retried batch would be): ReplacingMergeTree
    has not merged, the reads' LIMIT 1 BY exchange_id collapse the copies,
    and the retried blocks are dropped by their deduplication token."""
    s = new_session()
    for t in TABLES:
        # No background merge may collapse the copies before the reads do.
        s.query(f"SYSTEM STOP MERGES mcplens.{t}")
    rows = corpus_rows()
    for t in TABLES:
        insert(s, t, rows[t], token=f"corpus:{t}")
    for t in TABLES:
        for i in range(0, len(rows[t]), 7):
            insert(s, t, rows[t][i:i + 7])
    for t in TABLES:
        insert(s, t, rows[t], token=f"corpus:{t}")
    stored = json.loads(str(s.query("SELECT count() AS n FROM mcplens.exchanges", "JSONEachRow")))["n"]
    assert stored == 2 * len(rows["exchanges"]), "the retried block with a known token must be dropped, the replay kept until merged"
    for name in sorted(CASES):
        expected = json.loads((CONFORMANCE / "expected" / f"{name}.json").read_text())
        for case in CASES[name]:
            same(expected[case["name"]], run(s, name, case["args"]), f"{name}/{case['name']}")
    s.close()


def test_same_answers_with_join_use_nulls():
    """The LEFT JOINs are written to give the same answers whether unmatched
    columns are defaults (ClickHouse's join_use_nulls = 0) or NULLs (= 1, and
    DuckDB): a server profile that sets it must not change an answer."""
    s = new_session()
    rows = corpus_rows()
    for t in TABLES:
        insert(s, t, rows[t])
    s.query("SET join_use_nulls = 1")
    for name in sorted(CASES):
        expected = json.loads((CONFORMANCE / "expected" / f"{name}.json").read_text())
        for case in CASES[name]:
            same(expected[case["name"]], run(s, name, case["args"]), f"{name}/{case['name']}")
    s.close()
