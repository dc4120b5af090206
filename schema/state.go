package schema

import "time"

// State is what the ingest pipeline keeps in the store beside a batch, in
// the batch's own transaction, so that the committed source offset can
// move past requests still waiting for their response: a restart resumes
// from the state instead of re-reading and re-pairing the tail. State is
// scoped by source stream (a Kafka partition, a file), so it moves with a
// partition from one ingester to another.
type State struct {
	// Streams are the streams the batch read from, with how far they are
	// handled.
	Streams []StreamMark
	// Saved are events now waiting in the pipeline (a half without its
	// other half, an exchange waiting for other observers' records).
	Saved []SavedEvent
	// Released are saved events that left the state: stored with this
	// batch as part of an exchange.
	Released []EventRef
}

// Empty says whether the state holds no change.
func (s *State) Empty() bool {
	return len(s.Streams) == 0 && len(s.Saved) == 0 && len(s.Released) == 0
}

// StreamMark says that every event of Stream before Next is either in an
// exchange stored by this or an earlier batch, saved in the state, or
// held (read again after a restart).
type StreamMark struct {
	Stream    string
	Topic     string
	Partition int
	// Next is the next offset to handle (Kafka) or line (files).
	Next int64
	// Low is the offset of the oldest event of the stream still saved in
	// the state (Next when none is): a store may read the stream's saved
	// events from Low on.
	Low int64
	// MaxTS is the newest event time seen on the stream (its watermark
	// before lateness).
	MaxTS time.Time
	// Held are the offsets before Next of events neither stored nor saved
	// yet, in ascending order: waiting for their other half, they hold
	// the committed offset back, and a restart reads them again instead
	// of skipping them (pipeline.Config.StateHold).
	Held []int64
	// MergeLag is the extra wait the merges had learned when the mark was
	// written (views joining their exchange late), as of event time
	// MergeLagAt; it fades over ten minutes of event time. The merge set's
	// alone, the same in every stream's mark of a batch: a restart waits
	// as long again, instead of releasing views apart that an
	// uninterrupted run would have merged. Zero when none was learned.
	MergeLag   time.Duration
	MergeLagAt time.Time
}

// MergeLagOf is a stored mark's MergeLag and MergeLagAt from their
// nanoseconds (0: none learned).
func MergeLagOf(lagNS, atNS int64) (time.Duration, time.Time) {
	if lagNS <= 0 || atNS == 0 {
		return 0, time.Time{}
	}
	return time.Duration(lagNS), FromUnixNano(atNS)
}

// UnixNano is a mark's time as the stores keep it: Unix nanoseconds, 0
// for the zero time.
func UnixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// FromUnixNano is the time UnixNano stored, in UTC.
func FromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns).UTC()
}

// EventRef names a saved event by where it was read and its event id (a
// message may hold several events: an OTel export, a batch of spans).
type EventRef struct {
	Stream  string
	Offset  int64
	EventID string
}

// SavedEvent is one waiting event: its position, event time and the
// pipeline's own encoding of it (redacted, capped).
type SavedEvent struct {
	EventRef
	TS   time.Time
	Data []byte
}

// StreamState is what a store holds for one stream: where to resume and
// the events waiting, in offset order.
type StreamState struct {
	Mark  StreamMark
	Saved []SavedEvent
	// Unsure, when beyond Mark.Next, is where the stream's last batch
	// meant to move its mark: a store without transactions across tables
	// (ClickHouse) may hold that batch's rows without its marks. The rows
	// formed from events before Unsure (re-read, or saved and perhaps
	// released by that batch) go in [Batch.Unsure]. A stream whose first
	// batch was cut off has no mark: Mark.Next is 0 (a stored mark is
	// always past a handled event).
	Unsure int64
}
