package chstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// writeEvents writes n request/response pairs as gateway log lines dated
// the last hour (inside every TTL), with responses 10 ms to 30 s after
// their requests and the halves of neighbouring exchanges interleaved.
func writeEvents(t testing.TB, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.ndjson")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	start := time.Now().UTC().Add(-time.Hour).Truncate(time.Millisecond)
	var pending []map[string]any
	for i := range n {
		ts := start.Add(time.Duration(i) * 50 * time.Millisecond)
		delay := time.Duration(10+(i*7919)%30000) * time.Millisecond
		common := map[string]any{
			"v": 1, "source": "gateway", "observer": "gw-" + strconv.Itoa(i%3), "server": fmt.Sprintf("srv-%02d", i%7),
			"session_id": fmt.Sprintf("s-%d", i/20), "exchange_id": fmt.Sprintf("x-fault-%d", i),
		}
		req := map[string]any{"kind": "request", "event_id": fmt.Sprintf("req-%d", i), "ts": ts.Format(time.RFC3339Nano),
			"http.method": "POST", "request_body": fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d","arguments":{}}}`, i, i%5)}
		resp := map[string]any{"kind": "response", "event_id": fmt.Sprintf("resp-%d", i), "ts": ts.Add(delay).Format(time.RFC3339Nano),
			"http.status": 200, "response_body": fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[],"isError":%v}}`, i, i%9 == 0)}
		for k, v := range common {
			req[k], resp[k] = v, v
		}
		if err := enc.Encode(req); err != nil {
			t.Fatal(err)
		}
		pending = append(pending, resp)
		if len(pending) == 4 { // responses arrive late and out of order
			for _, j := range []int{2, 0, 3, 1} {
				if err := enc.Encode(pending[j]); err != nil {
					t.Fatal(err)
				}
			}
			pending = pending[:0]
		}
	}
	for _, r := range pending {
		if err := enc.Encode(r); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// fault is what the test does to the server at one write of the sink.
type fault struct {
	kill  bool          // SIGKILL (else SIGTERM)
	soon  bool          // while the write runs, a random moment later
	down  time.Duration // then restart after this long
	stage string
}

// faultySink stores through the real store and has the test goroutine
// hurt the server at chosen writes: before the insert, while it runs, or
// after the server committed it, in which case the acknowledgement is
// reported lost. It also checks that the source never commits while the
// store is failing.
type faultySink struct {
	*Store
	src    *pipeline.FileSource
	before map[int]fault // by batches stored so far; each fires once
	after  map[int]fault // committed, then the ack is lost
	faults chan fault
	acks   chan struct{}

	batchOf map[string]string // exchange id -> token of the batch that held it
	writes  atomic.Int32
	stored  int // writes that succeeded
	failing bool
	frozen  pipeline.Position
	errs    []error
}

func (f *faultySink) hurt(ft fault) {
	f.faults <- ft
	<-f.acks
}

func (f *faultySink) Write(ctx context.Context, b *schema.Batch) error {
	n := int(f.writes.Add(1))
	if f.failing && f.src.Committed() != f.frozen {
		f.errs = append(f.errs, fmt.Errorf("write %d: the source committed %v while the store was failing (at %v)", n, f.src.Committed(), f.frozen))
	}
	if ft, ok := f.before[f.stored]; ok {
		delete(f.before, f.stored)
		f.hurt(ft)
	}
	// A doubled row is the store's fault only if the pipeline handed the
	// exchange in one batch (retried under one token).
	for _, x := range b.Exchanges {
		if tok, ok := f.batchOf[x.ExchangeID]; ok && tok != b.Token {
			f.errs = append(f.errs, fmt.Errorf("write %d: the pipeline handed exchange %s (%s) in batch %s after batch %s", n, x.ExchangeID, x.Outcome, b.Token, tok))
		}
		f.batchOf[x.ExchangeID] = b.Token
	}
	err := f.Store.Write(ctx, b)
	if ft, ok := f.after[f.stored+1]; ok && err == nil {
		delete(f.after, f.stored+1)
		f.hurt(ft)
		err = errors.New("injected: the acknowledgement of a committed insert was lost")
	}
	if err != nil && !f.failing {
		f.failing, f.frozen = true, f.src.Committed()
	}
	if err == nil {
		f.failing = false
		f.stored++
	}
	return err
}

// TestServerFaults ingests a file through the real pipeline into a
// private ClickHouse server that is SIGKILLed right after it committed a
// batch whose acknowledgement is then lost, SIGKILLed before an insert
// and at a random moment during one, and stopped for a while, each time
// restarted on the same data directory. With merges stopped, the server
// holds every exchange exactly once: the retried batches carried their
// deduplication tokens, the pipeline handed each exchange in one batch
// only (the outages are not idle input: TestStoreOutageIsNotIdleness),
// and the source committed nothing while the store failed.
func TestServerFaults(t *testing.T) {
	srv := clickhousetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	const exchanges = 12_000
	path := writeEvents(t, exchanges)

	cfg := DefaultConfig()
	cfg.RetryAttempts, cfg.RetryMin, cfg.RetryMax = 2, 20*time.Millisecond, 50*time.Millisecond
	s, err := Open(ctx, srv.DSN(), cfg, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	opts := schema.DefaultOptions()
	opts.TTL, opts.BodyTTL = 0, 0 // the corpus is weeks old
	if err := s.Migrate(ctx, opts); err != nil {
		t.Fatal(err)
	}
	// A replacing merge would hide a doubled row; merges stay stopped
	// (again after each restart, and the merge size limits keep the
	// selector from merging in the moment before) so the count shows
	// every copy.
	srv.Query(t, "ALTER TABLE mcplens.exchanges MODIFY SETTING max_bytes_to_merge_at_max_space_in_pool = 1, max_bytes_to_merge_at_min_space_in_pool = 1")
	stopMerges := func() { srv.Query(t, "SYSTEM STOP MERGES mcplens.exchanges") }
	stopMerges()

	src, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	sink := &faultySink{Store: s, src: src, batchOf: map[string]string{},
		after:  map[int]fault{3: {kill: true, down: 2 * time.Second, stage: "after commit"}},
		before: map[int]fault{15: {kill: true, down: time.Second, stage: "before insert"}, 30: {kill: true, soon: true, down: time.Second, stage: "during insert"}, 45: {down: 3 * time.Second, stage: "stopped a while"}},
		faults: make(chan fault), acks: make(chan struct{}),
	}
	pcfg := pipeline.DefaultConfig()
	pcfg.BatchSize = 400
	pcfg.BatchMaxSize = pcfg.BatchSize // batches that do not grow: the faults are counted in writes
	pcfg.RetryMin, pcfg.RetryMax = 50*time.Millisecond, 300*time.Millisecond
	eng, err := pipeline.New(pcfg, pipeline.Deps{Source: src, Sink: sink, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()

	var restart <-chan time.Time
	var hurt []string
	for running := true; running; {
		select {
		case ft := <-sink.faults:
			hurt = append(hurt, ft.stage)
			if ft.soon {
				sink.acks <- struct{}{}
				time.Sleep(time.Duration(rand.N(30)) * time.Millisecond)
			}
			if ft.kill {
				srv.Kill(t)
			} else {
				srv.Stop(t)
			}
			if !ft.soon {
				sink.acks <- struct{}{}
			}
			restart = time.After(ft.down)
		case <-restart:
			srv.Restart(t)
			stopMerges()
			restart = nil
		case err := <-done:
			if err != nil {
				t.Fatalf("ingest: %v", err)
			}
			running = false
		}
	}
	if restart != nil {
		t.Fatal("ingest finished while the server was down")
	}
	if len(hurt) != 4 {
		t.Errorf("faults %v, want all four: the ingest ended before them", hurt)
	}
	for _, err := range sink.errs {
		t.Error(err)
	}
	var rows, ids uint64
	if err := s.conn.QueryRow(ctx, "SELECT count(), uniqExact(exchange_id) FROM exchanges").Scan(&rows, &ids); err != nil {
		t.Fatal(err)
	}
	if ids != exchanges || rows != exchanges {
		t.Fatalf("server holds %d rows of %d exchanges, want %d of %d: lost or doubled", rows, ids, exchanges, exchanges)
	}
	t.Logf("%d writes, faults %v; %d rows stored once", sink.writes.Load(), hurt, rows)
}
