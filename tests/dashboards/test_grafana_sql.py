"""The expansion the panel tests rely on, checked against what Grafana and
grafana-clickhouse-datasource produce: the plugin's macro table
(pkg/macros/macros.go), sqlutil.Interpolate's argument scan, templateSrv's
formats, the plugin's $__conditionalAll and Grafana's interval ladder. The
last tests run the expanded time filters on chDB against a DateTime64(3)
column, where second and millisecond precision differ."""
import datetime as dt

import pytest

import grafana_sql as g

UTC = dt.timezone.utc
FROM = dt.datetime(2026, 11, 2, 9, 0, 0, 500000, tzinfo=UTC)  # 1793610000.5
TO = dt.datetime(2026, 11, 2, 10, 0, 0, 250000, tzinfo=UTC)  # 1793613600.25


def q(interval_ms=60000):
    return g.Query(FROM, TO, interval_ms)


@pytest.mark.parametrize("macro,want", [
    ("$__timeFilter(ts)", "ts >= toDateTime(1793610000) AND ts <= toDateTime(1793613600)"),
    ("$__timeFilter_ms(ts)", "ts >= fromUnixTimestamp64Milli(1793610000500) AND ts <= fromUnixTimestamp64Milli(1793613600250)"),
    ("$__fromTime", "toDateTime(1793610000)"),
    ("$__toTime", "toDateTime(1793613600)"),
    ("$__fromTime_ms", "fromUnixTimestamp64Milli(1793610000500)"),
    ("$__toTime_ms", "fromUnixTimestamp64Milli(1793613600250)"),
    ("$__timeInterval(ts)", "toStartOfInterval(toDateTime(ts), INTERVAL 60 second)"),
    ("$__timeInterval_ms(ts)", "toStartOfInterval(toDateTime64(ts, 3), INTERVAL 60000 millisecond)"),
    ("$__interval_s", "60"),
    ("$__dateFilter(d)", "d >= toDate('2026-11-02') AND d <= toDate('2026-11-02')"),
    ("$__dateTimeFilter(d, t)", "(d >= toDate('2026-11-02') AND d <= toDate('2026-11-02')) AND "
                                "(t >= toDateTime(1793610000) AND t <= toDateTime(1793613600))"),
    ("$__dt(d, t)", "(d >= toDate('2026-11-02') AND d <= toDate('2026-11-02')) AND "
                    "(t >= toDateTime(1793610000) AND t <= toDateTime(1793613600))"),
    ("$__timeFrom(ts)", "ts >= '2026-11-02T09:00:00Z'"),
    ("$__timeTo(ts)", "ts <= '2026-11-02T10:00:00Z'"),
])
def test_macro(macro, want):
    assert g.interpolate_macros(macro, q()) == want


def test_interval_s_is_whole_seconds_at_least_one():
    assert g.interpolate_macros("$__interval_s", q(500)) == "1"
    assert g.interpolate_macros("$__interval_s", q(90500)) == "90"
    assert g.interpolate_macros("$__timeInterval(ts)", q(500)) == "toStartOfInterval(toDateTime(ts), INTERVAL 1 second)"


def test_names_are_whole_words():
    # \b after the name: $__timeFilter does not take $__timeFilter_ms's place.
    assert g.interpolate_macros("$__timeFilter_ms(ts) AND $__toTime_ms", q()) == (
        "ts >= fromUnixTimestamp64Milli(1793610000500) AND ts <= fromUnixTimestamp64Milli(1793613600250)"
        " AND fromUnixTimestamp64Milli(1793613600250)")


def test_argless_macro_swallows_a_following_call():
    """sqlutil scans for the first '(' after the name: an argument-less
    macro followed by a call before any ')' takes the call as its
    arguments, and the call disappears from the SQL."""
    raw = "SELECT count() / $__interval_s AS r FROM (SELECT 1)"
    assert g.interpolate_macros(raw, q(), strict=False) == "SELECT count() / 60"
    with pytest.raises(g.SwallowError):
        g.interpolate_macros(raw, q())
    # A ')' first ends the scan: the idiom the dashboards use.
    assert g.interpolate_macros("x <= ($__toTime_ms) AND f(y)", q()) == \
        "x <= (fromUnixTimestamp64Milli(1793613600250)) AND f(y)"
    assert g.interpolate_macros("toStartOfHour($__fromTime_ms, 'UTC') AND f(y)", q()) == \
        "toStartOfHour(fromUnixTimestamp64Milli(1793610000500), 'UTC') AND f(y)"


def test_wrong_argument_count_is_an_error():
    with pytest.raises(ValueError):
        g.interpolate_macros("$__timeFilter(a, b)", q())


def vars_(**kw):
    return {k: (v if isinstance(v, g.Variable) else g.Variable(k, v, ["a", "b", "o'c"])) for k, v in kw.items()}


@pytest.mark.parametrize("raw,want", [
    # The plugin's formatter: a multi value as 'a','b', unescaped.
    ("server IN (${server})", "server IN ('a','b')"),
    ("server IN ($server)", "server IN ('a','b')"),
    ("server IN ([[server]])", "server IN ('a','b')"),
    # An explicit format wins over the plugin's.
    ("server IN (${server:singlequote})", "server IN ('a','b')"),
    ("${server:csv}", "a,b"),
    ("${server:pipe}", "a|b"),
    ("${server:sqlstring}", "'a','b'"),
    ("${server:doublequote}", '"a","b"'),
])
def test_multi_value_formats(raw, want):
    assert g.template_replace(raw, vars_(server=["a", "b"])) == want


def test_singlequote_escapes_quotes_with_backslash():
    assert g.template_replace("${s:singlequote}", vars_(s=["o'c"])) == "'o\\'c'"
    assert g.template_replace("${s:sqlstring}", vars_(s=["o'c"])) == "'o''c'"
    # The plugin's own formatter does not escape.
    assert g.template_replace("${s}", vars_(s=["o'c", "a"])) == "'o'c','a'"


def test_single_value_variable_is_inserted_as_is_unless_formatted():
    v = {"url": g.Variable("url", "http://api:8080", multi=False)}
    assert g.template_replace("${url}/api", v) == "http://api:8080/api"
    assert g.template_replace("${url:singlequote}", v) == "'http://api:8080'"
    # One value selected in a multi-value variable is still an array.
    assert g.template_replace("IN (${s})", vars_(s=["a"])) == "IN ('a')"


def test_all_expands_to_every_option_or_the_custom_all_value():
    assert g.template_replace("IN (${s:singlequote})", vars_(s=g.ALL)) == "IN ('a','b','o\\'c')"
    assert g.template_replace("IN (${s})", vars_(s=[g.ALL])) == "IN ('a','b','o'c')"
    custom = {"s": g.Variable("s", [g.ALL], ["a", "b"], all_value=".*")}
    assert g.template_replace('x=~"${s:pipe}"', custom) == 'x=~".*"'


def test_unknown_names_and_backend_macros_survive_the_frontend():
    raw = "$__timeFilter_ms(ts) AND $__interval_s AND ${nope} AND $__fromTime_ms"
    assert g.template_replace(raw, vars_(server=["a"])) == raw


@pytest.mark.parametrize("value,want", [
    ([g.ALL], "1=1"),
    (g.ALL, "1=1"),
    ([], "1=1"),
    ("", "1=1"),
    (["a"], "server IN (${server:singlequote})"),
    (["a", "b"], "server IN (${server:singlequote})"),
])
def test_conditional_all(value, want):
    raw = "WHERE $__conditionalAll(server IN (${server:singlequote}), $server)"
    assert g.apply_conditional_all(raw, vars_(server=value)) == "WHERE " + want


def test_conditional_all_braced_reference_and_several_calls():
    v = vars_(server=[g.ALL], client=["c1", "c2"])
    raw = ("a AND $__conditionalAll(server IN (${server:singlequote}), ${server}) "
           "AND $__conditionalAll(client_name IN (${client:singlequote}), $client)")
    assert g.apply_conditional_all(raw, v) == "a AND 1=1 AND client_name IN (${client:singlequote})"
    assert g.expand(raw, v, FROM, TO, 60000) == "a AND 1=1 AND client_name IN ('c1','c2')"


@pytest.mark.parametrize("span,resolution,low,want_ms", [
    (dt.timedelta(hours=6), 1000, None, 20000),  # 21.6 s -> 20 s
    (dt.timedelta(hours=6), 1000, "1m", 60000),  # the panel's min interval wins
    (dt.timedelta(hours=1), 1000, None, 5000),  # 3.6 s -> 5 s
    (dt.timedelta(days=28), 1000, "1m", 1800000),  # 40 min -> 30 min
    (dt.timedelta(days=7), 1000, None, 600000),  # 10.08 min -> 10 min
    (dt.timedelta(days=90), 500, None, 10800000),  # 4.32 h -> 3 h (the 3 h step ends at 4.5 h)
])
def test_calculate_interval(span, resolution, low, want_ms):
    assert g.calculate_interval(FROM, FROM + span, resolution, low) == want_ms


# --- The expansions on the real engine --------------------------------------------


@pytest.fixture(scope="module")
def ch():
    import dashlib
    s = dashlib.new_session()
    s.query("DROP DATABASE IF EXISTS mcplens_dash_macros")
    s.query("CREATE DATABASE mcplens_dash_macros")
    s.query("CREATE TABLE mcplens_dash_macros.t (ts DateTime64(3, 'UTC')) ENGINE = MergeTree ORDER BY ts")
    s.query("INSERT INTO mcplens_dash_macros.t VALUES ('2026-11-02 09:00:00.100'), ('2026-11-02 09:00:00.500'), "
            "('2026-11-02 09:30:00.000'), ('2026-11-02 10:00:00.250'), ('2026-11-02 10:00:00.900')")
    yield s
    s.query("DROP DATABASE IF EXISTS mcplens_dash_macros")


def rows(s, where):
    s.query("USE mcplens_dash_macros")
    out = str(s.query(f"SELECT toString(ts) FROM t WHERE {where} ORDER BY ts", "TSVRaw"))
    return [line.split(" ")[1] for line in out.strip().splitlines()]


def test_time_filter_ms_is_exact_on_datetime64(ch):
    where = g.interpolate_macros("$__timeFilter_ms(ts)", q())
    assert rows(ch, where) == ["09:00:00.500", "09:30:00.000", "10:00:00.250"]


def test_time_filter_in_seconds_widens_the_range_on_datetime64(ch):
    """$__timeFilter truncates both ends to the second: on a DateTime64
    column it takes rows up to 999 ms before `from` and drops the last
    milliseconds up to `to`. The dashboards use the _ms variants."""
    where = g.interpolate_macros("$__timeFilter(ts)", q())
    assert rows(ch, where) == ["09:00:00.100", "09:00:00.500", "09:30:00.000"]


def test_hour_bucket_bound_keeps_the_range(ch):
    where = g.interpolate_macros(
        "$__timeFilter_ms(ts) AND toStartOfHour(ts) BETWEEN toStartOfHour($__fromTime_ms, 'UTC') "
        "AND toStartOfHour($__toTime_ms, 'UTC')", q())
    assert rows(ch, where) == ["09:00:00.500", "09:30:00.000", "10:00:00.250"]
