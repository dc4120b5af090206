package querytest

import (
	"testing"

	"github.com/mcplens/mcplens/schema"
)

// Rows is what both stores' drivers return for a query (database/sql and
// clickhouse-go).
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// CheckOldEvidence checks the (exchange_id, evidence) rows a store reads
// after migration 0040 ran over b's exchanges, stored before it without
// the column: the level their rule names (envelope-..., status_only-...),
// empty (unknown) where the rule was decided without bodies whatever the
// record held (transport-error, no-response, no-response-evicted), bodies
// otherwise. b must hold exchanges of every level, so that a migration
// that writes one value everywhere fails.
func CheckOldEvidence(t testing.TB, b *schema.Batch, rows Rows) {
	t.Helper()
	want := map[string]string{}
	levels := map[string]int{}
	for _, x := range b.Exchanges {
		ev := string(x.Evidence)
		levels[ev]++
		switch x.Rule {
		case "transport-error", "no-response", "no-response-evicted":
			ev = ""
		}
		want[x.ExchangeID] = ev
	}
	if levels["bodies"] == 0 || levels["envelope"] == 0 || levels["status_only"] == 0 || len(levels) != 3 {
		t.Fatalf("the corpus has exchanges of evidence %v, want all three levels and no other", levels)
	}
	n, unknown := 0, 0
	for rows.Next() {
		var id, ev string
		if err := rows.Scan(&id, &ev); err != nil {
			t.Fatal(err)
		}
		n++
		if ev == "" {
			unknown++
		}
		if w, ok := want[id]; !ok || ev != w {
			t.Errorf("%s: evidence %q after the migration, want %q", id, ev, w)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != len(want) || unknown == 0 {
		t.Errorf("%d rows of %d, %d unknown", n, len(want), unknown)
	}
}
