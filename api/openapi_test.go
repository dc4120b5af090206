package api

import (
	"encoding/json"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

func parseDoc(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestDocumentMatchesRouter fails when a registered route is missing from
// the OpenAPI document, or a documented operation is not registered.
func TestDocumentMatchesRouter(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	paths := parseDoc(t, a.doc)["paths"].(map[string]any)
	registered := map[string]bool{}
	for _, r := range a.engine.Routes() {
		key := r.Method + " " + openAPIPath(r.Path)
		registered[key] = true
		item, ok := paths[openAPIPath(r.Path)].(map[string]any)
		if !ok || item[strings.ToLower(r.Method)] == nil {
			t.Errorf("route %s is not in openapi.json", key)
		}
	}
	for p, item := range paths {
		for method := range item.(map[string]any) {
			if key := strings.ToUpper(method) + " " + p; !registered[key] {
				t.Errorf("openapi.json documents %s, which the router does not serve", key)
			}
		}
	}
	if len(registered) != len(paths) {
		t.Errorf("%d routes registered, %d paths documented", len(registered), len(paths))
	}
}

// TestDocumentMatchesRouteParams: each operation documents exactly the
// query parameters its route accepts, and the scope it needs.
func TestDocumentMatchesRouteParams(t *testing.T) {
	a := newTestAPI(t, corpusStore(t))
	d := parseDoc(t, a.doc)
	params := d["components"].(map[string]any)["parameters"].(map[string]any)
	for _, r := range a.routes {
		op := d["paths"].(map[string]any)[r.path].(map[string]any)["get"].(map[string]any)
		var query, path []string
		for _, p := range asList(op["parameters"]) {
			ref := p.(map[string]any)["$ref"].(string)
			def := params[strings.TrimPrefix(ref, "#/components/parameters/")].(map[string]any)
			if def["in"] == "query" {
				query = append(query, def["name"].(string))
			} else {
				path = append(path, def["name"].(string))
			}
		}
		if want := slices.Sorted(slices.Values(r.params)); !slices.Equal(slices.Sorted(slices.Values(query)), want) {
			t.Errorf("%s: documented query parameters %v, route takes %v", r.path, query, want)
		}
		var wantPath []string
		for _, m := range regexp.MustCompile(`\{(\w+)\}`).FindAllStringSubmatch(r.path, -1) {
			wantPath = append(wantPath, m[1])
		}
		if !slices.Equal(path, wantPath) {
			t.Errorf("%s: documented path parameters %v, want %v", r.path, path, wantPath)
		}
		var scopes []string
		for _, req := range asList(op["security"]) {
			for _, s := range asList(req.(map[string]any)["bearerAuth"]) {
				scopes = append(scopes, s.(string))
			}
		}
		want := []string{}
		if r.scope != "" {
			want = []string{string(r.scope)}
		}
		if !slices.Equal(append([]string{}, scopes...), want) {
			t.Errorf("%s: documented scopes %v, route needs %v", r.path, scopes, want)
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// TestDocumentEnums: the values the handlers accept are the documented
// ones.
func TestDocumentEnums(t *testing.T) {
	d := parseDoc(t, document)
	params := d["components"].(map[string]any)["parameters"].(map[string]any)
	enum := func(name string) []string {
		var out []string
		for _, v := range asList(params[name].(map[string]any)["schema"].(map[string]any)["enum"]) {
			out = append(out, v.(string))
		}
		return out
	}
	var bucketNames []string
	for b := range buckets {
		bucketNames = append(bucketNames, b)
	}
	for name, want := range map[string][]string{
		"outcome": outcomeNames, "layer": layerNames, "error_class": errorClassNames, "group_by": groupBys,
		"bucket": bucketNames, "order_by": {queries.OrderVolume, queries.OrderErrors, queries.OrderP99},
	} {
		if got := enum(name); !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))) {
			t.Errorf("parameter %s: documented %v, handlers take %v", name, got, want)
		}
	}
}

// TestDocumentSchemasMatchTypes: each row schema names exactly the JSON
// fields of the Go type the handlers encode, so a field added to or
// removed from a queries type fails here until the contract says so.
func TestDocumentSchemasMatchTypes(t *testing.T) {
	schemas := parseDoc(t, document)["components"].(map[string]any)["schemas"].(map[string]any)
	for name, v := range map[string]any{
		"Problem": Problem{}, "InvalidParam": InvalidParam{},
		"RPCErrorServer": queries.RPCErrorServer{}, "RPCErrorCode": queries.RPCErrorCode{},
		"UnknownRetry": queries.UnknownRetry{}, "BreakdownRow": queries.BreakdownRow{},
		"LeaderboardRow": queries.LeaderboardRow{}, "DisagreementRow": queries.DisagreementRow{},
		"RateLimitRow": queries.RateLimitRow{}, "StreamCutRow": queries.StreamCutRow{},
		"InputRequiredRow": queries.InputRequiredRow{}, "ChainLink": queries.ChainLink{},
		"Exchange": schema.Exchange{}, "Body": schema.Body{}, "SearchRow": queries.SearchRow{},
		"TimelineRow": queries.TimelineRow{}, "ExchangeDetail": exchangeBody{},
		"RPCErrorsAnswer": listBody[queries.RPCErrorServer]{}, "BreakdownAnswer": breakdownBody{},
		"LeaderboardAnswer": leaderboardBody{}, "ExchangePage": pageBody[queries.SearchRow]{},
		"TimelinePage": timelineBody{},
	} {
		s, ok := schemas[name].(map[string]any)
		if !ok {
			t.Errorf("no schema %s", name)
			continue
		}
		var documented []string
		for p := range s["properties"].(map[string]any) {
			documented = append(documented, p)
		}
		sort.Strings(documented)
		fields := jsonFields(reflect.TypeOf(v))
		if !slices.Equal(documented, fields) {
			t.Errorf("schema %s has properties\n  %v\nthe Go type %T encodes\n  %v", name, documented, v, fields)
		}
	}
}

// jsonFields lists the JSON object keys encoding/json writes for a struct.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeOf(time.Time{}) {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// TestDocumentIsWellFormed: OpenAPI 3.1, unique operation ids, every
// $ref resolves, every schema compiles.
func TestDocumentIsWellFormed(t *testing.T) {
	d := parseDoc(t, document)
	if d["openapi"] != "3.1.0" {
		t.Errorf("openapi %v, want 3.1.0", d["openapi"])
	}
	ids := map[string]string{}
	for p, item := range d["paths"].(map[string]any) {
		for m, op := range item.(map[string]any) {
			id, _ := op.(map[string]any)["operationId"].(string)
			if id == "" || ids[id] != "" {
				t.Errorf("%s %s: operationId %q missing or used twice", m, p, id)
			}
			ids[id] = p
		}
	}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				parts := strings.Split(strings.TrimPrefix(ref, "#/"), "/")
				var cur any = d
				for _, p := range parts {
					m, _ := cur.(map[string]any)
					cur = m[p]
				}
				if cur == nil {
					t.Errorf("$ref %s does not resolve", ref)
				}
			}
			for _, e := range x {
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(d)
	for name := range testContract.defs {
		if _, err := testContract.compiled("#/$defs/"+name, map[string]any{"$ref": "#/$defs/" + name}); err != nil {
			t.Errorf("schema %s: %v", name, err)
		}
	}
}

// TestServedDocument: /openapi.json is the document with this server's
// limit.
func TestServedDocument(t *testing.T) {
	a := newTestAPI(t, corpusStore(t), func(c *Config) { c.MaxLimit = 250 })
	rec := a.get("/openapi.json", "")
	d := decode[map[string]any](t, rec, 200)
	limit, _ := dig(d, "components", "parameters", "limit", "schema")
	if limit["maximum"] != 250.0 || limit["default"] != 100.0 {
		t.Errorf("limit schema %v, want maximum 250, default 100", limit)
	}
	if rec := a.get("/api/v1/servers?limit=251", readToken); rec.Code != 400 {
		t.Errorf("limit 251 over --max-limit 250: status %d", rec.Code)
	}
}
