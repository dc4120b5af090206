// Package apitest builds the stores the API's tests, benchmarks and
// schemathesis run use: a DuckDB file with the storage conformance corpus
// (testdata/conformance/corpus.ndjson), or with a generated million
// exchanges.
package apitest

import (
	"context"
	"errors"
	"path/filepath"
	"runtime"

	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/store/duckstore"
)

// CorpusPath returns the path of the conformance corpus in this checkout.
func CorpusPath() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "testdata", "conformance", "corpus.ndjson")
}

// OpenCorpus creates a DuckDB file at path holding the corpus at
// corpusPath, and returns it open for reading and writing.
func OpenCorpus(ctx context.Context, path, corpusPath string) (*duckstore.Store, error) {
	b, err := querytest.ReadCorpus(corpusPath)
	if err != nil {
		return nil, err
	}
	s, err := duckstore.Open(ctx, path, duckstore.Options{})
	if err != nil {
		return nil, err
	}
	if err := s.Write(ctx, b); err != nil {
		return nil, errors.Join(err, s.Close())
	}
	return s, nil
}
