// Package pipeline turns contract-v1 log lines into classified exchange
// records. An [Engine] takes each line through these stages, in this order:
//
//  1. decode: the line becomes a schema.Event ([Decode]); a line that
//     cannot be decoded is quarantined with its position and reason;
//  2. dedupe: an event id seen within the dedupe window is dropped;
//  3. redact: secrets in headers, bodies and URLs are replaced (package
//     redact), before anything is kept, stored or logged;
//  4. correlate: request and response halves are paired into one
//     observation per observer; classification (package classify) runs
//     here, once per observation, as soon as it is complete;
//  5. merge: observations of the same exchange by several observers
//     (gateway, client) become one record, within the merge window;
//  6. release and chain: records leave in event-time order behind the
//     watermark; tool annotations are learned and retries and MRTR rounds
//     are linked into chains;
//  7. write and commit: a batch goes to the [Sink], and source positions
//     are committed only after the sink acknowledged every record that
//     used them.
//
// Nothing is lost: a request whose response never comes is emitted as
// NO_RESPONSE, and a quarantined line is stored with its raw bytes.
package pipeline

import (
	"context"
	"fmt"

	"github.com/mcplens/mcplens/schema"
)

// Position is where a line came from: a file line or a Kafka offset.
type Position struct {
	// Stream is the file path or "topic/partition"; one watermark is kept
	// per stream.
	Stream string
	// Partition is the Kafka partition (0 for files).
	Partition int
	// Topic is the Kafka topic ("" for files).
	Topic string
	// Offset is the Kafka offset or the 1-based file line number.
	Offset int64
}

// String renders file:line or topic/partition/offset.
func (p Position) String() string {
	if p.Topic == "" {
		return fmt.Sprintf("%s:%d", p.Stream, p.Offset)
	}
	return fmt.Sprintf("%s/%d/%d", p.Topic, p.Partition, p.Offset)
}

// Message is one raw line from a source, or an [Assignment].
type Message struct {
	Value []byte
	Pos   Position
	// Assignment, when not nil, is all the message says (Value and Pos
	// are empty): the streams the source reads from now on.
	Assignment *Assignment
	// slab, when not nil, holds Value for a FileSource until Release.
	slab *lineSlab
}

// Release says that nothing uses m.Value any more: its source may reuse
// the memory for later lines. Calling it is optional (unreleased memory is
// the garbage collector's); m forgets its memory, so a second call is a
// no-op, but a copy of m made before must not be released too. After it,
// m.Value must not be read. The engine releases each message once it has
// been handled, since nothing it keeps shares memory with the line (the
// decoder and the quarantine copy what they keep).
func (m *Message) Release() {
	m.slab.release()
	m.slab = nil
}

// Assignment is what an [Assigner] reads from now on, after a rebalance
// of its consumer group: each stream from its Offset (the group's
// committed offset). Streams it no longer lists went to another consumer.
type Assignment struct {
	Streams []Position
}

// Assigner is a Source whose streams move between consumers (a Kafka
// consumer group). Its first message, and the first after every
// rebalance, is an Assignment. The engine then stores what it holds,
// forgets the streams it lost (their new owner reads them from their
// committed offset and, with a StateSink, resumes their state) and, with
// a StateSink, loads the state of the streams it gained; it loads no
// state at start.
type Assigner interface {
	Source
	AssignsStreams()
}

// Source yields raw lines. Fetch blocks until a message is available, the
// context ends (ctx.Err()) or the source is exhausted (io.EOF). Commit
// records that every message of each stream before the given position has
// been durably handled (positions are exclusive upper bounds: "next offset
// to read"). A Source is used by one goroutine at a time.
type Source interface {
	Fetch(ctx context.Context) (Message, error)
	Commit(ctx context.Context, next []Position) error
	Close() error
}

// Sink stores batches. Write returns nil only after the batch is durable;
// the pipeline commits source positions only after that. A Sink is used by
// one goroutine at a time.
type Sink interface {
	Write(ctx context.Context, b *schema.Batch) error
	Close() error
}

// Copier is a Sink whose Write keeps no reference to the batch's arrays
// of records once it returned: it encoded them, or copied their values
// into buffers of its own (strings, which never change, it may keep). The
// engine then reuses a stored batch's arrays for a later batch instead of
// allocating them again: the exchange records alone were an eighth of the
// bytes the engine allocated on production-shaped traffic, all of it for
// the garbage collector to reclaim. A Sink that keeps the batch (a test's
// recorder) simply does not implement it.
type Copier interface {
	Sink
	// CopiesBatches marks the Sink; it is never called.
	CopiesBatches()
}

// StateSink is a Sink that also keeps the engine's state: Write stores
// b.State with b's rows (in one transaction, or in an order that makes any
// part of it a valid state), and LoadState returns what the stored states
// add up to for the given streams (nil: every stream). With a StateSink
// the engine commits source positions past the events still waiting (they
// are in the state) and a restart resumes from it; see [schema.State].
type StateSink interface {
	Sink
	LoadState(ctx context.Context, streams []string) ([]schema.StreamState, error)
}
