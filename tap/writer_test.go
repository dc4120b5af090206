package tap_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

func TestNDJSONConcurrentLines(t *testing.T) {
	var buf bytes.Buffer
	w := tap.NewNDJSON(&buf)
	const n = 50
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ev := schema.Event{V: 1, EventID: fmt.Sprint(i), Kind: schema.KindExchange, ResponseBody: "<b>&</b>\n" + strings.Repeat("x", 5000)}
			if err := w.WriteEvent(t.Context(), ev); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if strings.Contains(buf.String(), `\u003c`) {
		t.Error("HTML characters were escaped")
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	seen := map[string]bool{}
	for sc.Scan() {
		var ev schema.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		seen[ev.EventID] = true
	}
	if len(seen) != n {
		t.Errorf("decoded %d distinct events, want %d", len(seen), n)
	}
}

func TestCollectorCopies(t *testing.T) {
	var c tap.Collector
	_ = c.WriteEvent(t.Context(), schema.Event{EventID: "a"})
	evs := c.Events()
	evs[0].EventID = "changed"
	if c.Events()[0].EventID != "a" || c.Len() != 1 {
		t.Error("Events does not return a copy")
	}
}
