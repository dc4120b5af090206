package chstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"
)

type call struct {
	table, token string
	rows         int
}

// recorder stands in for the server's INSERT (no server runs in these
// tests): it records each insert and fails the first ones as told.
type recorder struct {
	mu    sync.Mutex // Write inserts into several tables at once
	calls []call
	fail  []error
}

func (r *recorder) insert(_ context.Context, table string, cols []string, data []any, token string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(cols) != len(data) {
		return fmt.Errorf("%d columns, %d slices", len(cols), len(data))
	}
	if len(r.fail) > 0 {
		err := r.fail[0]
		r.fail = r.fail[1:]
		return err
	}
	r.calls = append(r.calls, call{table, token, reflectLen(data[0])})
	return nil
}

func reflectLen(v any) int {
	switch x := v.(type) {
	case []string:
		return len(x)
	case []time.Time:
		return len(x)
	}
	return -1
}

func testStore(t *testing.T, r *recorder, reg prometheus.Registerer) *Store {
	cfg := DefaultConfig()
	cfg.MaxInsertRows = 50
	s := newStore(cfg, "mcplens", zerolog.Nop(), reg)
	s.insert = r.insert
	s.sleep = func(ctx context.Context, _ time.Duration) error { return ctx.Err() }
	return s
}

func TestWriteSplitsAndTokens(t *testing.T) {
	r := &recorder{}
	reg := prometheus.NewRegistry()
	s := testStore(t, r, reg)
	corpus := loadCorpusBatch(t)
	corpus.Token = "tok"
	if err := s.Write(context.Background(), corpus); err != nil {
		t.Fatal(err)
	}
	// The tables are written side by side, so only each table's own
	// inserts have an order.
	got := map[string][]string{}
	for _, c := range r.calls {
		got[c.table] = append(got[c.table], fmt.Sprintf("%s=%d", c.token, c.rows))
	}
	// Parts of at most MaxInsertRows (50) rows per table, each with its
	// own token derived from the batch's; counted from the corpus, which
	// is regenerated as the pipeline changes.
	want := map[string][]string{}
	parts := func(table string, n int) {
		for i := 0; n > 0; i++ {
			k := min(n, 50)
			want[table] = append(want[table], fmt.Sprintf("tok:%s:%d=%d", table, i, k))
			n -= k
		}
	}
	parts("exchanges", len(corpus.Exchanges))
	parts("exchange_bodies", len(corpus.Bodies))
	parts("tool_annotations", len(corpus.Annotations))
	parts("quarantine", len(corpus.Quarantine))
	if len(corpus.Exchanges) <= 100 || len(corpus.Quarantine) == 0 {
		t.Fatalf("the corpus (%d exchanges, %d quarantined) no longer makes three parts and a quarantine", len(corpus.Exchanges), len(corpus.Quarantine))
	}
	if !maps.EqualFunc(got, want, slices.Equal) {
		t.Errorf("inserts:\n got %v\nwant %v", got, want)
	}
	if n := counter(s.m.rows.WithLabelValues("exchanges")); n != float64(len(corpus.Exchanges)) {
		t.Errorf("exchanges counted %v", n)
	}
}

func TestWriteRetriesTransient(t *testing.T) {
	r := &recorder{fail: []error{
		&net.OpError{Op: "write", Err: syscall.ECONNRESET},
		&clickhouse.Exception{Code: 252, Message: "Too many parts"},
	}}
	s := testStore(t, r, nil)
	b := &schema.Batch{Token: "t", Quarantine: loadCorpusBatch(t).Quarantine}
	if err := s.Write(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(r.calls) != 1 || r.calls[0].token != "t:quarantine:0" || counter(s.m.retries) != 2 {
		t.Errorf("calls %+v, retries %v", r.calls, counter(s.m.retries))
	}
}

func TestWriteGivesUp(t *testing.T) {
	b := &schema.Batch{Token: "t", Quarantine: loadCorpusBatch(t).Quarantine}
	perm := &recorder{fail: []error{&clickhouse.Exception{Code: 60, Message: "Unknown table"}}}
	s := testStore(t, perm, nil)
	if err := s.Write(context.Background(), b); err == nil || len(perm.fail) != 0 || counter(s.m.retries) != 0 {
		t.Errorf("permanent error: %v, retries %v", err, counter(s.m.retries))
	}
	var many []error
	for i := 0; i < 10; i++ {
		many = append(many, io.ErrUnexpectedEOF)
	}
	tr := &recorder{fail: many}
	s = testStore(t, tr, nil)
	err := s.Write(context.Background(), b)
	if err == nil || !strings.Contains(err.Error(), "after 5 attempts") || len(tr.fail) != 5 {
		t.Errorf("transient error: %v, %d failures left", err, len(tr.fail))
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s = testStore(t, &recorder{fail: []error{io.EOF}}, nil)
	if err := s.Write(ctx, b); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled during backoff: %v", err)
	}
}

func TestTransient(t *testing.T) {
	f := func(err error, want bool) {
		t.Helper()
		if got := Transient(err); got != want {
			t.Errorf("Transient(%v) = %v, want %v", err, got, want)
		}
	}
	f(nil, false)
	f(context.Canceled, false)
	f(fmt.Errorf("send: %w", io.EOF), true)
	f(&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true)
	f(fmt.Errorf("x: %w", &clickhouse.Exception{Code: 241}), true)
	f(&clickhouse.Exception{Code: 62, Message: "Syntax error"}, false)
	f(&clickhouse.Exception{Code: 53, Message: "Type mismatch"}, false)
	f(errors.New("clickhouse [AppendRow]: converting string to Int64 is unsupported"), false)
}

func TestConfigOptions(t *testing.T) {
	cfg := DefaultConfig()
	cfg.User, cfg.Password = "ingest", "s3cret"
	o, err := cfg.options("clickhouse://default:old@ch-1:9440,ch-2:9440/analytics?secure=true&dial_timeout=3s")
	if err != nil {
		t.Fatal(err)
	}
	if o.Auth.Username != "ingest" || o.Auth.Password != "s3cret" || o.Auth.Database != "analytics" || o.TLS == nil ||
		len(o.Addr) != 2 || o.Compression == nil || o.Compression.Method != clickhouse.CompressionLZ4 {
		t.Errorf("options: %+v", o)
	}
	t.Setenv("CLICKHOUSE_USER", "env-user")
	t.Setenv("CLICKHOUSE_PASSWORD", "env-pw")
	def := DefaultConfig()
	if o, err := def.options("clickhouse://default:dsn-pw@h:9000/db"); err != nil || o.Auth.Username != "env-user" || o.Auth.Password != "env-pw" {
		t.Errorf("the environment must stand in for empty flags: %v", err)
	}
	t.Setenv("CLICKHOUSE_USER", "")
	t.Setenv("CLICKHOUSE_PASSWORD", "")
	if o, err := def.options("clickhouse://default:dsn-pw@h:9000/db"); err != nil || o.Auth.Username != "default" || o.Auth.Password != "dsn-pw" {
		t.Errorf("without flags or environment the DSN's credentials hold: %v", err)
	}
	o, err = def.options("clickhouse://localhost:9000")
	if err != nil || o.Auth.Database != "mcplens" || o.TLS != nil {
		t.Errorf("defaults: %+v %v", o, err)
	}
	for _, bad := range []string{"http://localhost:8123", "duckdb:/x", "clickhouse://localhost:9000/db?dial_timeout=forever"} {
		if _, err := ParseURL(bad); err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		}
	}
	if _, err := ParseURL("clickhouse://u:pw-S3cret@h:9000/db?dial_timeout=forever"); err == nil || strings.Contains(err.Error(), "pw-S3cret") {
		t.Errorf("a bad DSN's error must not show its password: %v", err)
	}

	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, []byte("not a certificate"), 0o600)
	cfg = DefaultConfig()
	cfg.CAFile = ca
	if _, err := cfg.options("clickhouse://localhost:9000"); err == nil {
		t.Error("a CA file without a certificate was accepted")
	}
}

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.MaxInsertRows, c.RetryAttempts, c.RetryMin, c.CAFile = 0, 0, 10*time.Second, "/no/such/file"
	err := c.Validate()
	for _, want := range []string{"max-insert-rows", "retry-attempts", "backoff", "ca-file"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to name %s", err, want)
		}
	}
}

// counter reads a counter's value.
func counter(c prometheus.Collector) float64 {
	ch := make(chan prometheus.Metric, 1)
	c.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}

// TestServerBlocksOfOneInsertAreOnePart runs on the real server: a table's
// INSERT of more than blockRows rows goes as several blocks, and the
// server must still make one part of them (so that the insert is stored
// whole or not at all, as one block was) that the batch's token
// deduplicates when the batch is written again. The active parts' block
// numbers count the inserted parts, merged or not.
func TestServerBlocksOfOneInsertAreOnePart(t *testing.T) {
	s, db := openFresh(t, clickhousetest.DSN(t))
	n := 3*blockRows + 17
	b := &schema.Batch{Token: "blocks", Exchanges: benchRows(n)}
	for range 2 {
		if err := s.Write(t.Context(), b); err != nil {
			t.Fatal(err)
		}
	}
	if got := count(t, s, "SELECT count() FROM exchanges"); got != uint64(n) {
		t.Errorf("%d rows stored, want %d", got, n)
	}
	parts := count(t, s, "SELECT toUInt64(sum(max_block_number - min_block_number + 1)) FROM system.parts WHERE database = '"+db+"' AND table = 'exchanges' AND active")
	if parts != 1 {
		t.Errorf("%d parts of one insert in %d-row blocks, want 1", parts, blockRows)
	}
}

// TestWriteOrdersStateAfterRows holds Write to the order a restart relies
// on while the rows' tables are written side by side: the intents before
// any row, the released events only after every row and waiting event of
// the batch, the marks last; and a failed row insert stores neither.
func TestWriteOrdersStateAfterRows(t *testing.T) {
	corpus := loadCorpusBatch(t)
	corpus.Token = "tok"
	corpus.State = schema.State{
		Saved:    []schema.SavedEvent{{EventRef: schema.EventRef{Stream: "t/0", Offset: 9, EventID: "e-9"}, TS: time.Now(), Data: []byte{1}}},
		Released: []schema.EventRef{{Stream: "t/0", Offset: 3, EventID: "e-3"}},
		Streams:  []schema.StreamMark{{Stream: "t/0", Topic: "t", Next: 10, Low: 9}},
	}
	r := &recorder{}
	s := testStore(t, r, prometheus.NewRegistry())
	if err := s.Write(context.Background(), corpus); err != nil {
		t.Fatal(err)
	}
	at := map[string][2]int{} // first and last insert of each table
	for i, c := range r.calls {
		span, ok := at[c.table]
		if !ok {
			span[0] = i
		}
		span[1] = i
		at[c.table] = span
	}
	rows := []string{"exchanges", "exchange_bodies", "tool_annotations", "quarantine", "ingest_waiting"}
	for _, table := range append(rows, "ingest_intents", "ingest_released", "ingest_streams") {
		if _, ok := at[table]; !ok {
			t.Fatalf("no insert into %s: %v", table, r.calls)
		}
	}
	for _, table := range rows {
		if at["ingest_intents"][1] > at[table][0] {
			t.Errorf("%s written before the intents: %v", table, r.calls)
		}
		if at[table][1] > at["ingest_released"][0] {
			t.Errorf("events released before %s was stored: %v", table, r.calls)
		}
	}
	if last := len(r.calls) - 1; at["ingest_streams"] != [2]int{last, last} {
		t.Errorf("the marks are not the last insert: %v", r.calls)
	}

	// The bodies fail for good: the write fails, and nothing of the state
	// after the rows is stored.
	r2 := &recorder{}
	s2 := testStore(t, r2, prometheus.NewRegistry())
	s2.insert = func(ctx context.Context, table string, cols []string, data []any, token string) error {
		if table == "exchange_bodies" {
			return &clickhouse.Exception{Code: 60, Message: "Unknown table"}
		}
		return r2.insert(ctx, table, cols, data, token)
	}
	if err := s2.Write(context.Background(), corpus); err == nil {
		t.Fatal("a write whose bodies failed succeeded")
	}
	for _, c := range r2.calls {
		if c.table == "ingest_released" || c.table == "ingest_streams" {
			t.Errorf("%s stored although the bodies failed: %v", c.table, r2.calls)
		}
	}
}

// TestConfigCompression: LZ4 unless the DSN's compress= says otherwise;
// the HTTP-only methods and unknown words are refused with the DSN masked.
func TestConfigCompression(t *testing.T) {
	cfg := DefaultConfig()
	for query, want := range map[string]*clickhouse.Compression{
		"":                                {Method: clickhouse.CompressionLZ4},
		"?compress=none":                  nil,
		"?compress=false":                 nil,
		"?compress=0":                     nil,
		"?compress=true":                  {Method: clickhouse.CompressionLZ4, Level: 3},
		"?compress=LZ4":                   {Method: clickhouse.CompressionLZ4, Level: 3},
		"?compress=lz4hc":                 {Method: clickhouse.CompressionLZ4HC, Level: 3},
		"?compress=zstd":                  {Method: clickhouse.CompressionZSTD, Level: 3},
		"?compress=zstd&compress_level=7": {Method: clickhouse.CompressionZSTD, Level: 7},
		"?dial_timeout=3s":                {Method: clickhouse.CompressionLZ4},
	} {
		o, err := cfg.options("clickhouse://h:9000/db" + query)
		if err != nil {
			t.Errorf("%q: %v", query, err)
			continue
		}
		if (o.Compression == nil) != (want == nil) || o.Compression != nil && *o.Compression != *want {
			t.Errorf("%q: compression %+v, want %+v", query, o.Compression, want)
		}
	}
	for _, bad := range []string{"gzip", "br", "deflate", "fast"} {
		_, err := cfg.options("clickhouse://u:pw-S3cret@h:9000/db?compress=" + bad)
		if err == nil || !strings.Contains(err.Error(), "compress="+bad) || strings.Contains(err.Error(), "pw-S3cret") {
			t.Errorf("compress=%s: %v", bad, err)
		}
	}
}
