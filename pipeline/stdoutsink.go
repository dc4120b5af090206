package pipeline

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/mcplens/mcplens/schema"
)

// StdoutSink is a [Sink] that writes each exchange record as one JSON line
// (the contract's column names as keys) to one writer, and each quarantined
// line as {"quarantine":{...}} to another. A quarantined line's raw bytes go
// in "raw" as a string when they are valid UTF-8, else base64-encoded in
// "raw_base64" instead. Bodies and tool annotations are not written.
//
// Exchanges are encoded with [schema.Exchange.AppendJSON] (what
// encoding/json writes, without reflection).
//
// Write buffers a batch and returns nil only after flushing both writers; a
// batch retried after a failed write may repeat lines already written. A
// StdoutSink is for one goroutine at a time (see [Sink]).
type StdoutSink struct {
	ex, q *bufio.Writer
	qEnc  *json.Encoder
	line  []byte // scratch: one exchange's JSON
}

// NewStdoutSink writes exchanges to exchanges and quarantined lines to
// quarantine; they may be the same writer.
func NewStdoutSink(exchanges, quarantine io.Writer) *StdoutSink {
	s := &StdoutSink{ex: bufio.NewWriterSize(exchanges, 64<<10)}
	s.q = s.ex
	if quarantine != exchanges {
		s.q = bufio.NewWriterSize(quarantine, 16<<10)
	}
	s.qEnc = newLineEncoder(s.q)
	return s
}

func newLineEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w) // one value per line
	enc.SetEscapeHTML(false)
	return enc
}

// quarantineLine is the JSON shape of a quarantined line on the quarantine
// writer.
type quarantineLine struct {
	Quarantine quarantineRow `json:"quarantine"`
}

type quarantineRow struct {
	TS        time.Time `json:"ts"`
	Position  string    `json:"position"`
	Reason    string    `json:"reason"`
	Raw       *string   `json:"raw,omitempty"`
	RawBase64 []byte    `json:"raw_base64,omitempty"` // encoding/json writes []byte as base64
}

func newQuarantineLine(q *schema.Quarantined) quarantineLine {
	row := quarantineRow{TS: q.TS, Position: q.Position, Reason: q.Reason}
	if utf8.Valid(q.Raw) {
		raw := string(q.Raw)
		row.Raw = &raw
	} else {
		row.RawBase64 = q.Raw
	}
	return quarantineLine{row}
}

// Write writes the batch's exchanges and quarantined lines and flushes.
func (s *StdoutSink) Write(ctx context.Context, b *schema.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for i := range b.Exchanges {
		s.line = append(b.Exchanges[i].AppendJSON(s.line[:0]), '\n')
		if _, err := s.ex.Write(s.line); err != nil {
			return fmt.Errorf("write exchange %q: %w", b.Exchanges[i].ExchangeID, err)
		}
	}
	for i := range b.Quarantine {
		if err := s.qEnc.Encode(newQuarantineLine(&b.Quarantine[i])); err != nil {
			return fmt.Errorf("write quarantined line %s: %w", b.Quarantine[i].Position, err)
		}
	}
	return s.flush()
}

func (s *StdoutSink) flush() error {
	err := s.ex.Flush()
	if s.q != s.ex {
		err = errors.Join(err, s.q.Flush())
	}
	if err != nil {
		return fmt.Errorf("flush stdout sink: %w", err)
	}
	return nil
}

// Close flushes what a failed Write left buffered; it does not close the
// writers, which the caller owns.
// CopiesBatches marks StdoutSink a [Copier]: Write encodes the batch.
func (s *StdoutSink) CopiesBatches() {}

func (s *StdoutSink) Close() error { return s.flush() }
