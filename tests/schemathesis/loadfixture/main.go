// Command loadfixture writes the storage conformance corpus into a new
// DuckDB file, for the schemathesis run against a live cmd/api.
//
//	go run ./tests/schemathesis/loadfixture -corpus testdata/conformance/corpus.ndjson -out /tmp/x.duckdb
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
	flag.Parse()
	if err := run(*corpus, *out); err != nil {
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
