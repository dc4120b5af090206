package queries

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// The DuckDB dialect: the smallest set of rewrites that turns the
// ClickHouse SQL of this package into DuckDB SQL with the same meaning.
// Anything outside it is written in SQL both engines accept (CASE, if,
// coalesce, greatest, position(a IN b), dateDiff, ORDER BY ... NULLS LAST),
// and the conformance tests run every query on both engines, so SQL that
// only one accepts fails the build.
//
//   - {name:Type}                 → CAST($name AS <DuckDB type>)
//   - LIMIT 1 BY exchange_id      → removed: DuckDB's primary key already
//     (or position)                 keeps one row per key (INSERT ... ON
//                                   CONFLICT DO NOTHING), so there is
//                                   nothing to collapse at read time
//   - FROM exchanges FINAL        → FROM exchanges, for the same reason
//   - countIf(c), fIf(x, c)       → count(*) FILTER (WHERE c), f(x) FILTER (WHERE c)
//   - quantileExactInclusive(p)(x) → quantile_cont(x, p)  (both interpolate
//                                   linearly between closest ranks,
//                                   PERCENTILE.INC)
//   - quantilesExactInclusive(p, q, ...)(x) → quantile_cont(x, [p, q, ...])
//     (one sort for all levels; an array in both, indexed from 1)
//   - groupArray(x)               → coalesce(list(x), [])
//   - groupUniqArray(x)           → coalesce(list(DISTINCT x), [])
//   - arraySort(a)                → list_sort(a)
//   - arraySlice(a, o, n)         → list_slice(a, o, o + n - 1)
//   - argMax, argMin              → arg_max, arg_min
//   - dateDiff(u, a, b)           → date_diff(u, a, b)
//   - toStartOfHour(t)            → date_trunc('hour', t)
//   - toStartOfInterval(t, i)     → time_bucket(i, t, TIMESTAMP '1970-01-01')
//     (ClickHouse aligns intervals to the Unix epoch; DuckDB's default
//     origin is 2000-01-03)
//   - toIntervalSecond(n)         → to_seconds(n)
//   - toFloat64(x)                → CAST(x AS DOUBLE)
//   - uniqExact(x)                → count(DISTINCT x)
//   - lowerUTF8(s)                → lower(s)

type callRule struct {
	// parametric: the function takes (params)(args), like quantile(0.5)(x).
	parametric bool
	// aggregate: an If combinator may follow the name.
	aggregate bool
	// render returns the DuckDB call and, for aggregates, a wrapper applied
	// after any FILTER clause (a format with one %s, or "").
	render func(params, args []string) (call, wrap string, err error)
}

func fixed(n int, f func(a []string) string) func(p, a []string) (string, string, error) {
	return func(_, a []string) (string, string, error) {
		if len(a) != n {
			return "", "", fmt.Errorf("want %d arguments, got %d", n, len(a))
		}
		return f(a), "", nil
	}
}

var rules = map[string]callRule{
	"count": {aggregate: true, render: func(_, a []string) (string, string, error) {
		if len(a) == 0 || (len(a) == 1 && strings.TrimSpace(a[0]) == "") {
			return "count(*)", "", nil
		}
		return "count(" + strings.Join(a, ", ") + ")", "", nil
	}},
	"sum":       {aggregate: true, render: fixed(1, func(a []string) string { return "sum(" + a[0] + ")" })},
	"min":       {aggregate: true, render: fixed(1, func(a []string) string { return "min(" + a[0] + ")" })},
	"max":       {aggregate: true, render: fixed(1, func(a []string) string { return "max(" + a[0] + ")" })},
	"avg":       {aggregate: true, render: fixed(1, func(a []string) string { return "avg(" + a[0] + ")" })},
	"uniqExact": {aggregate: true, render: fixed(1, func(a []string) string { return "count(DISTINCT " + a[0] + ")" })},
	"groupArray": {aggregate: true, render: func(_, a []string) (string, string, error) {
		if len(a) != 1 {
			return "", "", fmt.Errorf("want 1 argument, got %d", len(a))
		}
		return "list(" + a[0] + ")", "coalesce(%s, [])", nil
	}},
	"groupUniqArray": {aggregate: true, render: func(_, a []string) (string, string, error) {
		if len(a) != 1 {
			return "", "", fmt.Errorf("want 1 argument, got %d", len(a))
		}
		return "list(DISTINCT " + a[0] + ")", "coalesce(%s, [])", nil
	}},
	"quantileExactInclusive": {parametric: true, aggregate: true, render: func(p, a []string) (string, string, error) {
		if len(p) != 1 || len(a) != 1 {
			return "", "", fmt.Errorf("want (level)(expr), got %d levels and %d arguments", len(p), len(a))
		}
		return "quantile_cont(" + a[0] + ", " + p[0] + ")", "", nil
	}},
	"quantilesExactInclusive": {parametric: true, aggregate: true, render: func(p, a []string) (string, string, error) {
		if len(p) == 0 || len(a) != 1 {
			return "", "", fmt.Errorf("want (levels...)(expr), got %d levels and %d arguments", len(p), len(a))
		}
		return "quantile_cont(" + a[0] + ", [" + strings.Join(p, ", ") + "])", "", nil
	}},
	"argMax":           {aggregate: true, render: fixed(2, func(a []string) string { return "arg_max(" + a[0] + ", " + a[1] + ")" })},
	"argMin":           {aggregate: true, render: fixed(2, func(a []string) string { return "arg_min(" + a[0] + ", " + a[1] + ")" })},
	"arraySort":        {render: fixed(1, func(a []string) string { return "list_sort(" + a[0] + ")" })},
	"arraySlice":       {render: fixed(3, arraySlice)},
	"dateDiff":         {render: fixed(3, func(a []string) string { return "date_diff(" + strings.Join(a, ", ") + ")" })},
	"toStartOfHour":    {render: fixed(1, func(a []string) string { return "date_trunc('hour', " + a[0] + ")" })},
	"toIntervalSecond": {render: fixed(1, func(a []string) string { return "to_seconds(" + a[0] + ")" })},
	"toFloat64":        {render: fixed(1, func(a []string) string { return "CAST(" + a[0] + " AS DOUBLE)" })},
	// A comparison is UInt8 in ClickHouse and BOOLEAN in DuckDB: toBool
	// makes a selected condition a JSON boolean on both.
	"toBool":    {render: fixed(1, func(a []string) string { return "CAST(" + a[0] + " AS BOOLEAN)" })},
	"lowerUTF8": {render: fixed(1, func(a []string) string { return "lower(" + a[0] + ")" })},
	"toStartOfInterval": {render: fixed(2, func(a []string) string {
		return "time_bucket(" + a[1] + ", " + a[0] + ", TIMESTAMP '1970-01-01 00:00:00')"
	})},
}

func arraySlice(a []string) string {
	o, err1 := strconv.Atoi(strings.TrimSpace(a[1]))
	n, err2 := strconv.Atoi(strings.TrimSpace(a[2]))
	if err1 == nil && err2 == nil {
		return fmt.Sprintf("list_slice(%s, %d, %d)", a[0], o, o+n-1)
	}
	return fmt.Sprintf("list_slice(%s, %s, (%s) + (%s) - 1)", a[0], a[1], a[1], a[2])
}

// uniqueKeys are the columns that are a primary key in the DuckDB schema:
// LIMIT 1 BY on them is a no-op there.
var limitByUnique = regexp.MustCompile(`(?i)\s*\bLIMIT\s+1\s+BY\s+(exchange_id|position)\b`)

var limitBy = regexp.MustCompile(`(?i)\bLIMIT\s+[^\n]*?\bBY\b`)

// finalExchanges is a read of exchanges that ClickHouse collapses to one
// row per sorting key; DuckDB's primary key holds one row per id already.
var finalExchanges = regexp.MustCompile(`(?i)\bFROM\s+exchanges\s+FINAL\b`)

// RenderDuckDB renders ClickHouse SQL of this package for DuckDB.
func RenderDuckDB(sql string) (string, error) {
	s := stripComments(sql)
	s = limitByUnique.ReplaceAllString(s, "")
	s = finalExchanges.ReplaceAllString(s, "FROM exchanges")
	if m := limitBy.FindString(s); m != "" {
		return "", fmt.Errorf("%q: LIMIT BY is rendered for DuckDB only on a primary key (exchange_id, position)", m)
	}
	var err error
	s = placeholder.ReplaceAllStringFunc(s, func(m string) string {
		sub := placeholder.FindStringSubmatch(m)
		t, e := duckType(sub[2])
		if e != nil && err == nil {
			err = e
		}
		return "CAST($" + sub[1] + " AS " + t + ")"
	})
	if err != nil {
		return "", err
	}
	return rewrite(s)
}

// duckType maps a ClickHouse parameter type to DuckDB's.
func duckType(t string) (string, error) {
	switch t = strings.TrimSpace(t); {
	case t == "String":
		return "VARCHAR", nil
	case t == "UInt16", t == "UInt32", t == "UInt64", t == "Int32", t == "Int64":
		return "BIGINT", nil
	case t == "Float64":
		return "DOUBLE", nil
	case t == "Bool":
		return "BOOLEAN", nil
	case strings.HasPrefix(t, "DateTime64(3"):
		return "TIMESTAMP", nil
	}
	return "", fmt.Errorf("parameter type %q has no DuckDB mapping", t)
}

// rewrite applies the call rules, innermost arguments first.
func rewrite(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'':
			j := skipString(s, i)
			b.WriteString(s[i:j])
			i = j
			continue
		case isIdentStart(c) && (i == 0 || !isIdent(s[i-1]) && s[i-1] != '.' && s[i-1] != '$'):
			j := i
			for j < len(s) && isIdent(s[j]) {
				j++
			}
			name := s[i:j]
			rule, filtered, ok := lookup(name)
			if !ok || j >= len(s) || s[j] != '(' {
				b.WriteString(name)
				i = j
				continue
			}
			out, end, err := applyRule(s, j, name, rule, filtered)
			if err != nil {
				return "", err
			}
			b.WriteString(out)
			i = end
			continue
		}
		b.WriteByte(c)
		i++
	}
	return b.String(), nil
}

// lookup finds the rule of a function name, with an If combinator.
func lookup(name string) (callRule, bool, bool) {
	if r, ok := rules[name]; ok {
		return r, false, true
	}
	if base, ok := strings.CutSuffix(name, "If"); ok {
		if r, ok := rules[base]; ok && r.aggregate {
			return r, true, true
		}
	}
	return callRule{}, false, false
}

func applyRule(s string, open int, name string, rule callRule, filtered bool) (string, int, error) {
	end, inner, err := matchParen(s, open)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", name, err)
	}
	var params []string
	args := splitArgs(inner)
	if rule.parametric {
		if end >= len(s) || s[end] != '(' {
			return "", 0, fmt.Errorf("%s: want (params)(args)", name)
		}
		params = args
		if end, inner, err = matchParen(s, end); err != nil {
			return "", 0, fmt.Errorf("%s: %w", name, err)
		}
		args = splitArgs(inner)
	}
	for k := range args {
		if args[k], err = rewrite(args[k]); err != nil {
			return "", 0, err
		}
	}
	var cond string
	if filtered {
		if len(args) == 0 {
			return "", 0, fmt.Errorf("%s: If combinator without a condition", name)
		}
		cond, args = args[len(args)-1], args[:len(args)-1]
	}
	call, wrap, err := rule.render(params, args)
	if err != nil {
		return "", 0, fmt.Errorf("%s: %w", name, err)
	}
	if filtered {
		call += " FILTER (WHERE " + cond + ")"
	}
	if wrap != "" {
		call = fmt.Sprintf(wrap, call)
	}
	return call, end, nil
}

// matchParen returns the index after the parenthesis that closes the one
// at open, and the text between them.
func matchParen(s string, open int) (int, string, error) {
	depth := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '\'':
			i = skipString(s, i) - 1
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return i + 1, s[open+1 : i], nil
			}
		}
	}
	return 0, "", fmt.Errorf("unbalanced parenthesis at %d", open)
}

// splitArgs splits a call's argument text at top-level commas.
func splitArgs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'':
			i = skipString(s, i) - 1
		case '(', '[':
			depth++
		case ')', ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// skipString returns the index after the string literal starting at i.
func skipString(s string, i int) int {
	for j := i + 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '\'':
			if j+1 < len(s) && s[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(s)
}

// stripComments drops -- comments (outside string literals) and trailing
// blanks.
func stripComments(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		cut := len(line)
		for i := 0; i < len(line); i++ {
			if line[i] == '\'' {
				i = skipString(line, i) - 1
				continue
			}
			if line[i] == '-' && i+1 < len(line) && line[i+1] == '-' {
				cut = i
				break
			}
		}
		line = strings.TrimRight(line[:cut], " \t")
		if strings.TrimSpace(line) == "" {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.TrimSpace(b.String())
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdent(c byte) bool      { return isIdentStart(c) || c >= '0' && c <= '9' }
