package duckstore

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// TestStoredHalfSkipped: a half whose event is stored in a complete
// exchange is not stored again, whether its batch has other halves or
// not, and a batch of complete exchanges only (no halves' lookup) still
// skips the exchanges and bodies already stored.
func TestStoredHalfSkipped(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "h.duckdb"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ts := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	pair := schema.Exchange{ExchangeID: "x-pair", TS: ts, RequestEventID: "req-1", ResponseEventID: "resp-1"}
	body := schema.Body{ExchangeID: "x-pair", TS: ts, RequestBody: "{}"}
	write := func(b schema.Batch) {
		t.Helper()
		if err := s.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	write(schema.Batch{Exchanges: []schema.Exchange{pair}, Bodies: []schema.Body{body}})
	// The same complete exchange again, and its body: nothing new.
	write(schema.Batch{Exchanges: []schema.Exchange{pair}, Bodies: []schema.Body{body}})
	// Its response re-read alone (an orphan, 5 minutes later), and its
	// request alone, beside a half of another call: only the other call's
	// half is new.
	orphan := schema.Exchange{ExchangeID: "x-orphan", TS: ts.Add(5 * time.Minute), ResponseEventID: "resp-1"}
	request := schema.Exchange{ExchangeID: "x-request", TS: ts.Add(-5 * time.Minute), RequestEventID: "req-1"}
	other := schema.Exchange{ExchangeID: "x-other", TS: ts.Add(time.Minute), RequestEventID: "req-2"}
	write(schema.Batch{Exchanges: []schema.Exchange{orphan, request, other},
		Bodies: []schema.Body{{ExchangeID: "x-orphan", TS: orphan.TS}, {ExchangeID: "x-other", TS: other.TS}}})
	// Bodies alone, one stored and one new.
	write(schema.Batch{Bodies: []schema.Body{body, {ExchangeID: "x-new", TS: ts}}})

	count := func(q string) int {
		t.Helper()
		var n int
		if err := s.DB().QueryRow(q).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM exchanges"); n != 2 {
		t.Errorf("%d exchanges stored, want 2 (x-pair, x-other)", n)
	}
	if n := count("SELECT count(*) FROM exchanges WHERE exchange_id IN ('x-pair', 'x-other')"); n != 2 {
		t.Errorf("x-pair and x-other: %d rows, want 2", n)
	}
	if n := count("SELECT count(*) FROM exchange_bodies"); n != 3 {
		t.Errorf("%d bodies stored, want 3 (x-pair, x-other, x-new)", n)
	}
	if n := count("SELECT count(*) FROM exchange_bodies WHERE exchange_id = 'x-orphan'"); n != 0 {
		t.Errorf("the orphan's body stored %d times, want 0", n)
	}
}
