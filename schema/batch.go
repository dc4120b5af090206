package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
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

// BatchTokener names a batch by what it covers (stream and offset pairs,
// in the order added), so that a store can tell a retried batch from a new
// one: the same pairs always give the same token, and batches that differ
// in any pair differ in their token. Every pair counts, not only each
// stream's range: two batches over the same range with other positions
// (or other released events) inside it are different batches, and a
// store that drops an insert whose token it has seen (ClickHouse) must
// never take one for the other.
//
// The token is the first 16 bytes, in hex, of the SHA-256 of one line
// "<stream>\x00<offset>\n" per pair. The lines are hashed a buffer at a
// time, and a stream may be given in parts, so that naming a pair costs
// neither a call into the hash nor a string of its own (a position per
// event: hashed one by one, with the exchange ids' names built as strings,
// that was 1.4% of the ingester's CPU on traffic with small bodies).
// The zero value is ready to use; Token resets it.
type BatchTokener struct {
	h   hash.Hash
	buf []byte
}

// tokenBuf is how many bytes of lines a BatchTokener gathers before it
// hashes them.
const tokenBuf = 16 << 10

// Add adds the pair of the stream named by the concatenation of parts and
// the offset off.
func (t *BatchTokener) Add(off int64, parts ...string) {
	for _, p := range parts {
		t.buf = append(t.buf, p...)
	}
	t.buf = append(t.buf, 0)
	t.buf = strconv.AppendInt(t.buf, off, 10)
	t.buf = append(t.buf, '\n')
	if len(t.buf) >= tokenBuf {
		t.flush()
	}
}

func (t *BatchTokener) flush() {
	if t.h == nil {
		t.h = sha256.New()
	}
	_, _ = t.h.Write(t.buf)
	t.buf = t.buf[:0]
}

// Token returns the token of the pairs added since the last Token, and
// starts over.
func (t *BatchTokener) Token() string {
	t.flush()
	tok := hex.EncodeToString(t.h.Sum(nil)[:16])
	t.h.Reset()
	return tok
}
