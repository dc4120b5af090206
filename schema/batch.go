package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"iter"
	"strconv"
)

// Batch is what the pipeline hands to a store in one write.
type Batch struct {
	Exchanges   []Exchange
	Bodies      []Body
	Quarantine  []Quarantined
	Annotations []ToolAnnotation
	// Token identifies the batch by the source positions it covers, so a
	// store can drop a retried batch it already holds.
	Token string
	// State is the pipeline's state change that goes with the batch, for
	// stores that keep it (pipeline.StateSink); others ignore it.
	State State
}

// Len is the number of rows in the batch.
func (b *Batch) Len() int {
	return len(b.Exchanges) + len(b.Bodies) + len(b.Quarantine) + len(b.Annotations)
}

// BatchToken names a batch by the source positions it covers (stream and
// offset pairs, in the order read), so that a store can tell a retried
// batch from a new one: the same positions always give the same token.
func BatchToken(positions iter.Seq2[string, int64]) string {
	type span struct{ lo, hi int64 }
	spans := map[string]*span{}
	var order []string
	n := 0
	for stream, off := range positions {
		n++
		s := spans[stream]
		if s == nil {
			spans[stream] = &span{off, off}
			order = append(order, stream)
			continue
		}
		s.lo, s.hi = min(s.lo, off), max(s.hi, off)
	}
	h := sha256.New()
	for _, st := range order {
		s := spans[st]
		_, _ = io.WriteString(h, st+"\x00"+strconv.FormatInt(s.lo, 10)+"-"+strconv.FormatInt(s.hi, 10)+"\x00"+strconv.Itoa(n)+"\n")
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
