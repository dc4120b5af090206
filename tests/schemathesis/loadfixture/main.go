// Command loadfixture writes the storage conformance corpus into a new
// DuckDB file, or into a new database on a ClickHouse server, for the
// schemathesis run against a live cmd/api.
//
//	go run ./tests/schemathesis/loadfixture -corpus testdata/conformance/corpus.ndjson -out /tmp/x.duckdb
//	go run ./tests/schemathesis/loadfixture -clickhouse "$CLICKHOUSE_DSN" -db mcplens_st
package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/mcplens/mcplens/api/apitest"
)

func main() {
	corpus := flag.String("corpus", apitest.CorpusPath(), "conformance corpus (NDJSON of stored rows)")
	out := flag.String("out", "", "DuckDB file to create (must not exist)")
	dsn := flag.String("clickhouse", "", "ClickHouse server DSN: load into database -db there instead")
	db := flag.String("db", "", "ClickHouse database to create (must not exist)")
	flag.Parse()
	var err error
	if *dsn != "" {
		err = runClickHouse(*corpus, *dsn, *db)
	} else {
		err = run(*corpus, *out)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadfixture:", err)
		os.Exit(1)
	}
}

func run(corpus, out string) error {
	if out == "" {
		return fmt.Errorf("-out is required")
	}
	if _, err := os.Stat(out); err == nil {
		return fmt.Errorf("%s exists; give a new path", out)
	}
	s, err := apitest.OpenCorpus(context.Background(), out, corpus)
	if err != nil {
		return err
	}
	return s.Close()
}

func runClickHouse(corpus, dsn, db string) error {
	if db == "" {
		return fmt.Errorf("-db is required with -clickhouse")
	}
	s, err := apitest.OpenCorpusClickHouse(context.Background(), dsn, db, corpus)
	if err != nil {
		return err
	}
	return s.Store.Close() // keeps the database: run.sh drops it
}
