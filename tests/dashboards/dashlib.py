"""Shared helpers of the dashboard tests: the dashboards of dashboards/,
the conformance fixture loaded into the real ClickHouse engine (chDB) with
the storage tests' loader (tests/chdb/conftest.py, imported by path so that
its module name cannot clash with this directory's), and a panel's SQL run
the way Grafana would send it."""
import datetime as dt
import importlib.util
import json
import pathlib
import re

import grafana_sql as g

ROOT = pathlib.Path(__file__).resolve().parents[2]
DASHBOARDS = ROOT / "dashboards"
CH_TYPE = "grafana-clickhouse-datasource"

_spec = importlib.util.spec_from_file_location("mcplens_chdb_loader", ROOT / "tests" / "chdb" / "conftest.py")
chdb_loader = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(chdb_loader)


def dashboard_files():
    return sorted(DASHBOARDS.glob("*.json"))


def load(path):
    return json.loads(pathlib.Path(path).read_text())


def panels(dash):
    """Every panel, rows' collapsed children included."""
    out = []
    for p in dash.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []))
    return out


def is_clickhouse(target):
    return (target.get("datasource") or {}).get("type") == CH_TYPE


def clickhouse_panels():
    """(dashboard, panel) for every panel whose queries run on ClickHouse."""
    out = []
    for f in dashboard_files():
        d = load(f)
        for p in panels(d):
            if any(is_clickhouse(t) for t in p.get("targets", [])):
                out.append((d, p))
    return out


# --- chDB --------------------------------------------------------------------

def new_database(session, db, copies=1, stop_merges=False):
    """The real DDL (schema/testdata/clickhouse_single_nottl.sql) created in
    database db, and the conformance corpus inserted copies times. Sessions
    of one process share one engine, so the tests use their own database
    and never touch the storage tests' `mcplens`."""
    session.query(f"DROP DATABASE IF EXISTS {db}")
    session.query(f"CREATE DATABASE {db}")
    for stmt in chdb_loader.statements(chdb_loader.SCHEMA / "clickhouse_single_nottl.sql"):
        session.query(re.sub(r"\bmcplens\.", f"{db}.", stmt))
    if stop_merges:
        for t in chdb_loader.TABLES:
            session.query(f"SYSTEM STOP MERGES {db}.{t}")
    rows = chdb_loader.corpus_rows()
    for i in range(copies):
        for t in chdb_loader.TABLES:
            # Copies after the first go in other blocks, as a replay's would,
            # so that insert deduplication does not drop them.
            step = len(rows[t]) if i == 0 else 7
            for j in range(0, len(rows[t]), max(step, 1)):
                data = "\n".join(json.dumps(r) for r in rows[t][j:j + step])
                session.query(f"INSERT INTO {db}.{t} SETTINGS date_time_input_format = 'best_effort' "
                              f"FORMAT JSONEachRow\n{data}")
    return db


def new_session():
    from chdb import session as chdb_session
    s = chdb_session.Session()
    s.query("SET output_format_json_quote_64bit_integers = 0")
    return s


def run(session, db, sql):
    """Runs sql in db; returns (columns as [(name, type)], rows as dicts)."""
    session.query(f"USE {db}")
    out = json.loads(str(session.query(sql, "JSON")))
    return [(c["name"], c["type"]) for c in out["meta"]], out["data"]


def fixture_range(session, db):
    """The conformance data's days: from the first exchange's midnight to
    the midnight after the last one (UTC)."""
    _, rows = run(session, db, "SELECT toStartOfDay(min(ts)) AS f, toStartOfDay(max(ts)) + INTERVAL 1 DAY AS t FROM exchanges")
    parse = lambda s: dt.datetime.fromisoformat(s.replace(" ", "T")).replace(tzinfo=dt.timezone.utc)
    return parse(rows[0]["f"]), parse(rows[0]["t"])


# --- Grafana ---------------------------------------------------------------------

DEFAULT_RESOLUTION = 1000  # maxDataPoints Grafana uses: the panel's width in pixels


def panel_interval_ms(panel, time_from, time_to):
    return g.calculate_interval(time_from, time_to, panel.get("maxDataPoints") or DEFAULT_RESOLUTION,
                                panel.get("interval") or None)


def query_variables(dash):
    return [v for v in dash.get("templating", {}).get("list", []) if v.get("type") == "query"
            and (v.get("datasource") or {}).get("type") == CH_TYPE]


def variable_sql(v):
    q = v["query"]
    return q if isinstance(q, str) else q.get("rawSql", "")


def resolve_variables(session, db, dash, selection, time_from, time_to):
    """Variables as templateSrv holds them for a selection {name: [values]}
    (a missing name is All): each query variable's options come from its
    own query, run in dashboard order with the variables before it, as
    Grafana refreshes them on a time range change. Returns (variables,
    options by name)."""
    variables = {}
    options = {}
    for v in dash.get("templating", {}).get("list", []):
        name = v["name"]
        if v["type"] == "query" and (v.get("datasource") or {}).get("type") == CH_TYPE:
            sql = g.expand(variable_sql(v), variables, time_from, time_to,
                           g.calculate_interval(time_from, time_to, DEFAULT_RESOLUTION))
            cols, rows = run(session, db, sql)
            first = cols[0][0]
            opts = [str(r[first]) for r in rows]
            options[name] = opts
            current = selection.get(name, g.ALL)
            variables[name] = g.Variable(name, current, opts, multi=v.get("multi", False),
                                         all_value=v.get("allValue") or None)
        elif v["type"] in ("textbox", "constant", "custom"):
            variables[name] = g.Variable(name, v.get("query", ""), multi=False)
    return variables, options


def expanded_targets(panel, variables, time_from, time_to):
    interval = panel_interval_ms(panel, time_from, time_to)
    return [(t, g.expand(t["rawSql"], variables, time_from, time_to, interval))
            for t in panel.get("targets", []) if is_clickhouse(t) and not t.get("hide")]


_NUMERIC = re.compile(r"^(Nullable\(|LowCardinality\()?(U?Int(8|16|32|64|128|256)|Float(32|64)|BFloat16|Decimal.*)\)?$")
_TIME = re.compile(r"^(Nullable\()?DateTime(64)?(\(.*\))?\)?$")
_STRING = re.compile(r"^(Nullable\()?(LowCardinality\()?(Nullable\()?(String|FixedString\(\d+\)|Enum(8|16)\(.*\))\)*$")


def kind(ch_type):
    if _NUMERIC.match(ch_type):
        return "number"
    if _TIME.match(ch_type):
        return "time"
    if ch_type in ("Bool", "Nullable(Bool)", "LowCardinality(Bool)"):
        return "bool"
    if ch_type.startswith("Array("):
        return "array"
    if _STRING.match(ch_type):
        return "string"
    return ch_type
