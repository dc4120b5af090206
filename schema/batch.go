package schema

import (
	"crypto/sha256"
	"encoding/hex"
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
	// Unsure names the rows formed from events a previous owner of their
	// stream may have stored already (see [StreamState.Unsure]): exchanges
	// by id, quarantine rows by position. A store whose batches are not
	// atomic drops those it holds; the others ignore it.
	Unsure Unsure
}

// Unsure lists a batch's rows that may be stored already.
type Unsure struct {
	Exchanges  []string // exchange ids
	Quarantine []string // positions
}

// Empty says whether nothing is unsure.
func (u *Unsure) Empty() bool { return len(u.Exchanges) == 0 && len(u.Quarantine) == 0 }

// Len is the number of rows in the batch.
func (b *Batch) Len() int {
	return len(b.Exchanges) + len(b.Bodies) + len(b.Quarantine) + len(b.Annotations)
}

// BatchToken names a batch by what it covers (stream and offset pairs, in
// the order given), so that a store can tell a retried batch from a new
// one: the same pairs always give the same token, and batches that differ
// in any pair differ in their token. Every pair counts, not only each
// stream's range: two batches over the same range with other positions
// (or other released events) inside it are different batches, and a
// store that drops an insert whose token it has seen (ClickHouse) must
// never take one for the other.
func BatchToken(positions iter.Seq2[string, int64]) string {
	h := sha256.New()
	var buf []byte
	for stream, off := range positions {
		buf = append(buf[:0], stream...)
		buf = append(buf, 0)
		buf = strconv.AppendInt(buf, off, 10)
		buf = append(buf, '\n')
		_, _ = h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
