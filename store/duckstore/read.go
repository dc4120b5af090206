package duckstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/mcplens/mcplens/queries"
)

// textJSON are the columns that hold JSON objects as text (migration
// 0053), decoded as JSON columns are.
var textJSON = map[string]bool{"request_headers": true, "response_headers": true}

// decodeJSON turns the text of a JSON column into Go values (objects
// become map[string]any), as ClickHouse returns its Map columns.
func decodeJSON(v any) (any, error) {
	var text []byte
	switch x := v.(type) {
	case string:
		text = []byte(x)
	case []byte:
		text = x
	default:
		return v, nil
	}
	var out any
	if err := json.Unmarshal(text, &out); err != nil {
		return nil, fmt.Errorf("decode JSON: %w", err)
	}
	return out, nil
}

// orderedMap converts a DuckDB MAP value to a Go map keyed by the keys'
// text.
func orderedMap(m *duckdb.OrderedMap) map[string]any {
	keys, vals := m.Keys(), m.Values()
	out := make(map[string]any, len(keys))
	for i, k := range keys {
		out[fmt.Sprint(k)] = vals[i]
	}
	return out
}

// Run implements queries.Engine: it runs the query's DuckDB rendering with
// named arguments and normalizes the values.
func (s *Store) Run(ctx context.Context, q *queries.Query, args queries.Args) (*queries.Table, error) {
	if err := q.Check(args); err != nil {
		return nil, err
	}
	named := make([]any, 0, len(args))
	for k, v := range args {
		named = append(named, sql.Named(k, v))
	}
	rows, err := s.db.QueryContext(ctx, q.DuckDB, named...)
	if err != nil {
		return nil, fmt.Errorf("run %s on duckdb: %w", q.Name, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	isJSON := make([]bool, len(types))
	for i, ct := range types {
		isJSON[i] = ct.DatabaseTypeName() == "JSON" || textJSON[cols[i]]
	}
	t := &queries.Table{Columns: cols}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, fmt.Errorf("scan %s: %w", q.Name, err)
		}
		for i, v := range vals {
			if m, ok := v.(duckdb.OrderedMap); ok {
				v = orderedMap(&m)
			}
			if isJSON[i] && v != nil {
				if v, err = decodeJSON(v); err != nil {
					return nil, fmt.Errorf("%s column %s: %w", q.Name, cols[i], err)
				}
			}
			if vals[i], err = queries.Normalize(v); err != nil {
				return nil, fmt.Errorf("%s column %s: %w", q.Name, cols[i], err)
			}
		}
		t.Rows = append(t.Rows, vals)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", q.Name, err)
	}
	return t, nil
}
