package pipeline

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/schema"
)

// A stream resumed from a mark that holds events (Config.StateHold) reads
// those again and skips the rest before the mark; a held event also saved
// (a batch that saved it stored without its marks) resumes from the state
// instead. Until a held event is read again every mark keeps it held, and
// the commit never passes it.
func TestResumeReadsHeldEventsAgain(t *testing.T) {
	t0 := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	line := func(kind, id string, d time.Duration) []byte {
		body := `"request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"`
		if kind == "response" {
			body = `"http.status":200,"response_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}"`
		}
		return fmt.Appendf(nil, `{"v":1,"event_id":%q,"ts":%q,"kind":%q,"source":"gateway","exchange_id":"x-%s","server":"kv","http.method":"POST",%s}`,
			map[string]string{"request": "q", "response": "p"}[kind]+id, t0.Add(d).Format(time.RFC3339Nano), kind, id, body)
	}
	sink := newMemStateSink()
	sink.marks["a/0"] = schema.StreamMark{Stream: "a/0", Topic: "a", Next: 10, Low: 7, Held: []int64{7, 3, 8, 3}}
	var enc savedEncoder
	saved := &schema.Event{EventID: "q7", TS: t0, Kind: schema.KindRequest, Source: "gateway", ExchangeID: "x-7", Server: "kv"}
	ref := schema.EventRef{Stream: "a/0", Offset: 7, EventID: "q7"}
	sink.waiting[ref] = schema.SavedEvent{EventRef: ref, TS: t0, Data: enc.encode(pack(saved))}

	cfg := testConfig()
	e, err := New(cfg, Deps{Source: newSliceSource("unused", nil), Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.resume(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if e.collectState(false); len(e.state.Streams) != 0 {
		t.Errorf("marks written before anything was read: %+v (one without offset 3 would skip it after a crash)", e.state.Streams)
	}
	msg := func(off int64, v []byte) Message {
		return Message{Value: v, Pos: Position{Stream: "a/0", Topic: "a", Offset: off}}
	}
	if e.replayed(msg(0, nil)) != true {
		t.Error("offset 0, before the mark and not held, was not skipped")
	}
	if c := e.offsets.Commit(); len(c) != 1 || c[0].Offset != 3 {
		t.Errorf("commit after offset 0 = %+v, want 3 (the held event still to come)", c)
	}
	e.handle(msg(3, line("request", "3", 0)))
	if e.Stats().Reread != 1 || e.Stats().Accepted != 1 {
		t.Errorf("the held offset 3 was not read again: %+v %+v", e.Stats(), e.batch.Quarantine)
	}
	// Its response comes on another stream while a/0 still has a held
	// event to read again (8): the exchange waits for the merge window,
	// held as the stored mark says (no new mark of a/0), until after
	// StateHold flushes it is saved: then a/0's new mark stays at 10 and
	// holds only 8.
	e.handle(Message{Value: line("response", "3", 50*time.Millisecond), Pos: Position{Stream: "b/0", Topic: "b", Offset: 0}})
	for i := 0; i <= cfg.StateHold; i++ {
		e.collectState(false)
		ia := slices.IndexFunc(e.state.Streams, func(m schema.StreamMark) bool { return m.Stream == "a/0" })
		switch {
		case i < cfg.StateHold && ia >= 0:
			t.Errorf("flush %d: mark %+v, want none of a/0 (it holds 3 and 8 as stored)", i, e.state.Streams[ia])
		case i == cfg.StateHold && (ia < 0 || e.state.Streams[ia].Next != 10 || !slices.Equal(e.state.Streams[ia].Held, []int64{8})):
			t.Errorf("flush %d: marks %+v, want a/0 at 10 holding 8", i, e.state.Streams)
		}
		e.stateWritten(&e.state)
		if i == cfg.StateHold && !slices.ContainsFunc(e.state.Saved, func(sv schema.SavedEvent) bool { return sv.Stream == "a/0" && sv.Offset == 3 }) {
			t.Errorf("flush %d: saved %+v, want a/0's offset 3", i, e.state.Saved)
		}
		e.state = schema.State{}
	}
	e.handle(msg(8, line("request", "8", 0)))
	if e.Stats().Reread != 2 {
		t.Errorf("the held offset 8 was not read again: %+v", e.Stats())
	}
	for _, c := range e.offsets.Commit() {
		if c.Stream == "a/0" && c.Offset > 3 {
			t.Errorf("commit %+v past the re-read request at 3, its exchange not stored yet", c)
		}
	}
	if e.replayed(msg(9, nil)) != true {
		t.Error("offset 9, before the mark and not held, was not skipped")
	}
	// Read again, the request waits as held, as the stored mark says:
	// no new mark.
	if e.collectState(false); len(e.state.Streams) != 0 {
		t.Fatalf("marks %+v, want none: the stored one holds 8 at 10 already", e.state.Streams)
	}
	e.handle(msg(10, line("response", "8", 50*time.Millisecond)))
	e.handle(msg(11, line("response", "7", 60*time.Millisecond)))
	e.corr.AdvanceIdle(0)
	e.corr.Release(true, e.emit)
	if got := len(e.batch.Exchanges); got != 3 {
		t.Fatalf("%d exchanges, want x-3, x-8 and x-7 paired: %+v", got, e.batch.Exchanges)
	}
	for _, x := range e.batch.Exchanges {
		if x.RequestEventID == "" || x.ResponseEventID == "" {
			t.Errorf("%s not paired: %+v", x.ExchangeID, x)
		}
	}
	e.collectState(false)
	if i := slices.IndexFunc(e.state.Streams, func(m schema.StreamMark) bool { return m.Stream == "a/0" }); i < 0 ||
		len(e.state.Streams[i].Held) != 0 || e.state.Streams[i].Next != 12 {
		t.Errorf("marks %+v, want a/0 at 12 holding nothing", e.state.Streams)
	}
	if got := e.Stats().Reread; got != 2 {
		t.Errorf("Reread = %d, want 2 (offsets 10 and 11 are past the mark)", got)
	}
}

// TestResumeKeepsMergeLag: the extra wait the merges learned goes into
// every mark the state writes, and a restart waits as long again, from
// the newest of its streams' marks, rather than starting without one and
// releasing apart the views an uninterrupted run merges
// (TestKillsWithClocksFurtherOff).
func TestResumeKeepsMergeLag(t *testing.T) {
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	sink := newMemStateSink()
	sink.marks["a/0"] = schema.StreamMark{Stream: "a/0", Topic: "a", Next: 10, Low: 10, MaxTS: at, MergeLag: time.Second, MergeLagAt: at.Add(-time.Minute)}
	sink.marks["a/1"] = schema.StreamMark{Stream: "a/1", Topic: "a", Partition: 1, Next: 4, Low: 4, MaxTS: at, MergeLag: 3 * time.Second, MergeLagAt: at}
	sink.marks["a/2"] = schema.StreamMark{Stream: "a/2", Topic: "a", Partition: 2, Next: 4, Low: 4, MaxTS: at} // none learned
	e, err := New(testConfig(), Deps{Source: newSliceSource("unused", nil), Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.resume(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	m := &e.corr.merging
	if got := m.extraWait(at); got != 3*time.Second {
		t.Errorf("resumed extra wait %v, want the newest mark's 3s", got)
	}
	if got := m.extraWait(at.Add(lagFade / 2)); got != 1500*time.Millisecond {
		t.Errorf("resumed extra wait %v half of lagFade on, want it faded to 1.5s", got)
	}
	m.joinedLate(4*time.Second, at.Add(time.Second)) // learned after the restart: 4.5 s
	e.corr.resume(Position{Stream: "a/0", Topic: "a"}, at.Add(time.Second))
	delete(e.marked, "a/0") // as if read since: its mark is written again
	e.collectState(false)
	if len(e.state.Streams) == 0 {
		t.Fatal("no mark written")
	}
	for _, mk := range e.state.Streams {
		if mk.MergeLag != 4500*time.Millisecond || !mk.MergeLagAt.Equal(at.Add(time.Second)) {
			t.Errorf("mark of %s: merge lag %v at %v, want 4.5s at %v", mk.Stream, mk.MergeLag, mk.MergeLagAt, at.Add(time.Second))
		}
	}
}
