package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// headline questions the demo answers, with what each answer means.
var headline = []struct{ title, path string }{
	{"Which servers answer HTTP 200 with JSON-RPC errors?", "/api/v1/questions/http200-jsonrpc-errors?from=-24h"},
	{"Which retries may have run a side effect twice?", "/api/v1/questions/unknown-side-effect-retries?from=-24h"},
	{"Outcomes by layer", "/api/v1/outcomes?from=-24h&group_by=outcome"},
}

// answers asks the API the headline questions and prints the rows.
func answers(ctx context.Context, base string, say func(string, ...any)) error {
	for _, q := range headline {
		v, err := getJSON(ctx, base+q.path)
		if err != nil {
			return fmt.Errorf("%s: %w", q.title, err)
		}
		say("\n== %s\n   GET %s", q.title, q.path)
		rows := rowsOf(v)
		if len(rows) == 0 {
			say("   (no rows)")
		}
		for i, r := range rows {
			if i == 12 {
				say("   ... %d more", len(rows)-i)
				break
			}
			say("   %s", compact(r))
		}
	}
	return nil
}

// rowsOf finds the list in an answer: the answer itself, or its first
// array-valued member.
func rowsOf(v any) []any {
	switch t := v.(type) {
	case []any:
		return t
	case map[string]any:
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if a, ok := t[k].([]any); ok {
				return a
			}
		}
	}
	return nil
}

// compact prints a row as one line, leaving out empty values.
func compact(r any) string {
	m, ok := r.(map[string]any)
	if !ok {
		b, _ := json.Marshal(r)
		return string(b)
	}
	keys := make([]string, 0, len(m))
	for k, v := range m {
		if v == nil || v == "" || v == false {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		b, _ := json.Marshal(m[k])
		s := string(b)
		if len(s) > 60 {
			s = s[:57] + "..."
		}
		parts = append(parts, k+"="+s)
	}
	return strings.Join(parts, " ")
}

// explore prints where to look next.
func explore(base, store string, say func(string, ...any)) {
	say("\n== Explore")
	say("   %s/openapi.json                       the API contract", base)
	say("   curl -s '%s/api/v1/exchanges?from=-24h&limit=20' | jq .", base)
	say("   curl -s '%s/api/v1/exchanges?from=-24h&outcome=STREAM_INCOMPLETE' | jq .", base)
	say("   curl -s '%s/api/v1/servers?from=-24h' | jq .", base)
	say("   curl -s '%s/api/v1/questions/rate-limits?from=-24h' | jq .", base)
	say("   the store: %s", store)
}
