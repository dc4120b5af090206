package pipeline

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/schema"
)

// pairLines are n exchanges as request and response lines, the response
// of exchange i at offset 2i+2 (positions count from 1).
func pairLines(n int) [][]byte {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var lines [][]byte
	for i := range n {
		ts := base.Add(time.Duration(i) * 10 * time.Millisecond)
		for _, kind := range []string{"request", "response"} {
			body := fmt.Sprintf(`"request_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"t\"}}"`, i)
			if kind == "response" {
				ts = ts.Add(5 * time.Millisecond)
				body = fmt.Sprintf(`"http.status":200,"response_body":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{\"content\":[]}}"`, i)
			}
			lines = append(lines, fmt.Appendf(nil, `{"v":1,"kind":%q,"event_id":"%s-%d","source":"gateway","observer":"gw","server":"srv","session_id":"s","exchange_id":"x-%d","ts":%q,"http.method":"POST",%s}`,
				kind, kind[:3], i, i, ts.Format(time.RFC3339Nano), body))
		}
	}
	return lines
}

// ackSink acknowledges what its gate lets through and checks that writes
// never overlap.
type ackSink struct {
	mu      sync.Mutex
	acked   map[string]int
	writes  int
	sizes   []int // rows of each write, in order
	writing atomic.Int32
	overlap atomic.Bool
	// gate runs before each write is stored (write counts from 1); an
	// error fails the write.
	gate func(ctx context.Context, write int) error
}

func (s *ackSink) Write(ctx context.Context, b *schema.Batch) error {
	if s.writing.Add(1) > 1 {
		s.overlap.Store(true)
	}
	defer s.writing.Add(-1)
	s.mu.Lock()
	s.writes++
	n := s.writes
	s.sizes = append(s.sizes, b.Len())
	s.mu.Unlock()
	if err := s.gate(ctx, n); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range b.Exchanges {
		s.acked[b.Exchanges[i].ExchangeID]++
	}
	return nil
}

func (s *ackSink) Close() error { return nil }

// ackedSource is a slice source whose commits are checked against the
// sink: a commit up to offset next means every exchange whose lines are
// all before next is acknowledged.
type ackedSource struct {
	*sliceSource
	sink    *ackSink
	read    chan struct{} // closed once every line is fetched
	once    sync.Once
	mu      sync.Mutex
	bad     []string
	highest int64
}

func (s *ackedSource) Fetch(ctx context.Context) (Message, error) {
	m, err := s.sliceSource.Fetch(ctx)
	s.sliceSource.mu.Lock()
	all := s.i == len(s.msgs)
	s.sliceSource.mu.Unlock()
	if all {
		s.once.Do(func() { close(s.read) })
	}
	return m, err
}

func (s *ackedSource) Commit(ctx context.Context, ps []Position) error {
	s.sink.mu.Lock()
	for _, p := range ps {
		for i := int64(0); 2*i+2 < p.Offset; i++ {
			if id := fmt.Sprintf("x-%d", i); s.sink.acked[id] == 0 {
				s.mu.Lock()
				s.bad = append(s.bad, fmt.Sprintf("commit up to %d before %s was stored", p.Offset, id))
				s.mu.Unlock()
				break
			}
		}
		s.mu.Lock()
		s.highest = max(s.highest, p.Offset)
		s.mu.Unlock()
	}
	s.sink.mu.Unlock()
	return s.sliceSource.Commit(ctx, ps)
}

func newAcked(lines [][]byte, sink *ackSink) *ackedSource {
	return &ackedSource{sliceSource: newSliceSource("f", lines), sink: sink, read: make(chan struct{})}
}

// While the store holds a write, the engine keeps reading and classifying
// (the next batch fills meanwhile), writes stay one at a time and in
// order, and nothing is committed past what the store acknowledged.
// Written synchronously, the first write would hold the loop and the
// source would never be read to its end while that write waits.
func TestWriteOverlapsReading(t *testing.T) {
	const n = 3000
	sink := &ackSink{acked: map[string]int{}}
	src := newAcked(pairLines(n), sink)
	var stalled atomic.Bool
	sink.gate = func(ctx context.Context, write int) error {
		if write != 1 {
			return nil
		}
		select { // the first write is held until the whole input is read
		case <-src.read:
		case <-time.After(2 * time.Minute):
			stalled.Store(true)
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	}
	cfg := testConfig()
	cfg.BatchSize = 10 * n // a tick, not a full batch, flushes
	e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(t.Context()); err != nil {
		t.Fatal(err)
	}
	if stalled.Load() {
		t.Fatal("reading stopped while the first write was in flight")
	}
	if sink.overlap.Load() {
		t.Error("two writes were in flight at once")
	}
	if sink.writes < 2 {
		t.Errorf("%d writes, want the held one and at least one after it", sink.writes)
	}
	storedOnceCommittedAll(t, sink, src, n)
}

// storedOnceCommittedAll checks that each of pairLines' n exchanges was
// stored once, that no commit passed what was stored, and that the end
// committed every line.
func storedOnceCommittedAll(t *testing.T, sink *ackSink, src *ackedSource, n int) {
	t.Helper()
	for i := range n {
		if id := fmt.Sprintf("x-%d", i); sink.acked[id] != 1 {
			t.Errorf("%s stored %d times, want once", id, sink.acked[id])
		}
	}
	for _, b := range src.bad {
		t.Error(b)
	}
	if src.highest != int64(2*n+1) {
		t.Errorf("committed up to %d at the end, want %d", src.highest, 2*n+1)
	}
}

// A store that goes down for good after its first write: the engine
// retries the batch in flight, commits nothing past the last
// acknowledged batch, stops reading once the next batch is full, and its
// final flush fails with the store still down; Run returns only after
// the writer goroutine ended.
func TestFailingWriteCommitsNothingPast(t *testing.T) {
	const n = 2000
	sink := &ackSink{acked: map[string]int{}}
	src := newAcked(pairLines(n), sink)
	src.block = true // a Kafka source: no end of input
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var failures atomic.Int32
	sink.gate = func(_ context.Context, write int) error {
		if write == 1 {
			return nil
		}
		if failures.Add(1) == 20 {
			cancel()
		}
		return errors.New("store down")
	}
	cfg := testConfig()
	cfg.BatchSize = 200
	cfg.ShutdownTimeout = 50 * time.Millisecond
	e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(ctx); err == nil {
		t.Fatal("Run returned nil with the store down at its final flush")
	}
	after := failures.Load()
	for _, b := range src.bad {
		t.Error(b)
	}
	stored := 0
	for i := range n {
		if sink.acked[fmt.Sprintf("x-%d", i)] > 0 {
			stored++
		}
	}
	if stored == 0 || stored == n {
		t.Fatalf("%d of %d exchanges stored, want the first batch only", stored, n)
	}
	if max := int64(2*stored + 1); src.highest > max {
		t.Errorf("committed up to %d with %d exchanges stored (at most %d)", src.highest, stored, max)
	}
	src.sliceSource.mu.Lock()
	read := src.i
	src.sliceSource.mu.Unlock()
	if read == 2*n {
		t.Error("the whole input was read while the store was down")
	}
	if got := failures.Load(); got != after || sink.writing.Load() != 0 {
		t.Errorf("a write ran after Run returned (%d failures, then %d)", after, got)
	}
}

// While a write is in flight, the next batch grows past BatchSize up to
// BatchMaxSize rows or BatchMaxBytes, and goes as soon as that write
// lands: a slow store gets fewer, larger writes, and the loop reads on
// meanwhile. Without room to grow (BatchMaxSize at BatchSize, or no
// bytes), batches stay at BatchSize. Each case stores every exchange
// once and commits nothing before it is stored.
func TestBatchGrowsWhileWriteInFlight(t *testing.T) {
	const n = 1000 // exchanges: 2,000 rows
	for _, tc := range []struct {
		name          string
		batchSize     int
		maxRows       int
		maxBytes      int64
		wantMax       int // the most rows a write may hold
		wantGrowsPast int // some write holds more rows than this
	}{
		{name: "rows bound", batchSize: 200, maxRows: 600, maxBytes: 1 << 30, wantMax: 600 + 1, wantGrowsPast: 200 + 1},
		// pairLines' bodies are about 60 bytes, so a row counts rowBytes
		// and an exchange (two rows) a little over 2*rowBytes: 100 KiB
		// is about 190 rows.
		{name: "bytes bound", batchSize: 100, maxRows: 100_000, maxBytes: 100 << 10, wantMax: 220, wantGrowsPast: 100 + 1},
		{name: "off by rows", batchSize: 100, maxRows: 100, maxBytes: 1 << 30, wantMax: 100 + 1},
		{name: "off by bytes", batchSize: 100, maxRows: 100_000, maxBytes: 0, wantMax: 100 + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sink := &ackSink{acked: map[string]int{}}
			src := newAcked(pairLines(n), sink)
			sink.gate = func(ctx context.Context, _ int) error {
				select { // each write takes far longer than a batch takes to read
				case <-time.After(50 * time.Millisecond):
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			cfg := testConfig()
			cfg.FlushInterval = time.Hour // only full batches and the end flush
			cfg.BatchSize, cfg.BatchMaxSize, cfg.BatchMaxBytes = tc.batchSize, tc.maxRows, tc.maxBytes
			families := runMetered(t, cfg, Deps{Source: src, Sink: sink})
			if sink.overlap.Load() {
				t.Error("two writes were in flight at once")
			}
			// mcplens_ingest_sink_batch_rows observes each write's rows.
			total := 0
			for _, size := range sink.sizes {
				total += size
			}
			observed := false
			for _, f := range families {
				if f.GetName() == "mcplens_ingest_sink_batch_rows" {
					observed = true
					if h := f.GetMetric()[0].GetHistogram(); h.GetSampleCount() != uint64(len(sink.sizes)) || h.GetSampleSum() != float64(total) {
						t.Errorf("batch rows histogram: %d writes of %.0f rows, want %d of %d", h.GetSampleCount(), h.GetSampleSum(), len(sink.sizes), total)
					}
				}
			}
			if !observed {
				t.Error("no mcplens_ingest_sink_batch_rows")
			}
			// The last write is the end of input's, which releases all
			// that waits at once, however many rows that is.
			largest := 0
			for _, size := range sink.sizes[:len(sink.sizes)-1] {
				largest = max(largest, size)
			}
			// A row past the bound: the check follows a line, and a
			// response line can release its exchange and body at once.
			if largest > tc.wantMax {
				t.Errorf("a write of %d rows, want at most %d (writes %v)", largest, tc.wantMax, sink.sizes)
			}
			if tc.wantGrowsPast > 0 && largest < tc.wantGrowsPast {
				t.Errorf("largest write %d rows, want a batch grown past %d while the one before was stored (writes %v)", largest, tc.wantGrowsPast, sink.sizes)
			}
			storedOnceCommittedAll(t, sink, src, n)
		})
	}
}

// mcplens_ingest_sink_blocked_seconds_total counts the time the loop
// stood still for the store: against a store slower than a batch takes
// to fill, it grows, and never by more than the writes took.
func TestSinkBlockedSeconds(t *testing.T) {
	const n = 400
	sink := &ackSink{acked: map[string]int{}}
	src := newAcked(pairLines(n), sink)
	sink.gate = func(ctx context.Context, _ int) error {
		select { // each write takes far longer than 200 rows take to read
		case <-time.After(200 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cfg := testConfig()
	cfg.BatchSize, cfg.BatchMaxSize = 200, 200 // the loop waits at a full batch
	families := runMetered(t, cfg, Deps{Source: src, Sink: sink})
	var blocked, wrote float64
	for _, f := range families {
		switch f.GetName() {
		case "mcplens_ingest_sink_blocked_seconds_total":
			blocked = f.GetMetric()[0].GetCounter().GetValue()
		case "mcplens_ingest_sink_write_seconds":
			wrote = f.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	if sink.writes < 3 {
		t.Fatalf("%d writes, want at least 3", sink.writes)
	}
	// The loop's wait also spans the hand-over after a write's own
	// timing stops: a few milliseconds more under load, never a batch.
	if blocked <= 0 || blocked > wrote+0.05 {
		t.Errorf("blocked %.3f s with %d writes taking %.3f s: want more than 0, at most the writes' time (+50 ms of hand-over)", blocked, sink.writes, wrote)
	}
}

// TestBatchRoom: a new batch gets room for the longest of the last few
// batches (so a full batch after one a flush tick cut short is not copied
// whole as it grows), and a burst's size fades within a few flushes.
func TestBatchRoom(t *testing.T) {
	var r batchRoom
	r.note(5000, 5000, 10000)
	if r.exchanges != 5000+5000/16+16 || r.bodies != r.exchanges || r.pos != 10000+10000/16+16 {
		t.Fatalf("after a full batch: %+v", r)
	}
	full := r.exchanges
	r.note(300, 300, 600) // a tick cut the batch short: keep room for a full one
	if r.exchanges != full-full/4 {
		t.Fatalf("after a short batch: room %d, want %d", r.exchanges, full-full/4)
	}
	for range 20 {
		r.note(300, 300, 600)
	}
	if want := 300 + 300/16 + 16; r.exchanges != want {
		t.Fatalf("after a quiet while: room %d, want %d (a burst's size fades)", r.exchanges, want)
	}
}

// A batch's rows array that is full doubles, up to the most rows a batch
// grows to, and always takes at least one more row; the rows it held stay.
func TestGrowRows(t *testing.T) {
	for _, c := range []struct{ n, most, want int }{
		{n: 10_000, most: 40_000, want: 20_000}, // doubled
		{n: 30_000, most: 40_000, want: 40_000}, // doubling would pass the most
		{n: 40_000, most: 40_000, want: 40_001}, // at the most: one more
		{n: 0, most: 40_000, want: 1},
	} {
		s := make([]schema.Body, c.n)
		for i := range s {
			s[i].ExchangeID = strconv.Itoa(i)
		}
		g := growRows(s, c.most)
		if cap(g) != c.want {
			t.Errorf("%d rows, most %d: room %d, want %d", c.n, c.most, cap(g), c.want)
		}
		if len(g) != c.n || (c.n > 0 && g[c.n-1].ExchangeID != strconv.Itoa(c.n-1)) {
			t.Errorf("%d rows: the rows held were not kept (len %d)", c.n, len(g))
		}
	}
}

// arraysSink is a memSink noting the arrays each write was handed and
// whether their unused room held anything.
type arraysSink struct {
	memSink
	arrays map[*schema.Exchange]bool
	bodies map[*schema.Body]bool
	stale  int // writes whose arrays held records past their length
	handed int // writes with exchanges
	held   [][]schema.Exchange
	heldB  [][]schema.Body
}

func newArraysSink() arraysSink {
	return arraysSink{arrays: map[*schema.Exchange]bool{}, bodies: map[*schema.Body]bool{}}
}

func (s *arraysSink) Write(ctx context.Context, b *schema.Batch) error {
	if len(b.Exchanges) > 0 {
		// Holding every array keeps the collector from handing a freed
		// one's address to a later batch, which would look like reuse.
		s.held = append(s.held, b.Exchanges)
		s.heldB = append(s.heldB, b.Bodies)
		s.handed++
		s.arrays[unsafe.SliceData(b.Exchanges)] = true
		s.bodies[unsafe.SliceData(b.Bodies)] = true
	}
	for _, x := range b.Exchanges[len(b.Exchanges):cap(b.Exchanges)] {
		if !reflect.ValueOf(x).IsZero() {
			s.stale++
			break
		}
	}
	for _, x := range b.Bodies[len(b.Bodies):cap(b.Bodies)] {
		if !reflect.ValueOf(x).IsZero() {
			s.stale++
			break
		}
	}
	return s.memSink.Write(ctx, b)
}

// copierSink is an arraysSink that declares itself a Copier (it copies
// every record).
type copierSink struct{ arraysSink }

func (s *copierSink) CopiesBatches() {}

// A Copier sink gets the arrays of stored batches again, cleared, and the
// records are those any other sink gets; a sink that is no Copier gets
// fresh arrays every time, so what it kept is never overwritten.
func TestCopierReusesBatchArrays(t *testing.T) {
	lines := pairLines(3000)
	cfg := testConfig()
	cfg.BatchSize = 100 // rows: 50 exchanges and their bodies a batch
	// Batches cut by size alone, so that their sizes, and with them the
	// arrays reused, do not depend on the machine's timing.
	cfg.FlushInterval = time.Hour
	now := func() time.Time { return time.Unix(0, 0).UTC() }
	run := func(sink Sink) {
		e, err := New(cfg, Deps{Source: newSliceSource("f", lines), Sink: sink, Logger: zerolog.Nop(), Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	plainSink := newArraysSink()
	plain := &plainSink
	run(plain)
	copier := &copierSink{newArraysSink()}
	run(copier)

	if len(plain.exchanges) != 3000 || len(copier.exchanges) != 3000 {
		t.Fatalf("stored %d and %d exchanges, want 3000 each", len(plain.exchanges), len(copier.exchanges))
	}
	byID := func(xs []schema.Exchange) map[string]schema.Exchange {
		m := map[string]schema.Exchange{}
		for _, x := range xs {
			m[x.ExchangeID] = x
		}
		return m
	}
	if want, got := byID(plain.exchanges), byID(copier.exchanges); !reflect.DeepEqual(want, got) {
		t.Error("a Copier sink stored other records than a plain one")
	}
	if copier.writes < 20 {
		t.Fatalf("%d writes: too few batches to see reuse", copier.writes)
	}
	if copier.stale > 0 {
		t.Errorf("%d writes were handed arrays with old records past their length", copier.stale)
	}
	// One batch in flight and one filling: a few arrays serve every write
	// (a new one only when a longer batch needs more room).
	if n := len(copier.arrays); n > copier.handed/4 || len(copier.bodies) > copier.handed/4 {
		t.Errorf("%d exchange and %d body arrays for %d writes: not reused", n, len(copier.bodies), copier.handed)
	}
	if len(plain.arrays) != plain.handed || len(plain.bodies) != plain.handed {
		t.Errorf("a sink that is no Copier got %d exchange and %d body arrays for %d writes, want fresh ones each time",
			len(plain.arrays), len(plain.bodies), plain.handed)
	}
}

// While a write is in flight the loop gives the writer a turn every
// yieldEvery messages or yieldBytes of them, and never while nothing is
// in flight: with one P, a busy loop otherwise leaves the writer's socket
// unserved for up to the runtime's 10 ms poll and preemption per round
// trip.
func TestLoopYieldsWhileWriteInFlight(t *testing.T) {
	const (
		n      = 3000 // exchanges: 6,000 lines
		before = 2000 // lines fetched before the first write must begin
	)
	for _, tc := range []struct {
		name string
		pad  int // bytes added to each line's body
	}{
		{name: "short lines, by count"},
		{name: "6 KB lines, by bytes", pad: 6000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := paddedPairLines(n, tc.pad)
			minLen, maxLen := len(lines[0]), len(lines[0])
			for _, l := range lines {
				minLen, maxLen = min(minLen, len(l)), max(maxLen, len(l))
			}
			if minLen < tc.pad {
				t.Fatalf("lines of %d bytes, want the %d bytes of padding in each", minLen, tc.pad)
			}
			sink := &ackSink{acked: map[string]int{}}
			acked := newAcked(lines, sink)
			// The rest waits for the first write: a bound that a slow
			// machine can break would prove nothing.
			src := newGatedSource(acked.sliceSource, acked, before)
			sink.gate = func(ctx context.Context, write int) error {
				if write != 1 {
					return nil
				}
				close(src.open)
				select { // the first write is held until the whole input is read
				case <-acked.read:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			cfg := testConfig()
			cfg.FlushInterval = time.Hour
			// The first write goes once 100 rows are complete; the
			// batch after it grows while it is held.
			cfg.BatchSize, cfg.BatchMaxSize, cfg.BatchMaxBytes = 100, 1_000_000, 1<<30
			e, err := New(cfg, Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			yields, idle := 0, 0
			e.yield = func() { // on the loop goroutine, like e.fly's writes
				yields++
				if e.fly == nil {
					idle++
				}
				runtime.Gosched()
			}
			if err := e.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			storedOnceCommittedAll(t, sink, acked, n)
			if idle > 0 {
				t.Errorf("%d of %d yields with no write in flight", idle, yields)
			}
			// Every line fetched after the first write began was handled
			// while it was held, but for the fetch-ahead buffer's 256 and
			// the one the fetcher holds. Between two turns come at most
			// `most` lines (were all of them the shortest) and at least
			// `fewest` (were all of them the longest).
			perTurn := func(size int) int { return min(yieldEvery, (yieldBytes+size-1)/size) }
			most, fewest := perTurn(minLen), perTurn(maxLen)
			held := len(lines) - before - 257
			if yields < held/most || yields > len(lines)/fewest {
				t.Errorf("%d yields, want between %d (%d lines of %d-%d bytes handled while a write was held) and %d (every line)",
					yields, held/most, held, minLen, maxLen, len(lines)/fewest)
			}
		})
	}
}

// paddedPairLines are pairLines with pad more bytes of arguments in each
// request and of text in each response.
func paddedPairLines(n, pad int) [][]byte {
	lines := pairLines(n)
	if pad == 0 {
		return lines
	}
	fill := strings.Repeat("x", pad)
	for i, l := range lines {
		l = bytes.Replace(l, []byte(`\"params\":{\"name\":\"t\"}`), []byte(`\"params\":{\"name\":\"t\",\"arguments\":{\"pad\":\"`+fill+`\"}}`), 1)
		lines[i] = bytes.Replace(l, []byte(`\"content\":[]`), []byte(`\"content\":[{\"type\":\"text\",\"text\":\"`+fill+`\"}]`), 1)
	}
	return lines
}
