package querytest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/mcplens/mcplens/schema"
)

// ReadCorpus reads a conformance corpus: one {"table": ..., "row": ...}
// line per stored row, as the duckstore conformance test writes it.
func ReadCorpus(path string) (*schema.Batch, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open corpus: %w", err)
	}
	defer f.Close()
	b := &schema.Batch{Token: "corpus"}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var l struct {
			Table string          `json:"table"`
			Row   json.RawMessage `json:"row"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("corpus line %d: %w", n, err)
		}
		switch l.Table {
		case "exchanges":
			var e schema.Exchange
			err = json.Unmarshal(l.Row, &e)
			b.Exchanges = append(b.Exchanges, e)
		case "exchange_bodies":
			var x schema.Body
			err = json.Unmarshal(l.Row, &x)
			b.Bodies = append(b.Bodies, x)
		case "tool_annotations":
			var x schema.ToolAnnotation
			err = json.Unmarshal(l.Row, &x)
			b.Annotations = append(b.Annotations, x)
		case "quarantine":
			var x struct {
				TS       time.Time `json:"ts"`
				Position string    `json:"position"`
				Reason   string    `json:"reason"`
				Raw      string    `json:"raw"`
			}
			err = json.Unmarshal(l.Row, &x)
			b.Quarantine = append(b.Quarantine, schema.Quarantined{TS: x.TS, Position: x.Position, Reason: x.Reason, Raw: []byte(x.Raw)})
		default:
			err = fmt.Errorf("unknown table %q", l.Table)
		}
		if err != nil {
			return nil, fmt.Errorf("corpus line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read corpus: %w", err)
	}
	return b, nil
}

// SpoilRetryOrigins gives b's exchanges the retry_origin rows written
// before migration 0051 could hold: "" or a logger's "none" on re-sends
// (alternately), "" on the first five first attempts. It returns how many
// re-sends and first attempts it changed, for a test of the repair.
func SpoilRetryOrigins(b *schema.Batch) (resent, first int) {
	for i := range b.Exchanges {
		x := &b.Exchanges[i]
		switch {
		case x.RetryOf != "" || x.Attempt > 1:
			x.RetryOrigin = []string{"", "none"}[resent%2]
			resent++
		case first < 5:
			x.RetryOrigin = ""
			first++
		}
	}
	return resent, first
}
