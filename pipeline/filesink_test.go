package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/schema"
)

func TestFileSinkIsIdempotentAcrossRestarts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out.ndjson")
	ctx := context.Background()
	batch := func(ids ...string) *schema.Batch {
		b := &schema.Batch{}
		for _, id := range ids {
			b.Exchanges = append(b.Exchanges, schema.Exchange{ExchangeID: id, TS: time.Unix(0, 0).UTC()})
		}
		b.Quarantine = []schema.Quarantined{{Position: "f:" + ids[0], Reason: "bad", Raw: []byte("x")}}
		return b
	}
	s, err := OpenFileSink(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, batch("a", "b")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash tore the last line.
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"exchange_id":"c","ts`)
	f.Close()

	s, err = OpenFileSink(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, batch("b", "c", "a", "d")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var ids []string
	for _, l := range lines {
		ids = append(ids, l[len(`{"exchange_id":"`):len(`{"exchange_id":"`)+1])
	}
	if strings.Join(ids, "") != "abcd" {
		t.Errorf("ids in file %q, want abcd:\n%s", ids, data)
	}
	q, _ := os.ReadFile(path + ".quarantine")
	if n := strings.Count(string(q), "\n"); n != 2 {
		t.Errorf("%d quarantine lines, want 2 (f:a, f:b):\n%s", n, q)
	}
}
