"""What Grafana and the grafana-clickhouse-datasource plugin do to a panel's
SQL before ClickHouse sees it, ported so the tests can run the exact text:

1. Frontend, CHDatasource.applyTemplateVariables: `$__conditionalAll(cond,
   $var)` becomes `1=1` when $var is All (or empty), else `cond`; then
   templateSrv.replace interpolates `$var`, `${var}`, `${var:fmt}` and
   `[[var]]`, formatting a multi-value variable with the plugin's own
   formatter (`'a','b'`; a single string is inserted as is) unless the
   reference names a format (`singlequote`, `csv`, ...). All expands to
   every option's value, or to a custom allValue inserted unformatted.
2. Backend, sqlutil.Interpolate (grafana-plugin-sdk-go) with the plugin's
   macros (pkg/macros/macros.go): `$__timeFilter(c)` is
   `c >= toDateTime(<from s>) AND c <= toDateTime(<to s>)`,
   `$__timeFilter_ms(c)` the same with `fromUnixTimestamp64Milli(<ms>)`,
   `$__fromTime`/`$__toTime` (`_ms`), `$__timeInterval(c)` is
   `toStartOfInterval(toDateTime(c), INTERVAL <s> second)`, `$__interval_s`
   the interval in whole seconds (at least 1), `$__dateFilter(c)`,
   `$__dateTimeFilter(d, t)` (alias `$__dt`). A macro's arguments are what
   lies between the first '(' after its name and the matching ')': an
   argument-less macro followed by '(' before any ')' swallows that text,
   which `strict` reports instead of reproducing silently.
3. The interval: rangeutil.calculateInterval(range, maxDataPoints, the
   panel's min interval), Grafana's rounding ladder.
"""
import datetime as dt
import re

ALL = "$__all"


class Variable:
    """A dashboard variable as templateSrv sees it: the selected value(s)
    (ALL for All), the options a query returned, a custom allValue."""

    def __init__(self, name, current, options=(), multi=True, all_value=None, text=None):
        self.name = name
        self.current = current
        self.options = list(options)
        self.multi = multi
        self.all_value = all_value
        self.text = text

    def is_all(self):
        v = self.current
        return v == ALL or (isinstance(v, list) and len(v) > 0 and v[0] == ALL)

    def value(self):
        if self.is_all():
            return self.all_value if self.all_value else list(self.options)
        return self.current


# --- 1. Frontend -----------------------------------------------------------

def _macro_args(query, args_index):
    """CHDatasource.getMacroArgs: the arguments of the call whose '(' is at
    args_index, split on top-level commas."""
    args = []
    bracket = 0
    last = 1
    sub = query[args_index:]
    for m in re.finditer(r"\(|\)|,", sub):
        node = m.group(0)
        if node == "(":
            bracket += 1
        elif node == ")":
            bracket -= 1
        if node == "," and bracket == 1:
            args.append(sub[last:m.end() - 1])
            last = m.end()
        if bracket == 0:
            args.append(sub[last:m.end() - 1])
            return args
    return []


_VAR_IN_ARG = re.compile(r"(?<=\$\{)[\w\d]+(?=\})|(?<=\$)[\w\d]+")


def apply_conditional_all(raw, variables):
    """CHDatasource.applyConditionalAll, quirks included: the last call is
    resolved first and the first occurrence of its text is replaced."""
    if not raw:
        return raw
    macro = "$__conditionalAll("
    idx = raw.rfind(macro)
    while idx != -1:
        params = _macro_args(raw, idx + len(macro) - 1)
        if len(params) != 2:
            return raw
        phrase = params[0]
        m = _VAR_IN_ARG.search(params[1].strip())
        if m:
            var = variables.get(m.group(0))
            value = _js_to_string(var.current) if var is not None else None
            if value in ("", ALL):
                phrase = "1=1"
        raw = raw.replace(f"{macro}{params[0]},{params[1]})", phrase, 1)
        idx = raw.rfind(macro)
    return raw


def _js_to_string(v):
    if isinstance(v, list):
        return ",".join(_js_to_string(x) for x in v)
    return "" if v is None else str(v)


def plugin_format(value):
    """CHDatasource.format: arrays as 'a','b'; anything else unchanged."""
    if isinstance(value, list):
        return "'" + "','".join(str(v) for v in value) + "'"
    return value


def _singlequote(value):
    if isinstance(value, list):
        return ",".join("'" + str(v).replace("'", "\\'") + "'" for v in value)
    return "'" + str(value).replace("'", "\\'") + "'"


def _doublequote(value):
    if isinstance(value, list):
        return ",".join('"' + str(v).replace('"', '\\"') + '"' for v in value)
    return '"' + str(value).replace('"', '\\"') + '"'


def _sqlstring(value):
    if isinstance(value, list):
        return ",".join("'" + str(v).replace("'", "''") + "'" for v in value)
    return "'" + str(value).replace("'", "''") + "'"


def _csv(value):
    return ",".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _pipe(value):
    return "|".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _raw(value):
    return value if isinstance(value, str) else (",".join(map(str, value)) if isinstance(value, list) else str(value))


FORMATS = {
    "singlequote": _singlequote,
    "doublequote": _doublequote,
    "sqlstring": _sqlstring,
    "csv": _csv,
    "pipe": _pipe,
    "raw": _raw,
}

_TEMPLATE = re.compile(r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}")


def template_replace(raw, variables, scoped=None, fmt=plugin_format):
    """templateSrv.replace(raw, scopedVars, fmt) for the syntaxes and
    formats dashboards use; an unknown name is left as written (which is
    how the backend macros `$__timeFilter_ms(...)` survive it)."""
    scoped = scoped or {}

    def one(m):
        name = m.group(1) or m.group(2) or m.group(4)
        explicit = m.group(3) or m.group(6)
        if name in scoped:
            return str(scoped[name])
        var = variables.get(name)
        if var is None:
            return m.group(0)
        value = var.current
        if var.is_all():
            value = var.value()
            if var.all_value and explicit not in ("text", "percentencode"):
                return template_replace(var.all_value, variables, scoped, fmt)
        if explicit:
            if explicit not in FORMATS:
                raise ValueError(f"format {explicit!r} of ${{{name}}} is not modelled")
            return FORMATS[explicit](value)
        out = fmt(value) if callable(fmt) else value
        return out if isinstance(out, str) else _raw(out)

    return _TEMPLATE.sub(one, raw)


# --- 2. Backend macros --------------------------------------------------------

def _unix(t):
    return int(t.timestamp() // 1)


def _unix_ms(t):
    return int(t.timestamp() * 1000 // 1)


def _to_datetime(t):
    return f"toDateTime({_unix(t)})"


def _to_datetime64(t):
    return f"fromUnixTimestamp64Milli({_unix_ms(t)})"


def _to_date(t):
    return f"toDate('{t.astimezone(dt.timezone.utc).strftime('%Y-%m-%d')}')"


class Query:
    """sqlutil.Query as the macros read it."""

    def __init__(self, time_from, time_to, interval_ms):
        self.time_from = time_from
        self.time_to = time_to
        self.interval_ms = interval_ms


def _one_arg(name, args):
    if len(args) != 1:
        raise ValueError(f"$__{name}: unexpected number of arguments: expected 1 argument, received {len(args)}")
    return args[0]


def _m_time_filter(q, args):
    c = _one_arg("timeFilter", args)
    return f"{c} >= {_to_datetime(q.time_from)} AND {c} <= {_to_datetime(q.time_to)}"


def _m_time_filter_ms(q, args):
    c = _one_arg("timeFilter_ms", args)
    return f"{c} >= {_to_datetime64(q.time_from)} AND {c} <= {_to_datetime64(q.time_to)}"


def _m_date_filter(q, args):
    c = _one_arg("dateFilter", args)
    return f"{c} >= {_to_date(q.time_from)} AND {c} <= {_to_date(q.time_to)}"


def _m_date_time_filter(q, args):
    if len(args) != 2:
        raise ValueError(f"$__dateTimeFilter: expected 2 arguments, received {len(args)}")
    d, t = args
    return (f"({d} >= {_to_date(q.time_from)} AND {d} <= {_to_date(q.time_to)}) AND "
            f"({t} >= {_to_datetime(q.time_from)} AND {t} <= {_to_datetime(q.time_to)})")


def _interval_seconds(q):
    return int(max(q.interval_ms / 1000.0, 1))


def _m_time_interval(q, args):
    c = _one_arg("timeInterval", args)
    return f"toStartOfInterval(toDateTime({c}), INTERVAL {_interval_seconds(q)} second)"


def _m_time_interval_ms(q, args):
    c = _one_arg("timeInterval_ms", args)
    return f"toStartOfInterval(toDateTime64({c}, 3), INTERVAL {int(max(q.interval_ms, 1))} millisecond)"


def _rfc3339(t):
    return t.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# The plugin's map (pkg/macros), then sqlutil.DefaultMacros for names the
# plugin does not define.
MACROS = {
    "fromTime": lambda q, a: _to_datetime(q.time_from),
    "toTime": lambda q, a: _to_datetime(q.time_to),
    "fromTime_ms": lambda q, a: _to_datetime64(q.time_from),
    "toTime_ms": lambda q, a: _to_datetime64(q.time_to),
    "timeFilter": _m_time_filter,
    "timeFilter_ms": _m_time_filter_ms,
    "dateFilter": _m_date_filter,
    "dateTimeFilter": _m_date_time_filter,
    "dt": _m_date_time_filter,
    "timeInterval": _m_time_interval,
    "timeInterval_ms": _m_time_interval_ms,
    "interval_s": lambda q, a: str(_interval_seconds(q)),
    "timeFrom": lambda q, a: f"{_one_arg('timeFrom', a)} >= '{_rfc3339(q.time_from)}'",
    "timeTo": lambda q, a: f"{_one_arg('timeTo', a)} <= '{_rfc3339(q.time_to)}'",
}
ARGLESS = {"fromTime", "toTime", "fromTime_ms", "toTime_ms", "interval_s"}


def _macro_matches(sql, name):
    """sqlutil.getMacroMatches: each `$__name` (word boundary) with the text
    from its name to the ')' closing the first '(' found after it."""
    out = []
    for m in re.finditer(r"\$__" + name + r"\b", sql, re.ASCII):
        start = m.start()
        rest = sql[start:]
        macro_end = 0
        arg_start = 0
        depth = 0
        for idx, ch in enumerate(rest):
            if depth == 0 and macro_end > 0:
                break
            if ch == "(":
                depth += 1
                if arg_start == 0:
                    arg_start = idx + 1
            elif ch == ")":
                if depth == 0:
                    macro_end = 0
                    break
                depth -= 1
                macro_end = idx + 1
        if macro_end == 0:
            macro_end = m.end() - start
        text = rest[:macro_end]
        args = rest[arg_start:macro_end - 1] if arg_start > 0 else ""
        out.append((text, args))
    return out


class SwallowError(ValueError):
    """An argument-less macro would take the following parenthesised text
    as its arguments and the plugin would drop that text."""


def interpolate_macros(sql, query, strict=True):
    """sqlutil.Interpolate with the plugin's macros."""
    for name, fn in MACROS.items():
        for text, args in _macro_matches(sql, name):
            if strict and name in ARGLESS and text != "$__" + name:
                raise SwallowError(f"$__{name} swallows {text[len(name) + 3:][:80]!r}: "
                                   f"put a ')' right after it, e.g. ($__{name})")
            parts = [a.strip() for a in args.split(",")]
            sql = sql.replace(text, fn(query, parts))
    return sql


# --- 3. Interval -------------------------------------------------------------

_LADDER = [
    (10, 1), (15, 10), (35, 20), (75, 50), (150, 100), (350, 200), (750, 500),
    (1500, 1000), (3500, 2000), (7500, 5000), (12500, 10000), (17500, 15000),
    (25000, 20000), (45000, 30000), (90000, 60000), (210000, 120000),
    (450000, 300000), (750000, 600000), (1050000, 900000), (1500000, 1200000),
    (2700000, 1800000), (5400000, 3600000), (9000000, 7200000),
    (16200000, 10800000), (32400000, 21600000), (86400000, 43200000),
    (604800000, 86400000), (1814400000, 604800000), (3628800000, 2592000000),
]


def round_interval(ms):
    """rangeutil.roundInterval."""
    for bound, value in _LADDER:
        if ms < bound:
            return value
    return 31536000000


_UNITS_MS = {"ms": 1, "s": 1000, "m": 60000, "h": 3600000, "d": 86400000, "w": 604800000, "y": 31536000000}


def interval_to_ms(text):
    m = re.fullmatch(r"(\d+)(ms|s|m|h|d|w|y)", text.strip())
    if not m:
        raise ValueError(f"interval {text!r}")
    return int(m.group(1)) * _UNITS_MS[m.group(2)]


def calculate_interval(time_from, time_to, resolution, low_limit=None):
    """rangeutil.calculateInterval: the panel's $__interval in ms."""
    span = (time_to - time_from).total_seconds() * 1000
    ms = round_interval(span / resolution)
    low = interval_to_ms(low_limit) if low_limit else 1
    return max(ms, low)


# --- All together --------------------------------------------------------------

def expand(raw, variables, time_from, time_to, interval_ms, strict=True):
    """The SQL ClickHouse receives for one panel target."""
    sql = apply_conditional_all(raw, variables)
    sql = template_replace(sql, variables, scoped={
        "__interval_ms": interval_ms,
        "__from": _unix_ms(time_from),
        "__to": _unix_ms(time_to),
    })
    return interpolate_macros(sql, Query(time_from, time_to, interval_ms), strict=strict)
