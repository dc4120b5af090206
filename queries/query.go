// Package queries holds every question mcplens answers about stored
// exchanges: one ClickHouse SQL file each (embedded from this directory),
// with values only as bound parameters ({name:Type}, ClickHouse's
// server-side syntax), the small dialect layer that renders them for
// DuckDB, and a typed Go API ([Store], implemented by [Questions] over an
// [Engine]) that the REST API calls. The DuckDB and ClickHouse stores
// implement Engine; the conformance tests prove both engines give the same
// answers.
package queries

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

//go:embed *.sql
var sqlFS embed.FS

// Query is one question's SQL: ClickHouse SQL as written in NAME.sql, its
// bound parameters, and the same question rendered for DuckDB. A Query is
// immutable and safe for concurrent use.
type Query struct {
	// Name is the file name without .sql.
	Name string
	// SQL is the ClickHouse text, run as is with server-side parameters.
	SQL string
	// Params are the {name:Type} placeholders, each once, in order of
	// first appearance.
	Params []Param
	// DuckDB is SQL rendered for DuckDB: placeholders become typed $name
	// parameters.
	DuckDB string
}

// Param is one bound parameter of a query.
type Param struct {
	Name string
	// Type is the ClickHouse type of the placeholder: String, UInt32,
	// Float64, Bool or DateTime64(3, 'UTC').
	Type string
}

var placeholder = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*):([^{}]+)\}`)

var (
	loadOnce sync.Once
	all      map[string]*Query
	loadErr  error
)

// All returns every query by name. It panics if an embedded file does not
// parse or render, which the package tests rule out.
func All() map[string]*Query {
	loadOnce.Do(func() { all, loadErr = load(sqlFS) })
	if loadErr != nil {
		panic(loadErr)
	}
	return all
}

// Names returns the names of all queries, sorted.
func Names() []string {
	var out []string
	for n := range All() {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns the query NAME; it panics on an unknown name (a programming
// error: names are constants of this package).
func Get(name string) *Query {
	q, ok := All()[name]
	if !ok {
		panic(fmt.Sprintf("queries: no query %q", name))
	}
	return q
}

func load(fsys fs.FS) (map[string]*Query, error) {
	files, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	out := map[string]*Query{}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("read query %s: %w", f, err)
		}
		q, err := Parse(strings.TrimSuffix(path.Base(f), ".sql"), string(b))
		if err != nil {
			return nil, err
		}
		out[q.Name] = q
	}
	return out, nil
}

// Parse reads one query's ClickHouse SQL, collects its parameters and
// renders it for DuckDB.
func Parse(name, sql string) (*Query, error) {
	q := &Query{Name: name, SQL: strings.TrimSpace(sql)}
	seen := map[string]string{}
	for _, m := range placeholder.FindAllStringSubmatch(q.SQL, -1) {
		n, t := m[1], m[2]
		if prev, ok := seen[n]; ok {
			if prev != t {
				return nil, fmt.Errorf("query %s: parameter %s declared as %s and %s", name, n, prev, t)
			}
			continue
		}
		if _, err := duckType(t); err != nil {
			return nil, fmt.Errorf("query %s: parameter %s: %w", name, n, err)
		}
		seen[n] = t
		q.Params = append(q.Params, Param{Name: n, Type: t})
	}
	d, err := RenderDuckDB(q.SQL)
	if err != nil {
		return nil, fmt.Errorf("query %s: render for DuckDB: %w", name, err)
	}
	q.DuckDB = d
	return q, nil
}
