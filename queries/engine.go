package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Engine runs one query with bound arguments and returns its rows with
// values normalized (see [Table]). The DuckDB and ClickHouse stores
// implement it; an Engine must be safe for concurrent use.
type Engine interface {
	Run(ctx context.Context, q *Query, args Args) (*Table, error)
}

// Args binds a query's parameters by name. Values are Go values of the
// parameter's type: string (String), int64 or int (integer types),
// float64 (Float64), bool (Bool), time.Time (DateTime64).
type Args map[string]any

// ErrArgs is wrapped by Check's errors.
var ErrArgs = errors.New("query arguments")

// Check reports a missing, unknown or mistyped argument.
func (q *Query) Check(args Args) error {
	var errs []error
	for _, p := range q.Params {
		v, ok := args[p.Name]
		if !ok {
			errs = append(errs, fmt.Errorf("%w: %s: missing %s", ErrArgs, q.Name, p.Name))
			continue
		}
		if err := checkType(p.Type, v); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %s: %v", ErrArgs, q.Name, p.Name, err))
		}
	}
	for name := range args {
		if !q.has(name) {
			errs = append(errs, fmt.Errorf("%w: %s: no parameter %s", ErrArgs, q.Name, name))
		}
	}
	return errors.Join(errs...)
}

func (q *Query) has(name string) bool {
	for _, p := range q.Params {
		if p.Name == name {
			return true
		}
	}
	return false
}

func checkType(t string, v any) error {
	ok := false
	switch t, _ := duckType(t); t {
	case "VARCHAR":
		_, ok = v.(string)
	case "BIGINT":
		switch v.(type) {
		case int, int64, uint32:
			ok = true
		}
	case "DOUBLE":
		_, ok = v.(float64)
	case "BOOLEAN":
		_, ok = v.(bool)
	case "TIMESTAMP":
		_, ok = v.(time.Time)
	}
	if !ok {
		return fmt.Errorf("%T does not bind to %s", v, t)
	}
	return nil
}

// ClickHouseParams formats arguments as ClickHouse server-side parameter
// values ({name:Type} placeholders take text in the type's own format).
func (q *Query) ClickHouseParams(args Args) (map[string]string, error) {
	if err := q.Check(args); err != nil {
		return nil, err
	}
	out := make(map[string]string, len(args))
	for name, v := range args {
		out[name] = FormatClickHouse(v)
	}
	return out, nil
}

// FormatClickHouse renders one argument the way a ClickHouse parameter
// takes it: times in UTC with milliseconds, strings in the escaped
// (TabSeparated) form the server parses parameters with, so a backslash
// or a control character is a value, not an escape or an error.
func FormatClickHouse(v any) string {
	switch v := v.(type) {
	case string:
		return paramEscaper.Replace(v)
	case time.Time:
		return v.UTC().Format("2006-01-02 15:04:05.000")
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	default:
		return fmt.Sprint(v)
	}
}

// paramEscaper escapes what the server's escaped format reads specially.
var paramEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`, "\x00", `\0`, "\b", `\b`, "\f", `\f`)

// Table is a query result with normalized values, so that both engines
// give identical Go values for identical answers: nil, bool, int64,
// float64, string, time.Time (UTC), []any and map[string]any.
type Table struct {
	Columns []string
	Rows    [][]any
}

// Maps returns the rows as column→value maps.
func (t *Table) Maps() []map[string]any {
	out := make([]map[string]any, len(t.Rows))
	for i, r := range t.Rows {
		m := make(map[string]any, len(t.Columns))
		for j, c := range t.Columns {
			m[c] = r[j]
		}
		out[i] = m
	}
	return out
}

// Normalize converts a driver value to the Table's value set. Unsigned
// integers above MaxInt64 and non-finite floats have no JSON form the
// engines agree on and are reported as errors.
func Normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, int64, string:
		return x, nil
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("non-finite float %v", x)
		}
		return x, nil
	case float32:
		return Normalize(float64(x))
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return nil, fmt.Errorf("unsigned %d overflows int64", x)
		}
		return int64(x), nil
	case *big.Int:
		if !x.IsInt64() {
			return nil, fmt.Errorf("integer %s overflows int64", x)
		}
		return x.Int64(), nil
	case []byte:
		return string(x), nil
	case time.Time:
		return x.UTC(), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
		return Normalize(rv.Elem().Interface())
	case reflect.Slice, reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			e, err := Normalize(rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	case reflect.Map:
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			e, err := Normalize(it.Value().Interface())
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(it.Key().Interface())] = e
		}
		return out, nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	}
	return nil, fmt.Errorf("unsupported result value %T", v)
}

// decode turns a table into typed rows: each column fills the struct
// field whose JSON name is the column's name.
func decode[T any](t *Table) ([]T, error) {
	b, err := json.Marshal(t.Maps())
	if err != nil {
		return nil, fmt.Errorf("encode rows: %w", err)
	}
	var out []T
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("decode rows: %w", err)
	}
	return out, nil
}

// run checks the arguments, runs the query and decodes its rows.
func run[T any](ctx context.Context, e Engine, name string, args Args) ([]T, error) {
	q := Get(name)
	if err := q.Check(args); err != nil {
		return nil, err
	}
	t, err := e.Run(ctx, q, args)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", name, err)
	}
	rows, err := decode[T](t)
	if err != nil {
		return nil, fmt.Errorf("query %s: %w", name, err)
	}
	return rows, nil
}
