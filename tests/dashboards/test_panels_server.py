"""Every ClickHouse panel of dashboards/ sent, expanded as the Grafana
plugin expands it, over the HTTP interface of a real ClickHouse server
(CLICKHOUSE_HTTP_URL, started by deploy/clickhouse/clickhouse.sh) holding
the conformance fixture in the real DDL, for every selection of
test_panels_chdb: each answers with the same columns, types and rows as
the embedded engine (chDB) that the rest of the dashboard suite checks in
depth. Without CLICKHOUSE_HTTP_URL it skips, and fails under CI=true."""
import json
import os
import re
import secrets
import urllib.parse
import urllib.request

import pytest

import dashlib as L
import test_panels_chdb as P

BASE = os.environ.get("CLICKHOUSE_HTTP_URL", "").rstrip("/")
if not BASE:
    if os.environ.get("CI") == "true":
        pytest.fail("CLICKHOUSE_HTTP_URL is not set under CI=true: start deploy/clickhouse/clickhouse.sh", pytrace=False)
    pytest.skip("CLICKHOUSE_HTTP_URL is not set: start deploy/clickhouse/clickhouse.sh and export its output",
                allow_module_level=True)


class HTTPSession:
    """The chDB session's query(sql, format, params) over ClickHouse's HTTP
    interface, as grafana-clickhouse-datasource speaks it: one POST per
    query, the database and settings as URL parameters (USE and SET are
    kept here, since HTTP requests share no state), query parameters as
    param_NAME."""

    def __init__(self, base):
        self.base, self.db, self.settings = base, None, {"output_format_json_quote_64bit_integers": "0"}

    def query(self, sql, fmt="TabSeparated", params=None):
        stmt = sql.strip()
        m = re.fullmatch(r"USE\s+(\w+)", stmt, re.I)
        if m:
            self.db = m.group(1)
            return ""
        m = re.fullmatch(r"SET\s+(\w+)\s*=\s*(\S+)", stmt, re.I)
        if m:
            self.settings[m.group(1)] = m.group(2).strip("'")
            return ""
        q = dict(self.settings, default_format=fmt)
        if self.db:
            q["database"] = self.db
        for k, v in (params or {}).items():
            q["param_" + k] = v
        req = urllib.request.Request(self.base + "/?" + urllib.parse.urlencode(q), data=sql.encode(), method="POST")
        try:
            with urllib.request.urlopen(req, timeout=120) as resp:
                return resp.read().decode()
        except urllib.error.HTTPError as e:
            raise AssertionError(f"HTTP {e.code}: {e.read().decode()}\n{sql}") from None


@pytest.fixture(scope="module")
def server():
    s = HTTPSession(BASE)
    db = "mcplens_dash_server_" + secrets.token_hex(4)
    L.new_database(s, db)
    yield s, db
    s.db = None
    s.query(f"DROP DATABASE IF EXISTS {db}")


@pytest.fixture(scope="module")
def chdb():
    s = L.new_session()
    L.new_database(s, P.DB)
    yield s
    s.query(f"DROP DATABASE IF EXISTS {P.DB}")


@pytest.mark.parametrize("selection", list(P.SELECTIONS))
@pytest.mark.parametrize("dash,panel", P.PANELS, ids=P.PANEL_IDS)
def test_panel_on_the_server(server, chdb, dash, panel, selection):
    srv, db = server
    rng = L.fixture_range(chdb, P.DB)
    assert L.fixture_range(srv, db) == rng
    sql, cols, rows = P.run_panel(srv, db, dash, panel, P.SELECTIONS[selection], rng)
    _, want_cols, want_rows = P.run_panel(chdb, P.DB, dash, panel, P.SELECTIONS[selection], rng)
    assert cols == want_cols, f"columns on the server {cols}, in chDB {want_cols}\n{sql}"
    assert rows == want_rows, f"rows on the server differ from chDB:\n server {json.dumps(rows)[:2000]}\n chDB {json.dumps(want_rows)[:2000]}\n{sql}"
    if selection == "all":
        assert rows, f"no rows over the fixture on the server:\n{sql}"
