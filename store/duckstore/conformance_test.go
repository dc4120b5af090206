package duckstore

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
)

func openTemp(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "mcplens.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance loads the corpus into DuckDB and checks every question
// against testdata/conformance/expected.
func TestConformance(t *testing.T) {
	s := openTemp(t)
	if err := s.Write(context.Background(), loadCorpus(t)); err != nil {
		t.Fatal(err)
	}
	querytest.Run(t, conformanceDir, s, *update)
}

// splitBatches cuts a batch into batches of n rows of each kind.
func splitBatches(b *schema.Batch, n int) []*schema.Batch {
	var out []*schema.Batch
	for i := 0; ; i++ {
		lo, hi := i*n, (i+1)*n
		part := &schema.Batch{Token: fmt.Sprintf("part-%d", i)}
		part.Exchanges = window(b.Exchanges, lo, hi)
		part.Bodies = window(b.Bodies, lo, hi)
		part.Annotations = window(b.Annotations, lo, hi)
		part.Quarantine = window(b.Quarantine, lo, hi)
		if part.Len() == 0 {
			return out
		}
		out = append(out, part)
	}
}

func window[T any](s []T, lo, hi int) []T {
	if lo >= len(s) {
		return nil
	}
	return s[lo:min(hi, len(s))]
}

// TestConformanceInsertedTwice writes the corpus twice, the second time
// in other batches (as a replay after a crash would), and gets the same
// answers.
func TestConformanceInsertedTwice(t *testing.T) {
	if *update {
		t.Skip("compares with the expected files")
	}
	s := openTemp(t)
	ctx := context.Background()
	corpus := loadCorpus(t)
	if err := s.Write(ctx, corpus); err != nil {
		t.Fatal(err)
	}
	for _, b := range splitBatches(corpus, 7) {
		if err := s.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// A batch that repeats rows within itself is stored once too.
	doubled := *corpus
	doubled.Exchanges = append(append([]schema.Exchange{}, corpus.Exchanges...), corpus.Exchanges...)
	if err := s.Write(ctx, &doubled); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.DB().QueryRow("SELECT count(*) FROM exchanges").Scan(&n); err != nil || n != len(corpus.Exchanges) {
		t.Fatalf("stored %d exchanges (err %v), want %d", n, err, len(corpus.Exchanges))
	}
	querytest.Run(t, conformanceDir, s, false)
}
