package schema

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// jsonKeys lists the JSON keys of a struct type, embedded structs inlined.
func jsonKeys(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous {
			out = append(out, jsonKeys(f.Type)...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

func TestColumnsMatchRecordTypes(t *testing.T) {
	f := func(typ reflect.Type, cols []string) {
		t.Helper()
		keys := jsonKeys(typ)
		want := map[string]bool{}
		for _, k := range keys {
			want[k] = true
		}
		got := map[string]bool{}
		for _, c := range cols {
			got[c] = true
			if !want[c] {
				t.Errorf("%s: column %q is not a JSON key of the type", typ, c)
			}
		}
		for _, k := range keys {
			if !got[k] {
				t.Errorf("%s: JSON key %q has no column", typ, k)
			}
		}
	}
	f(reflect.TypeOf(Exchange{}), ExchangeColumns)
	f(reflect.TypeOf(Body{}), BodyColumns)
	f(reflect.TypeOf(ToolAnnotation{}), AnnotationColumns)
	f(reflect.TypeOf(Quarantined{}), QuarantineColumns)
}

var (
	columnLine = regexp.MustCompile(`(?m)^\s{4}([a-z_0-9]+)\s+[A-Z]`)
	// addColumn is a later migration's column, appended to its table.
	addColumn = regexp.MustCompile(`^ALTER TABLE (?:[a-z_0-9{}.]+\.)?([a-z_0-9]+)\s+(?:ON CLUSTER '[^']+'\s+)?ADD COLUMN IF NOT EXISTS ([a-z_0-9]+) `)
)

func TestColumnsMatchDDL(t *testing.T) {
	for _, e := range []Engine{ClickHouse, DuckDB} {
		migs, err := Migrations(e, DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		tables := map[string][]string{}
		for _, m := range migs {
			for _, s := range m.Statements {
				if strings.Contains(s, "Distributed(") || strings.HasPrefix(m.Name, "schema_") {
					continue
				}
				if c := addColumn.FindStringSubmatch(s); c != nil {
					tables[c[1]] = append(tables[c[1]], c[2])
					continue
				}
				if !strings.HasPrefix(s, "CREATE TABLE") {
					continue
				}
				var cols []string
				for _, c := range columnLine.FindAllStringSubmatch(s, -1) {
					if c[1] != "INDEX" && c[1] != "PRIMARY" {
						cols = append(cols, c[1])
					}
				}
				tables[m.Name] = cols
			}
		}
		for name, want := range map[string][]string{
			"exchanges": ExchangeColumns, "exchange_bodies": BodyColumns,
			"tool_annotations": AnnotationColumns, "quarantine": QuarantineColumns,
		} {
			if !reflect.DeepEqual(tables[name], want) {
				t.Errorf("%s %s columns:\n got %v\nwant %v", e, name, tables[name], want)
			}
		}
	}
}
