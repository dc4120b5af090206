package schema

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"time"
)

var replicaPath = regexp.MustCompile(`^$|^[A-Za-z0-9_\-./{}]+$`)

// Conn is the part of a ClickHouse connection Apply uses; clickhouse-go's
// driver.Conn satisfies it.
type Conn interface {
	Exec(ctx context.Context, query string, args ...any) error
	Select(ctx context.Context, dest any, query string, args ...any) error
}

// Apply brings a ClickHouse database up to the newest schema: it creates
// the database (when opts.CreateDatabase), then runs, in version order,
// every migration not yet recorded in schema_migrations, recording each
// after its statements succeeded. It is idempotent and returns the
// migrations it ran. Used by `ingest --migrate` and `api --migrate`.
func Apply(ctx context.Context, db Conn, opts Options) ([]Migration, error) {
	migs, err := Migrations(ClickHouse, opts)
	if err != nil {
		return nil, err
	}
	opts.defaults()
	if opts.CreateDatabase {
		stmt := "CREATE DATABASE IF NOT EXISTS " + opts.DB
		if opts.Cluster != "" {
			stmt += " ON CLUSTER '" + opts.Cluster + "'"
		}
		if err := db.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("create database %s: %w", opts.DB, err)
		}
	}
	return run(ctx, migs, &chMigrator{db: db, opts: opts})
}

// ApplyDuckDB brings a DuckDB database up to the newest schema, like Apply.
// The DuckDB store calls it on every open.
func ApplyDuckDB(ctx context.Context, db *sql.DB) ([]Migration, error) {
	migs, err := Migrations(DuckDB, Options{})
	if err != nil {
		return nil, err
	}
	return run(ctx, migs, &duckMigrator{db: db})
}

type migrator interface {
	exec(ctx context.Context, stmt string) error
	applied(ctx context.Context) (map[int]bool, error)
	record(ctx context.Context, m Migration) error
}

// run executes the first migration (which creates schema_migrations)
// unconditionally, since its statements are idempotent, then every
// migration that is not recorded.
func run(ctx context.Context, migs []Migration, mg migrator) ([]Migration, error) {
	for _, stmt := range migs[0].Statements {
		if err := mg.exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("migration %04d_%s: %w", migs[0].Version, migs[0].Name, err)
		}
	}
	done, err := mg.applied(ctx)
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	var ran []Migration
	for _, m := range migs {
		if done[m.Version] {
			continue
		}
		for i, stmt := range m.Statements {
			if err := mg.exec(ctx, stmt); err != nil {
				return ran, fmt.Errorf("migration %04d_%s statement %d: %w", m.Version, m.Name, i+1, err)
			}
		}
		if err := mg.record(ctx, m); err != nil {
			return ran, fmt.Errorf("record migration %04d_%s: %w", m.Version, m.Name, err)
		}
		ran = append(ran, m)
	}
	return ran, nil
}

type chMigrator struct {
	db   Conn
	opts Options
}

func (c *chMigrator) exec(ctx context.Context, stmt string) error { return c.db.Exec(ctx, stmt) }

func (c *chMigrator) applied(ctx context.Context) (map[int]bool, error) {
	var rows []struct {
		Version uint32 `ch:"version"`
	}
	if err := c.db.Select(ctx, &rows, "SELECT DISTINCT version FROM "+c.opts.DB+".schema_migrations"); err != nil {
		return nil, err
	}
	done := make(map[int]bool, len(rows))
	for _, r := range rows {
		done[int(r.Version)] = true
	}
	return done, nil
}

func (c *chMigrator) record(ctx context.Context, m Migration) error {
	return c.db.Exec(ctx, "INSERT INTO "+c.opts.DB+".schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?)",
		uint32(m.Version), m.Name, m.Checksum, time.Now().UTC())
}

type duckMigrator struct{ db *sql.DB }

func (d *duckMigrator) exec(ctx context.Context, stmt string) error {
	_, err := d.db.ExecContext(ctx, stmt)
	return err
}

func (d *duckMigrator) applied(ctx context.Context) (map[int]bool, error) {
	rows, err := d.db.QueryContext(ctx, "SELECT version FROM schema_migrations")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	done := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		done[v] = true
	}
	return done, rows.Err()
}

func (d *duckMigrator) record(ctx context.Context, m Migration) error {
	_, err := d.db.ExecContext(ctx, "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
		m.Version, m.Name, m.Checksum, time.Now().UTC())
	return err
}
