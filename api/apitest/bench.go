package apitest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/mcplens/mcplens/store/duckstore"
)

// The benchmark store of the API and the web view: a million generated
// exchanges over the 30 days of October 2026, a body for every tenth.
const BenchExchanges = 1_000_000

var (
	BenchFrom = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	BenchSpan = 30 * 24 * time.Hour
)

// OpenBench opens the benchmark store at path, building it first when the
// file does not exist (which takes a minute or two); progress goes to
// stderr. Benchmarks take path from MCPLENS_BENCH_DB to keep the file
// between runs.
func OpenBench(ctx context.Context, path string) (*duckstore.Store, error) {
	if _, err := os.Stat(path); err != nil {
		start := time.Now()
		tmp := path + ".building"
		_ = os.Remove(tmp)
		s, err := duckstore.Open(ctx, tmp, duckstore.Options{})
		if err != nil {
			return nil, err
		}
		err = Generate(ctx, s, GenerateConfig{Exchanges: BenchExchanges, From: BenchFrom, Span: BenchSpan, Seed: 1, BodyEvery: 10})
		if cerr := s.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			return nil, fmt.Errorf("build bench store %s: %w", path, err)
		}
		fmt.Fprintf(os.Stderr, "built %s with %d exchanges in %s\n", path, BenchExchanges, time.Since(start).Round(time.Second))
	}
	return duckstore.Open(ctx, path, duckstore.Options{})
}

// OpenBenchClickHouse migrates a fresh database db on the ClickHouse
// server of dsn (without TTLs: the benchmark month is long past) and
// builds the same million exchanges as OpenBench in it. Close drops it.
func OpenBenchClickHouse(ctx context.Context, dsn, db string) (*ClickHouseCorpus, error) {
	start := time.Now()
	s, err := OpenClickHouse(ctx, dsn, db)
	if err != nil {
		return nil, err
	}
	if err := Generate(ctx, s, GenerateConfig{Exchanges: BenchExchanges, From: BenchFrom, Span: BenchSpan, Seed: 1, BodyEvery: 10}); err != nil {
		return nil, errors.Join(fmt.Errorf("build bench database %s: %w", db, err), s.Close())
	}
	fmt.Fprintf(os.Stderr, "built ClickHouse database %s with %d exchanges in %s\n", db, BenchExchanges, time.Since(start).Round(time.Second))
	return s, nil
}
