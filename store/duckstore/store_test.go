package duckstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/queries/querytest"
	"github.com/mcplens/mcplens/schema"
)

var corpusRange = queries.Filter{
	From: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
	To:   time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
}

func corpusStore(t *testing.T) *Store {
	t.Helper()
	s := openTemp(t)
	if err := s.Write(context.Background(), loadCorpus(t)); err != nil {
		t.Fatal(err)
	}
	return s
}

func exchangeBy(t *testing.T, b *schema.Batch, pred func(*schema.Exchange) bool) schema.Exchange {
	t.Helper()
	for _, e := range b.Exchanges {
		if pred(&e) {
			return e
		}
	}
	t.Fatal("no such exchange in the corpus")
	return schema.Exchange{}
}

func TestExchangeDetail(t *testing.T) {
	s := corpusStore(t)
	ctx := context.Background()
	corpus := loadCorpus(t)

	retry := exchangeBy(t, corpus, func(e *schema.Exchange) bool { return e.RequestEventID == "retries/r-2" })
	d, err := s.Exchange(ctx, retry.ExchangeID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Exchange.RetryOf == "" || !d.Exchange.UnknownSideEffectRetry || d.Exchange.TS != retry.TS {
		t.Errorf("record: %+v", d.Exchange)
	}
	if d.Body == nil || !strings.Contains(d.Body.RequestBody, "delete_item") || d.Body.ResponseHeaders.Get("content-type") != "application/json" {
		t.Errorf("body: %+v", d.Body)
	}
	if len(d.Chain) != 2 || d.Chain[0].ExchangeID != retry.RetryOf || d.Chain[1].ExchangeID != retry.ExchangeID || d.Chain[1].RetryOf != d.Chain[0].ExchangeID {
		t.Errorf("chain %+v", d.Chain)
	}

	last := exchangeBy(t, corpus, func(e *schema.Exchange) bool { return e.RequestEventID == "mrtr/m-3" })
	d, err = s.Exchange(ctx, last.ExchangeID)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Chain) != 3 || d.Chain[2].ExchangeID != last.ExchangeID || d.Chain[2].Continues != d.Chain[1].ExchangeID || d.Chain[0].Outcome != string(classify.InputRequired) {
		t.Errorf("MRTR rounds: %+v", d.Chain)
	}

	if _, err := s.Exchange(ctx, "no-such-id"); !errors.Is(err, queries.ErrNotFound) {
		t.Errorf("unknown id: %v, want ErrNotFound", err)
	}
}

// TestPagination pages through search results and a session and gets the
// same rows as one big page, in (ts, exchange_id) order.
func TestPagination(t *testing.T) {
	s := corpusStore(t)
	ctx := context.Background()
	all, err := s.Search(ctx, queries.SearchParams{Filter: corpusRange})
	if err != nil || len(all.Rows) < 100 || all.Next == "" {
		t.Fatalf("first page: %d rows, next %q, %v", len(all.Rows), all.Next, err)
	}
	f := corpusRange
	f.Limit = queries.MaxLimit
	full, err := s.Search(ctx, queries.SearchParams{Filter: f})
	if err != nil || full.Next != "" {
		t.Fatal(err, full.Next)
	}
	f.Limit = 7
	var paged []queries.SearchRow
	cur := ""
	for i := 0; ; i++ {
		p, err := s.Search(ctx, queries.SearchParams{Filter: f, Cursor: cur})
		if err != nil {
			t.Fatal(err)
		}
		paged = append(paged, p.Rows...)
		if p.Next == "" {
			break
		}
		cur = p.Next
		if i > 100 {
			t.Fatal("pagination does not end")
		}
	}
	if len(paged) != len(full.Rows) {
		t.Fatalf("paged %d rows, one page %d", len(paged), len(full.Rows))
	}
	for i := range paged {
		if paged[i].ExchangeID != full.Rows[i].ExchangeID {
			t.Fatalf("row %d: paged %s, one page %s", i, paged[i].ExchangeID, full.Rows[i].ExchangeID)
		}
		if i > 0 && (paged[i].TS.Before(paged[i-1].TS) || paged[i].TS.Equal(paged[i-1].TS) && paged[i].ExchangeID <= paged[i-1].ExchangeID) {
			t.Fatalf("rows %d and %d out of (ts, exchange_id) order", i-1, i)
		}
	}

	tl, err := s.SessionTimeline(ctx, queries.SessionParams{SessionID: "s-g2", From: corpusRange.From, To: corpusRange.To, Limit: 4})
	if err != nil || len(tl.Rows) != 4 || tl.Next == "" {
		t.Fatalf("timeline page 1: %+v %v", tl, err)
	}
	tl2, err := s.SessionTimeline(ctx, queries.SessionParams{SessionID: "s-g2", From: corpusRange.From, To: corpusRange.To, Limit: 4, Cursor: tl.Next})
	if err != nil || len(tl2.Rows) != 2 || tl2.Next != "" || !tl2.Rows[0].TS.After(tl.Rows[3].TS) {
		t.Fatalf("timeline page 2: %+v %v", tl2, err)
	}
	if _, err := s.Search(ctx, queries.SearchParams{Filter: corpusRange, Cursor: "garbage!"}); !errors.Is(err, queries.ErrInvalid) {
		t.Errorf("bad cursor: %v", err)
	}
}

func TestTypedQuestions(t *testing.T) {
	s := corpusStore(t)
	ctx := context.Background()
	rpc, err := s.HTTP200RPCErrors(ctx, corpusRange)
	if err != nil {
		t.Fatal(err)
	}
	if len(rpc) != 5 || rpc[0].Server != "beta" || rpc[0].Share != 0.6 || len(rpc[0].Top) != 3 || rpc[1].Server != "alpha" || rpc[1].Top[0].N != 2 {
		t.Errorf("http200: %+v", rpc)
	}
	// The envelope records alone (conformance input evidence.ndjson,
	// server meta): one JSON-RPC error among meta's four envelope HTTP
	// 200s; its two status-only 200s are left out.
	env := corpusRange
	env.Evidence = "envelope"
	if rpc, err := s.HTTP200RPCErrors(ctx, env); err != nil || len(rpc) != 1 || rpc[0].Server != "meta" || rpc[0].HTTP200 != 4 {
		t.Errorf("http200 of envelope records: %+v %v", rpc, err)
	}
	env.Evidence = "envelopes"
	if _, err := s.HTTP200RPCErrors(ctx, env); !errors.Is(err, queries.ErrInvalid) {
		t.Errorf("evidence envelopes: %v, want ErrInvalid", err)
	}
	lb, err := s.Leaderboard(ctx, queries.LeaderboardParams{Filter: corpusRange})
	if err != nil || len(lb) == 0 || lb[0].GroupKey != "gosdk" || lb[0].P99MS == nil {
		t.Errorf("leaderboard: %+v %v", lb, err)
	}
	bd, err := s.Breakdown(ctx, queries.BreakdownParams{Filter: corpusRange, Bucket: time.Hour, GroupBy: queries.GroupServer})
	if err != nil || len(bd) == 0 {
		t.Errorf("breakdown: %v", err)
	}
	var total int64
	for _, r := range bd {
		total += r.Exchanges
		if r.Bucket.Minute() != 0 || r.Bucket.Second() != 0 {
			t.Errorf("bucket %s not on the hour", r.Bucket)
		}
	}
	if total != int64(len(loadCorpus(t).Exchanges)) {
		t.Errorf("breakdown counts %d exchanges", total)
	}
	for _, bad := range []queries.BreakdownParams{
		{Filter: corpusRange, GroupBy: "session"},
		{Filter: corpusRange, Bucket: 1500 * time.Millisecond},
	} {
		if _, err := s.Breakdown(ctx, bad); !errors.Is(err, queries.ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", bad, err)
		}
	}
	if _, err := s.Leaderboard(ctx, queries.LeaderboardParams{Filter: corpusRange, OrderBy: "fun"}); !errors.Is(err, queries.ErrInvalid) {
		t.Errorf("bad order: %v", err)
	}
	for name, call := range map[string]func() (int, error){
		"retries": func() (int, error) {
			r, err := s.UnknownSideEffectRetries(ctx, queries.RetriesParams{Filter: corpusRange})
			return len(r), err
		},
		"disagreements": func() (int, error) { r, err := s.ClientDisagreements(ctx, corpusRange); return len(r), err },
		"rate limits":   func() (int, error) { r, err := s.RateLimits(ctx, corpusRange); return len(r), err },
		"stream cuts":   func() (int, error) { r, err := s.StreamCuts(ctx, corpusRange); return len(r), err },
		"mrtr":          func() (int, error) { r, err := s.InputRequired(ctx, corpusRange); return len(r), err },
		"annotations":   func() (int, error) { r, err := s.ToolAnnotations(ctx, ""); return len(r), err },
		"quarantine":    func() (int, error) { r, err := s.Quarantine(ctx, corpusRange); return len(r), err },
	} {
		if n, err := call(); err != nil || n == 0 {
			t.Errorf("%s: %d rows, %v", name, n, err)
		}
	}
}

// TestSeedAfterRestart stops an ingester between a failed tool call and
// its re-send; the restarted one, seeded from the store, still links the
// retry and flags its unknown side effect.
func TestSeedAfterRestart(t *testing.T) {
	src, err := os.ReadFile("../../pipeline/testdata/correlate/retries.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(src)), "\n")
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.ndjson"), filepath.Join(dir, "second.ndjson")
	os.WriteFile(first, []byte(strings.Join(lines[:2], "")), 0o644)       // tools/list, delete_item -> 503
	os.WriteFile(second, []byte(strings.Join(lines[2:], "")+"\n"), 0o644) // the re-send and the rest
	dbPath := filepath.Join(dir, "m.duckdb")
	ctx := context.Background()

	ingest := func(path string, seed bool) {
		s, err := Open(ctx, dbPath, Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		fs, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		defer fs.Close()
		eng, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: fs, Sink: s, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if seed {
			recs, anns, err := s.Seed(ctx, 10*time.Minute)
			if err != nil || len(recs) != 2 || len(anns) != 3 {
				t.Fatalf("seed: %d records, %d annotations, %v", len(recs), len(anns), err)
			}
			eng.Seed(recs, anns)
		}
		if err := eng.Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ingest(first, false)
	ingest(second, true)

	s, err := OpenReadOnly(ctx, dbPath, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var retryOf, failedID string
	var unknown bool
	if err := s.DB().QueryRow(`SELECT r.retry_of, f.exchange_id, r.unknown_side_effect_retry FROM exchanges r, exchanges f
		WHERE r.request_event_id = 'r-2' AND f.request_event_id = 'r-1'`).Scan(&retryOf, &failedID, &unknown); err != nil {
		t.Fatal(err)
	}
	if retryOf != failedID || !unknown {
		t.Errorf("after restart the re-send has retry_of %q (want %q) and unknown_side_effect_retry %v", retryOf, failedID, unknown)
	}
}

// TestSeedKeepsMergedViews: the event ids of the views merged into a
// record come back with the seed (migration 0054).
func TestSeedKeepsMergedViews(t *testing.T) {
	querytest.CheckSeedKeepsMergedViews(t, context.Background(), openTemp(t), time.Date(2026, 11, 2, 12, 0, 0, 0, time.UTC))
}

func TestSeedEmpty(t *testing.T) {
	s := openTemp(t)
	recs, anns, err := s.Seed(context.Background(), time.Hour)
	if err != nil || len(recs) != 0 || len(anns) != 0 {
		t.Fatalf("empty store seed: %d %d %v", len(recs), len(anns), err)
	}
}

// TestConcurrentWriteAndRead runs the pipeline's writes beside API reads
// on one Store, the single-process mode.
func TestConcurrentWriteAndRead(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	gen := newGenerator(time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for r := 0; r < 2; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := queries.Filter{From: gen.start, To: gen.start.Add(48 * time.Hour)}
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.Leaderboard(ctx, queries.LeaderboardParams{Filter: f}); err != nil {
					errs <- err
					return
				}
				if _, err := s.Search(ctx, queries.SearchParams{Filter: f, Q: "unavailable"}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < 20; i++ {
		if err := s.Write(ctx, gen.batch(500)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	if err := s.DB().QueryRow("SELECT count(*) FROM exchanges").Scan(&n); err != nil || n != 10_000 {
		t.Fatalf("stored %d, %v", n, err)
	}
}

func TestReopenMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.duckdb")
	migs, err := schema.Migrations(schema.DuckDB, schema.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		s, err := Open(context.Background(), path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := s.DB().QueryRow("SELECT count(*) FROM schema_migrations").Scan(&n); err != nil || n != len(migs) {
			t.Fatalf("open %d: %d migrations recorded, want %d, %v", i, n, len(migs), err)
		}
		s.Close()
	}
}

// duckDBDefaultThreads is the thread count DuckDB picks itself on this
// machine (it may see fewer cores than Go does, in a container).
func duckDBDefaultThreads(t *testing.T) int {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT current_setting('threads')").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOpenSettings: Options.Threads and MemoryLimit are DuckDB's threads
// and memory_limit on every connection of the pool, the writer's
// included; WriterOptions, what ingest gives a store it only writes,
// are one thread and 512MB. The same holds read-only (cmd/api), and a
// memory limit that is not a size is refused.
func TestOpenSettings(t *testing.T) {
	for _, tc := range []struct {
		opts     Options
		readOnly bool
		threads  int
		memory   string // as DuckDB shows it
	}{
		{WriterOptions(), false, 1, "488.2 MiB"}, // 512MB
		{Options{Threads: 3, MemoryLimit: "1GiB"}, false, 3, "1.0 GiB"},
		{Options{MemoryLimit: ServingMemoryLimit}, true, duckDBDefaultThreads(t), "953.6 MiB"}, // cmd/api's default
		{Options{Threads: 2, MemoryLimit: "300MB"}, true, 2, "286.1 MiB"},
	} {
		path := filepath.Join(t.TempDir(), "t.duckdb")
		s, err := Open(context.Background(), path, tc.opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Write(context.Background(), loadCorpus(t)); err != nil {
			t.Fatal(err)
		}
		if tc.readOnly {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if s, err = OpenReadOnly(context.Background(), path, tc.opts); err != nil {
				t.Fatal(err)
			}
		}
		// Two connections at once: the pool's second one is opened by the
		// same connector.
		ctx := context.Background()
		c1, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		c2, err := s.DB().Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range []*sql.Conn{c1, c2} {
			var threads int
			var memory string
			if err := c.QueryRowContext(ctx, "SELECT current_setting('threads'), current_setting('memory_limit')").Scan(&threads, &memory); err != nil {
				t.Fatal(err)
			}
			if threads != tc.threads || memory != tc.memory {
				t.Errorf("Threads %d, MemoryLimit %q, read-only %v: connection %d has threads %d and memory_limit %q, want %d and %q",
					tc.opts.Threads, tc.opts.MemoryLimit, tc.readOnly, i, threads, memory, tc.threads, tc.memory)
			}
		}
		c1.Close()
		c2.Close()
		s.Close()
	}
	// The limit goes into DuckDB's DSN as written: anything but a size is
	// refused before it gets there, whoever opens the store.
	for _, bad := range []string{"512MB&threads=9", "lots", "512", "-1GB"} {
		path := filepath.Join(t.TempDir(), "bad.duckdb")
		if s, err := Open(context.Background(), path, Options{MemoryLimit: bad}); err == nil {
			s.Close()
			t.Errorf("Open with MemoryLimit %q succeeded", bad)
		}
		if _, err := os.Stat(path); err == nil {
			t.Errorf("Open with MemoryLimit %q created the file", bad)
		}
	}
}

func TestReadOnly(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.duckdb")
	ctx := context.Background()
	s, err := Open(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Write(ctx, loadCorpus(t)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := OpenReadOnly(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if err := ro.Write(ctx, loadCorpus(t)); err == nil {
		t.Error("a read-only store accepted a write")
	}
	if r, err := ro.StreamCuts(ctx, corpusRange); err != nil || len(r) == 0 {
		t.Errorf("read-only query: %v", err)
	}
}

const holderEnv = "DUCKSTORE_TEST_HOLD_WRITER"

// TestOpenReadOnlyWhileLocked holds the file open for writing in another
// process: OpenReadOnly waits, then fails with ErrLocked; once the writer
// is gone it opens.
func TestOpenReadOnlyWhileLocked(t *testing.T) {
	if path := os.Getenv(holderEnv); path != "" {
		s, err := Open(context.Background(), path, Options{})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("holding")
		var b [1]byte
		os.Stdin.Read(b[:]) // until the parent closes stdin
		s.Close()
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "m.duckdb")
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenReadOnlyWhileLocked$")
	cmd.Env = append(os.Environ(), holderEnv+"="+path)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "holding") {
		t.Fatalf("writer process: %q", buf[:n])
	}
	// Long enough for a few attempts on a loaded machine (CI runs this
	// beside the race detector): one open took over 1.2 s there.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := OpenReadOnly(ctx, path, Options{}); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenReadOnly beside a writer: %v, want ErrLocked", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	s, err := OpenReadOnly(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("after the writer left: %v", err)
	}
	s.Close()
}

func TestPrune(t *testing.T) {
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "m.duckdb"), Options{Retention: 48 * time.Hour, BodyRetention: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	gen := newGenerator(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	gen.step = 10 * time.Minute // 500 exchanges span ~3.5 days
	if err := s.Write(context.Background(), gen.batch(500)); err != nil {
		t.Fatal(err)
	}
	var oldest, oldestBody, newest time.Time
	s.DB().QueryRow("SELECT min(ts), max(ts) FROM exchanges").Scan(&oldest, &newest)
	s.DB().QueryRow("SELECT min(ts) FROM exchange_bodies").Scan(&oldestBody)
	if newest.Sub(oldest) > 48*time.Hour || newest.Sub(oldestBody) > 24*time.Hour {
		t.Errorf("after prune: exchanges span %s, bodies %s", newest.Sub(oldest), newest.Sub(oldestBody))
	}
}

func TestParseURL(t *testing.T) {
	if p, err := ParseURL("duckdb:/var/lib/mcplens.duckdb"); err != nil || p != "/var/lib/mcplens.duckdb" {
		t.Errorf("ParseURL = %q, %v", p, err)
	}
	for _, bad := range []string{"duckdb:", "file:x", ""} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
}
