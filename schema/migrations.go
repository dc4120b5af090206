package schema

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"
	"time"
)

//go:embed clickhouse/*.sql duckdb/*.sql
var migrationFS embed.FS

// Engine names a storage engine whose DDL this package carries.
type Engine string

// Engines.
const (
	ClickHouse Engine = "clickhouse"
	DuckDB     Engine = "duckdb"
)

// Migration is one numbered, named step of a schema: the statements of one
// file NNNN_name.sql, rendered for a set of Options. Every statement is
// idempotent (IF NOT EXISTS), so a migration that failed half way is simply
// run again.
type Migration struct {
	Version    int
	Name       string
	Statements []string
	// Checksum is a digest of the rendered statements, recorded beside the
	// version for a later audit.
	Checksum string
}

var fileName = regexp.MustCompile(`^(\d{4})_([a-z0-9_]+)\.sql$`)

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Migrations renders every migration of an engine, in version order.
func Migrations(e Engine, opts Options) ([]Migration, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	opts.defaults()
	names, err := fs.Glob(migrationFS, string(e)+"/*.sql")
	if err != nil || len(names) == 0 {
		return nil, fmt.Errorf("migrations of %s: none embedded", e)
	}
	sort.Strings(names)
	var out []Migration
	for _, name := range names {
		m := fileName.FindStringSubmatch(path.Base(name))
		if m == nil {
			return nil, fmt.Errorf("migration file %q: want NNNN_name.sql", name)
		}
		v, _ := strconv.Atoi(m[1])
		if len(out) > 0 && out[len(out)-1].Version >= v {
			return nil, fmt.Errorf("migration file %q: version %d repeats or goes backwards", name, v)
		}
		src, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("read migration %q: %w", name, err)
		}
		stmts, err := render(e, name, string(src), opts)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256([]byte(strings.Join(stmts, ";\n")))
		out = append(out, Migration{Version: v, Name: m[2], Statements: stmts, Checksum: hex.EncodeToString(sum[:8])})
	}
	return out, nil
}

// render executes a migration template and splits it into statements: a
// statement ends with a line whose last character is ';'.
func render(e Engine, name, src string, opts Options) ([]string, error) {
	cluster := e == ClickHouse && opts.Cluster != ""
	funcs := template.FuncMap{
		"onCluster": func() string {
			if !cluster {
				return ""
			}
			return "ON CLUSTER '" + opts.Cluster + "'"
		},
		// local is the name of the table that stores rows: the table itself
		// on one node, NAME_local under a Distributed NAME on a cluster.
		"local": func(table string) string {
			if cluster {
				return table + "_local"
			}
			return table
		},
		// engine is a MergeTree-family engine, Replicated on a cluster with
		// one replication group per shard.
		"engine": func(family, args string) string {
			if !cluster {
				return family + "(" + args + ")"
			}
			return "Replicated" + family + "('" + opts.ReplicaPath + "', '{replica}'" + prefixComma(args) + ")"
		},
		// engineGlobal is like engine but replicated to every node of the
		// cluster, whatever its shard (small bookkeeping tables).
		"engineGlobal": func(family, args string) string {
			if !cluster {
				return family + "(" + args + ")"
			}
			return "Replicated" + family + "('" + opts.GlobalReplicaPath + "', '{replica}'" + prefixComma(args) + ")"
		},
		"distributed": func(table, shardKey string) string {
			if !cluster {
				return ""
			}
			return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s ON CLUSTER '%s' AS %s.%s_local\nENGINE = Distributed('%s', '%s', '%s_local', %s);",
				opts.DB, table, opts.Cluster, opts.DB, table, opts.Cluster, opts.DB, table, shardKey)
		},
		"ttl": func(column string, d time.Duration) string {
			if d <= 0 {
				return ""
			}
			return fmt.Sprintf("TTL toDateTime(%s) + INTERVAL %d SECOND", column, int64(d/time.Second))
		},
		// dedupWindow lets a non-replicated table drop a block whose
		// insert_deduplication_token it has seen among its last inserts
		// (replicated tables do so by default).
		"dedupWindow": func() string {
			if cluster {
				return ""
			}
			return ", non_replicated_deduplication_window = 1000"
		},
	}
	t, err := template.New(name).Option("missingkey=error").Funcs(funcs).Parse(src)
	if err != nil {
		return nil, fmt.Errorf("parse migration %q: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, opts); err != nil {
		return nil, fmt.Errorf("render migration %q: %w", name, err)
	}
	return SplitStatements(buf.String()), nil
}

func prefixComma(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// SplitStatements cuts SQL text at lines ending in ';' and drops comment
// lines and blank statements: the migrations, and the stores' embedded
// queries.
func SplitStatements(sql string) []string {
	var out []string
	var cur []string
	flush := func() {
		s := strings.TrimSpace(strings.Join(cur, "\n"))
		cur = cur[:0]
		if s != "" {
			out = append(out, s)
		}
	}
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "--") || trimmed == "" {
			continue
		}
		line = strings.TrimRight(line, " \t")
		if strings.HasSuffix(trimmed, ";") {
			cur = append(cur, strings.TrimSuffix(line, ";"))
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return out
}
