package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

func byRequestEvent(recs []schema.Exchange) map[string]schema.Exchange {
	m := map[string]schema.Exchange{}
	for _, r := range recs {
		m[r.RequestEventID] = r
	}
	return m
}

// The golden files pin every field; these assertions name what each
// fixture is about, so that a careless -update cannot bless a wrong answer.
func TestCorrelateScenarios(t *testing.T) {
	run := func(name string) map[string]schema.Exchange {
		t.Helper()
		sink, _ := runFile(t, testConfig(), readLines(t, "testdata/correlate/"+name+".ndjson"))
		return byRequestEvent(sink.exchanges)
	}

	t.Run("split records in both orders", func(t *testing.T) {
		m := run("split_both_orders")
		if r := m["a-req"]; r.ExchangeID != "x-a" || r.ResponseEventID != "a-resp" || r.Outcome != classify.ToolSuccess {
			t.Errorf("by exchange id: %+v", r)
		}
		if r := m["b-req"]; r.ResponseEventID != "b-resp" || r.DurationMS < 299 || r.DurationMS > 301 {
			t.Errorf("response before request: response %q, duration %v", r.ResponseEventID, r.DurationMS)
		}
		if r := m["c-req"]; r.ResponseEventID != "c-resp2" {
			t.Errorf("by session and id: paired with %q", r.ResponseEventID)
		}
	})
	t.Run("duplicates yield one exchange", func(t *testing.T) {
		sink, _ := runFile(t, testConfig(), readLines(t, "testdata/correlate/duplicates.ndjson"))
		if len(sink.exchanges) != 3 {
			t.Fatalf("%d exchanges, want 3", len(sink.exchanges))
		}
	})
	t.Run("interleaved sessions reuse JSON-RPC ids", func(t *testing.T) {
		m := run("interleaved_sessions")
		want := map[string]classify.Outcome{"i-a1": classify.ToolSuccess, "i-b1": classify.ToolError, "i-a2": classify.JSONRPCError, "i-b2": classify.ToolSuccess}
		for id, o := range want {
			if m[id].Outcome != o {
				t.Errorf("%s: %s, want %s", id, m[id].Outcome, o)
			}
		}
	})
	t.Run("retries", func(t *testing.T) {
		m := run("retries")
		f := func(id, retryOf string, attempt int, unknown bool) {
			t.Helper()
			r := m[id]
			prev := ""
			if retryOf != "" {
				prev = m[retryOf].ExchangeID
			}
			if r.RetryOf != prev || r.Attempt != attempt || r.UnknownSideEffectRetry != unknown {
				t.Errorf("%s: retry_of %q attempt %d unknown %v; want %q %d %v", id, r.RetryOf, r.Attempt, r.UnknownSideEffectRetry, prev, attempt, unknown)
			}
		}
		f("r-2", "r-1", 2, true)  // destructive tool after a 503
		f("r-4", "r-3", 2, false) // read-only tool (learned from tools/list)
		f("r-6", "r-5", 2, true)  // no annotations: spec defaults, after a timeout
		f("r-8", "r-7", 2, false) // after a 429 the tool never ran
		f("r-10", "", 1, false)   // the same call after a success is a new call
		if m["r-3"].SideEffectRisk != classify.RiskNone {
			t.Errorf("read-only tool risk = %s", m["r-3"].SideEffectRisk)
		}
		if m["r-6"].RetryOrigin != "sdk" || m["r-2"].ChainID != m["r-1"].ExchangeID {
			t.Errorf("origin %q chain %q", m["r-6"].RetryOrigin, m["r-2"].ChainID)
		}
	})
	t.Run("MRTR rounds continue, never retry", func(t *testing.T) {
		m := run("mrtr")
		if m["m-2"].Continues != m["m-1"].ExchangeID || m["m-3"].Continues != m["m-2"].ExchangeID {
			t.Errorf("continues: %q %q", m["m-2"].Continues, m["m-3"].Continues)
		}
		for _, id := range []string{"m-2", "m-3"} {
			if m[id].RetryOf != "" || m[id].ChainID != m["m-1"].ExchangeID {
				t.Errorf("%s: retry_of %q chain %q", id, m[id].RetryOf, m[id].ChainID)
			}
		}
	})
	t.Run("several observers, one exchange", func(t *testing.T) {
		sink, _ := runFile(t, testConfig(), readLines(t, "testdata/correlate/multi_observer.ndjson"))
		if len(sink.exchanges) != 3 {
			t.Fatalf("%d exchanges, want 3", len(sink.exchanges))
		}
		r := sink.exchanges[0]
		if r.ExchangeID != "req-77" || r.OneSided || len(r.Sources) != 2 || r.Source != "gateway" ||
			r.ClientName != "claude-code" || r.ClientOutcome != "success" || !r.ClientDisagrees || r.Outcome != classify.ToolError {
			t.Errorf("merged by exchange id: %+v", r)
		}
		if r := sink.exchanges[1]; r.OneSided || r.ClientDisagrees {
			t.Errorf("merged by session and id: %+v", r)
		}
		if r := sink.exchanges[2]; !r.OneSided {
			t.Errorf("one-sided: %+v", r)
		}
	})
	t.Run("no response and orphans", func(t *testing.T) {
		m := run("no_response")
		if r := m["n-1"]; r.Outcome != classify.NoResponse || r.NoResponseReason == "" {
			t.Errorf("no response: %+v", r)
		}
		// Answers whose request was never seen (or came earlier than the
		// pair window) are judged by what they carry: a tool result is a
		// tool outcome, and an SSE stream is not an ID mismatch.
		sink, _ := runFile(t, testConfig(), readLines(t, "testdata/correlate/no_response.ndjson"))
		orphans := map[string]schema.Exchange{}
		for _, r := range sink.exchanges {
			if r.RequestEventID == "" {
				orphans[r.ResponseEventID] = r
			}
		}
		if len(orphans) != 2 {
			t.Fatalf("%d orphans, want 2: %+v", len(orphans), orphans)
		}
		if r := orphans["n-orphan"]; r.Outcome != classify.ToolSuccess || r.NoResponseReason == "" {
			t.Errorf("orphan json result: %+v", r)
		}
		if r := orphans["n-1-late"]; r.Outcome != classify.ToolError || r.Transport != "sse" || r.NoResponseReason == "" {
			t.Errorf("late sse tool error: %+v", r)
		}
	})
}

// A sink that fails for a while loses nothing: the batch is retried, and
// the source is committed only after it is stored.
func TestSinkFailureLosesNothing(t *testing.T) {
	lines := readLines(t, "testdata/correlate/retries.ndjson")
	src := newSliceSource("f", lines)
	sink := &memSink{failures: 5}
	e, err := New(testConfig(), Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(sink.exchanges) != len(lines) || sink.writes < 6 {
		t.Errorf("%d exchanges after %d writes, want %d", len(sink.exchanges), sink.writes, len(lines))
	}
	if got := src.committed["f"]; got != int64(len(lines)+1) {
		t.Errorf("committed %d, want %d", got, len(lines)+1)
	}
}

// The commit stops at the oldest request still waiting for its response,
// so a restart re-reads it; a graceful stop leaves it uncommitted.
func TestCommitLowWatermark(t *testing.T) {
	ts := func(s int) string { return time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC).Format(time.RFC3339Nano) }
	ex := func(id string, s int) []byte {
		return []byte(fmt.Sprintf(`{"event_id":%q,"ts":%q,"kind":"exchange","source":"gateway","http.method":"POST","http.status":202,"request_body":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}","response_body":""}`, id, ts(s)))
	}
	req := []byte(fmt.Sprintf(`{"event_id":"open","ts":%q,"kind":"request","source":"gateway","exchange_id":"w","http.method":"POST","request_body":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"}`, ts(1)))
	lines := [][]byte{ex("e1", 0), req, ex("e2", 2), ex("e3", 20), ex("e4", 21)}
	src := newSliceSource("k", lines)
	src.block = true
	sink := &memSink{}
	e, err := New(testConfig(), Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- e.Run(ctx) }()
	deadline := time.Now().Add(5 * time.Second)
	for {
		src.mu.Lock()
		n := src.committed["k"]
		src.mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := src.committed["k"]; got != 2 {
		t.Errorf("committed up to %d, want 2 (the waiting request at line 2)", got)
	}
	for _, r := range sink.exchanges {
		if r.RequestEventID == "open" {
			t.Errorf("the waiting request was emitted on a graceful stop: %+v", r)
		}
	}
}

// Pending state is bounded: what the bound evicts is emitted as
// NO_RESPONSE and counted, never dropped.
func TestPendingBound(t *testing.T) {
	var lines [][]byte
	for i := range 50 {
		lines = append(lines, []byte(fmt.Sprintf(`{"event_id":"q%d","ts":"2026-01-01T00:00:%02dZ","kind":"request","source":"client","exchange_id":"p%d","http.method":"POST","request_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"}`, i, i%60, i, i)))
	}
	cfg := testConfig()
	cfg.Correlator.MaxPending = 10
	sink, _ := runFile(t, cfg, lines)
	evicted := 0
	for _, r := range sink.exchanges {
		if r.Outcome != classify.NoResponse {
			t.Fatalf("outcome %s", r.Outcome)
		}
		if r.ErrorClass == classify.PendingEvicted {
			evicted++
		}
	}
	if len(sink.exchanges) != 50 || evicted != 40 {
		t.Errorf("%d exchanges, %d evicted; want 50 and 40", len(sink.exchanges), evicted)
	}
}

func TestQuarantineKeepsBadLines(t *testing.T) {
	lines := [][]byte{[]byte(`not json`), []byte(`{"kind":"exchange"}`), readLines(t, "testdata/correlate/mrtr.ndjson")[0]}
	sink, src := runFile(t, testConfig(), lines)
	if len(sink.quar) != 2 || len(sink.exchanges) != 1 {
		t.Fatalf("%d quarantined, %d exchanges", len(sink.quar), len(sink.exchanges))
	}
	if string(sink.quar[0].Raw) != "not json" || sink.quar[0].Position != "test.ndjson:1" || sink.quar[1].Reason == "" {
		t.Errorf("quarantine rows: %+v", sink.quar)
	}
	if src.committed["test.ndjson"] != 4 {
		t.Errorf("committed %d", src.committed["test.ndjson"])
	}
}

func TestConfigValidate(t *testing.T) {
	cfg := DefaultConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.BatchSize, cfg.RetryMax = 0, time.Nanosecond
	if err := cfg.Validate(); err == nil {
		t.Fatal("invalid config accepted")
	}
	cfg = DefaultConfig()
	cfg.BatchMaxBytes = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "batch-max-bytes") {
		t.Fatalf("negative batch-max-bytes: %v, want it named", err)
	}
	cfg.BatchMaxSize, cfg.BatchMaxBytes = 0, 0 // both turn the growth off
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
}

// failingCommits refuses its first commits, as a restarting broker does.
type failingCommits struct {
	*sliceSource
	failures int
}

func (f *failingCommits) Commit(ctx context.Context, next []Position) error {
	if f.failures > 0 {
		f.failures--
		return errors.New("use of closed network connection")
	}
	return f.sliceSource.Commit(ctx, next)
}

// A failed commit is not fatal: the data is stored, the commit is tried
// again at the next flush.
func TestCommitFailureIsRetried(t *testing.T) {
	lines := readLines(t, "testdata/correlate/retries.ndjson")
	// Two failures: the file gives three flushes before the last one.
	src := &failingCommits{sliceSource: newSliceSource("c", lines), failures: 2}
	sink := &memSink{}
	cfg := testConfig()
	cfg.BatchSize = 2
	e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := src.committed["c"]; got != int64(len(lines)+1) || len(sink.exchanges) != len(lines) {
		t.Errorf("committed %d, %d exchanges", got, len(sink.exchanges))
	}
}
