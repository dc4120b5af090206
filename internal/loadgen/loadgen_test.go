package loadgen_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/pipeline"
)

func digest(t *testing.T, cfg loadgen.Config) ([32]byte, int) {
	t.Helper()
	g, err := loadgen.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n := 0
	for key, line := range g.Lines() {
		h.Write(key)
		h.Write(line)
		h.Write([]byte{'\n'})
		n++
	}
	var sum [32]byte
	copy(sum[:], h.Sum(nil))
	return sum, n
}

func TestDeterministic(t *testing.T) {
	cfg := loadgen.Config{Seed: 7, Calls: 3000, PoisonShare: 0.01, SecretShare: 0.1, BadUTF8Share: 0.01}
	a, na := digest(t, cfg)
	b, nb := digest(t, cfg)
	if a != b || na != nb {
		t.Fatalf("same seed, different lines: %d vs %d lines", na, nb)
	}
	cfg.Seed = 8
	if c, _ := digest(t, cfg); c == a {
		t.Fatal("another seed gave the same lines")
	}
}

// line is the part of a generated line the shape test reads.
type line struct {
	EventID    string `json:"event_id"`
	TS         string `json:"ts"`
	Kind       string `json:"kind"`
	Source     string `json:"source"`
	ExchangeID string `json:"exchange_id"`
	Session    string `json:"session_id"`
	Stream     *bool  `json:"stream.complete"`
	Body       string `json:"response_body"`
}

// TestShape checks the shares the issue names against what the generator
// writes, read back from the lines themselves.
func TestShape(t *testing.T) {
	const calls = 20_000
	g, err := loadgen.New(loadgen.Config{Seed: 3, Calls: calls})
	if err != nil {
		t.Fatal(err)
	}
	var (
		n, exch, split, client, sse, redelivered int
		seen                                     = map[string]bool{}
		reqAt                                    = map[string]time.Time{}
		delays                                   []time.Duration
		first                                    time.Time
		starts                                   []time.Time
		minBody, maxBody                         = 1 << 30, 0
		keyed                                    = true
	)
	for key, raw := range g.Lines() {
		n++
		var l line
		if err := json.Unmarshal(raw, &l); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		if string(key) != l.Session {
			keyed = false
		}
		if seen[l.EventID] {
			redelivered++
			continue
		}
		seen[l.EventID] = true
		ts, err := time.Parse(time.RFC3339Nano, l.TS)
		if err != nil {
			t.Fatal(err)
		}
		if first.IsZero() || ts.Before(first) {
			first = ts
		}
		if l.Kind != "response" && l.Source == "gateway" {
			starts = append(starts, ts)
		}
		if l.Stream != nil {
			sse++
		}
		if strings.Contains(l.Body, `"isError":false`) {
			minBody, maxBody = min(minBody, len(l.Body)), max(maxBody, len(l.Body))
		}
		switch {
		case l.Source == "client":
			client++
		case l.Kind == "exchange":
			exch++
		case l.Kind == "request":
			split++
			reqAt[l.ExchangeID+l.Session+l.EventID[:len(l.EventID)-1]] = ts
		case l.Kind == "response":
			if at, ok := reqAt[l.ExchangeID+l.Session+l.EventID[:len(l.EventID)-1]]; ok {
				delays = append(delays, ts.Sub(at))
			}
		}
	}
	tr := g.Truth()
	calls2 := float64(tr.Exchanges)
	share := func(name string, got int, of, want, tol float64) {
		t.Helper()
		if f := float64(got) / of; f < want-tol || f > want+tol {
			t.Errorf("%s: %.3f, want %.2f±%.2f", name, f, want, tol)
		}
	}
	share("exchange records", exch, calls2, 0.35, 0.02)
	share("split calls", split, calls2, 0.65, 0.02)
	share("client views", client, calls2, 0.10, 0.01)
	share("SSE responses", sse, calls2*1.1, 0.15, 0.03)
	share("redelivered lines", redelivered, float64(n), 0.02, 0.005)
	if tr.Lines != n || tr.Redelivered != redelivered {
		t.Errorf("truth counts %d lines, %d redelivered; read %d, %d", tr.Lines, tr.Redelivered, n, redelivered)
	}
	if !keyed {
		t.Error("a line's key is not its session")
	}
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	in10s := sort.Search(len(starts), func(i int) bool { return starts[i].Sub(first) >= 10*time.Second })
	if rate := float64(in10s) / 10; rate < 900 || rate > 1200 {
		t.Errorf("%.0f calls/s of event time, want about 1,000", rate)
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	if len(delays) < 1000 || delays[0] < 10*time.Millisecond || delays[len(delays)-1] > 31*time.Second ||
		delays[len(delays)/2] > 2*time.Second || delays[len(delays)*99/100] < 10*time.Second {
		t.Errorf("response delays min %v p50 %v p99 %v max %v, want 10ms..30s log-uniform",
			delays[0], delays[len(delays)/2], delays[len(delays)*99/100], delays[len(delays)-1])
	}
	if minBody < 150 || maxBody < 12<<10 || maxBody > 20<<10 {
		t.Errorf("response bodies %d..%d bytes, want 0.2..16 KiB", minBody, maxBody)
	}
}

// record is the part of an output exchange record the truth test checks.
type record struct {
	ExchangeID      string   `json:"exchange_id"`
	RequestEventID  string   `json:"request_event_id"`
	Outcome         string   `json:"outcome"`
	RetryOf         string   `json:"retry_of"`
	Attempt         int      `json:"attempt"`
	Sources         []string `json:"sources"`
	ClientDisagrees bool     `json:"client_disagrees"`
}

// TestPipelineMatchesTruth runs the real engine (file source, every
// stage, stdout sink) over a load with poison lines, invalid UTF-8 and
// secrets, and counts the exchanges lost, doubled and misclassified
// against the generator's ground truth.
func TestPipelineMatchesTruth(t *testing.T) {
	cfg := loadgen.Config{Seed: 11, Calls: 8000, KeepTruth: true, PoisonShare: 0.002, BadUTF8Share: 0.01, SecretShare: 0.05}
	matchTruth(t, cfg, pipeline.DefaultConfig())
}

// TestPipelineMatchesTruthEnv checks the shape MCPLENS_TRUTH_LOAD gives in
// cmd/loadgen's flags (skipped without it), with the pair window the shape
// needs and MCPLENS_TRUTH_MERGE_WINDOW as the merge window if set: for
// sweeps over shapes the fixed tests do not hold.
func TestPipelineMatchesTruthEnv(t *testing.T) {
	load := os.Getenv("MCPLENS_TRUTH_LOAD")
	if load == "" {
		t.Skip("MCPLENS_TRUTH_LOAD not set")
	}
	t.Setenv("MCPLENS_BENCH_LOAD", load)
	cfg, err := loadgen.BenchConfig(11, 1)
	if err != nil {
		t.Fatal(err)
	}
	cfg.KeepTruth = true
	ec := pipeline.DefaultConfig()
	ec.Correlator.PairWindow = cfg.PairWindow(ec.Correlator.PairWindow)
	if w := os.Getenv("MCPLENS_TRUTH_MERGE_WINDOW"); w != "" {
		if ec.Correlator.MergeWindow, err = time.ParseDuration(w); err != nil {
			t.Fatal(err)
		}
	}
	matchTruth(t, cfg, ec)
}

// matchTruth generates cfg's load, runs it through the engine configured
// by ec, and reports every call lost, doubled or wrong against the truth.
func matchTruth(t *testing.T, cfg loadgen.Config, ec pipeline.Config) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "load.ndjson")
	truth, err := loadgen.WriteFile(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src, err := pipeline.NewFileSource(path, pipeline.FileSourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var out, quarantine bytes.Buffer
	e, err := pipeline.New(ec, pipeline.Deps{Source: src, Sink: pipeline.NewStdoutSink(&out, &quarantine), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}

	for _, s := range truth.Secrets {
		if bytes.Contains(out.Bytes(), []byte(s)) || bytes.Contains(quarantine.Bytes(), []byte(s)) {
			t.Fatalf("secret %q reached the output", s)
		}
	}
	if q := bytes.Count(quarantine.Bytes(), []byte(`{"quarantine":`)); q != truth.Poison {
		t.Errorf("%d lines quarantined, want the %d poison lines", q, truth.Poison)
	}

	var examples []string
	byReq := map[string][]record{}
	idOf := map[string]string{} // request event id -> exchange id
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	rows, extra := 0, 0
	want := map[string]bool{}
	for _, e := range truth.Calls {
		want[e.RequestEventID] = true
	}
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows++
		if !want[r.RequestEventID] {
			extra++
			if len(examples) < 40 {
				examples = append(examples, "extra record: "+sc.Text()[:min(300, len(sc.Text()))])
			}
		}
		byReq[r.RequestEventID] = append(byReq[r.RequestEventID], r)
		idOf[r.RequestEventID] = r.ExchangeID
	}
	var lost, doubled, wrongOutcome, wrongRetry, wrongSources, wrongID, wrongDisagree int
	note := func(format string, e loadgen.Expect, got any) {
		if len(examples) < 40 && (format != "sources" || len(examples) < 3) {
			examples = append(examples, format+" "+e.RequestEventID+": "+strings.TrimSpace(toJSON(got))+" want "+toJSON(e))
		}
	}
	for _, e := range truth.Calls {
		got := byReq[e.RequestEventID]
		switch {
		case len(got) == 0:
			lost++
			note("lost", e, nil)
			continue
		case len(got) > 1:
			doubled++
			note("doubled", e, got)
		}
		r := got[0]
		if r.Outcome != string(e.Outcome) {
			wrongOutcome++
			note("outcome", e, r)
		}
		if e.ExchangeID != "" && r.ExchangeID != e.ExchangeID {
			wrongID++
			note("exchange id", e, r)
		}
		wantRetry := ""
		if e.RetryOf != "" {
			wantRetry = idOf[e.RetryOf]
		}
		if r.RetryOf != wantRetry || (e.RetryOf != "" && r.Attempt != e.Attempt) {
			wrongRetry++
			note("retry", e, r)
		}
		if strings.Join(r.Sources, ",") != strings.Join(e.Sources, ",") {
			wrongSources++
			note("sources", e, r)
		}
		if r.ClientDisagrees != e.ClientDisagrees {
			wrongDisagree++
			note("client_disagrees", e, r)
		}
	}
	if rows != len(truth.Calls) || extra+lost+doubled+wrongOutcome+wrongRetry+wrongSources+wrongID+wrongDisagree > 0 {
		t.Errorf("%d calls, %d records: extra %d, lost %d, doubled %d, wrong outcome %d, exchange id %d, retry %d, sources %d, client_disagrees %d\n%s",
			len(truth.Calls), rows, extra, lost, doubled, wrongOutcome, wrongID, wrongRetry, wrongSources, wrongDisagree, strings.Join(examples, "\n"))
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestWriteFileMatchesLines(t *testing.T) {
	cfg := loadgen.Config{Seed: 5, Calls: 500}
	path := filepath.Join(t.TempDir(), "x.ndjson")
	tr, err := loadgen.WriteFile(path, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != tr.Lines {
		t.Fatalf("%d lines in the file, truth says %d", n, tr.Lines)
	}
}

// TestBodiesLongerThanTheFiller: a shape whose bodies may pass the 64 KiB
// of filler text every other shape uses gets a longer filler (it panicked).
func TestBodiesLongerThanTheFiller(t *testing.T) {
	g, err := loadgen.New(loadgen.Config{Seed: 3, Calls: 300, MinBody: 60 << 10, MaxBody: 200 << 10})
	if err != nil {
		t.Fatal(err)
	}
	longest := 0
	for _, line := range g.Lines() {
		longest = max(longest, len(line))
	}
	if longest < 100<<10 {
		t.Errorf("longest line %d bytes, want bodies up to 200 KiB", longest)
	}
}

// TestBenchConfig: the long benchmarks take their shape from
// MCPLENS_BENCH_LOAD in cmd/loadgen's flags, their length from minutes at
// that rate, and refuse what they cannot run.
func TestBenchConfig(t *testing.T) {
	t.Setenv("MCPLENS_BENCH_LOAD", "")
	c, err := loadgen.BenchConfig(9, 2)
	if err != nil {
		t.Fatal(err)
	}
	d := loadgen.DefaultConfig()
	if c.Seed != 9 || c.Calls != 120_000 || c.Rate != d.Rate || c.Sessions != d.Sessions || c.MaxDelay != d.MaxDelay {
		t.Errorf("default shape: %+v", c)
	}

	t.Setenv("MCPLENS_BENCH_LOAD", " -rate 3000 -sessions 50000\t-max-delay 2m -no-response 0.2 -secrets 0.05 ")
	if c, err = loadgen.BenchConfig(9, 0.5); err != nil {
		t.Fatal(err)
	}
	if c.Calls != 90_000 || c.Rate != 3000 || c.Sessions != 50_000 || c.MaxDelay != 2*time.Minute ||
		c.NoResponseShare != 0.2 || c.SecretShare != 0.05 || c.Clients != d.Clients {
		t.Errorf("shaped: %+v", c)
	}

	t.Setenv("MCPLENS_BENCH_LOAD", "-calls 5 -rate 3000")
	if c, err = loadgen.BenchConfig(9, 31); err != nil || c.Calls != 5 {
		t.Errorf("-calls wins over minutes: %d, %v", c.Calls, err)
	}

	for _, bad := range []string{"-bogus 1", "rate=3000", "-rate fast", "-min-delay 2s -max-delay 1s", "-sse-share 2", "-max-body 20000000"} {
		t.Setenv("MCPLENS_BENCH_LOAD", bad)
		if _, err := loadgen.BenchConfig(9, 1); err == nil {
			t.Errorf("MCPLENS_BENCH_LOAD=%q: no error", bad)
		}
	}
}

// TestPairWindow: the default shape fits the ingester's default pair
// window; a shape whose responses come later gets a window that covers
// them with the clocks' skew and the jitter.
func TestPairWindow(t *testing.T) {
	if got := (loadgen.Config{}).PairWindow(time.Minute); got != time.Minute {
		t.Errorf("default shape: pair window %v, want the default 1m", got)
	}
	c := loadgen.Config{MaxDelay: 2 * time.Minute, ClientSkew: 3 * time.Second, Jitter: 100 * time.Millisecond}
	if got, want := c.PairWindow(time.Minute), 2*time.Minute+6*time.Second+100*time.Millisecond+5*time.Second; got != want {
		t.Errorf("responses up to 2m late: pair window %v, want %v", got, want)
	}
}

// TestPipelineMatchesTruthGivingUp: clients give up on 30% of the slow
// calls and send them again while the first attempt still runs. The
// re-send is answered and released first; it must still name the attempt
// it repeats (retry_of, attempt 2), whether that attempt is still waiting
// for its answer or already answered and waiting for its merge window.
func TestPipelineMatchesTruthGivingUp(t *testing.T) {
	cfg := loadgen.Config{Seed: 13, Calls: 8000, KeepTruth: true, GiveUpShare: 0.3}
	resends := 0
	truth, err := loadgen.WriteFile(filepath.Join(t.TempDir(), "count.ndjson"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range truth.Calls {
		if e.RetryOf != "" {
			resends++
		}
	}
	if resends < 300 {
		t.Fatalf("%d re-sends in the load, want the given-up calls' on top of the 429/503 ones", resends)
	}
	matchTruth(t, cfg, pipeline.DefaultConfig())
}

// TestCheckRecords: a benchmark's run may leave up to ApartShare of the
// calls' client views apart (reported), never lose a record.
func TestCheckRecords(t *testing.T) {
	tr := loadgen.Truth{Exchanges: 10_000}
	for _, c := range []struct {
		records, apart int
		fails          bool
	}{
		{10_000, 0, false},
		{10_051, 51, false},
		{10_100, 100, false},
		{10_101, 101, true},
		{9_999, -1, true},
	} {
		apart, err := tr.CheckRecords(c.records)
		if apart != c.apart || (err != nil) != c.fails {
			t.Errorf("%d records: apart %d, err %v; want %d, fails %v", c.records, apart, err, c.apart, c.fails)
		}
	}
}

// TestDated: -start pins the first call's time; EndNow moves the same
// lines so that the last call is sent about now, where a store's TTL
// keeps them.
func TestDated(t *testing.T) {
	t.Setenv("MCPLENS_BENCH_LOAD", "-start 2027-01-05T08:00:00+01:00")
	c, err := loadgen.BenchConfig(3, 1)
	if err != nil || !c.Start.Equal(time.Date(2027, 1, 5, 7, 0, 0, 0, time.UTC)) {
		t.Errorf("-start: %v, %v", c.Start, err)
	}
	t.Setenv("MCPLENS_BENCH_LOAD", "-start yesterday")
	if _, err := loadgen.BenchConfig(3, 1); err == nil {
		t.Error("-start yesterday: no error")
	}

	read := func(cfg loadgen.Config) (ids []string, first, last time.Time) {
		g, err := loadgen.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range g.Lines() {
			var l line
			if json.Unmarshal(b, &l) != nil || l.TS == "" {
				continue // poison
			}
			ts, err := time.Parse(time.RFC3339Nano, l.TS)
			if err != nil {
				t.Fatalf("ts %q: %v", l.TS, err)
			}
			if first.IsZero() || ts.Before(first) {
				first = ts
			}
			if ts.After(last) {
				last = ts
			}
			ids = append(ids, l.EventID)
		}
		return ids, first, last
	}
	cfg := loadgen.Config{Seed: 5, Calls: 2000, Rate: 100}
	fixed, first, _ := read(cfg)
	if d := first.Sub(loadgen.DefaultStart); d < -2*time.Second || d > 2*time.Second {
		t.Errorf("default: first line at %v, want about %v", first, loadgen.DefaultStart)
	}
	cfg.EndNow = true
	now := time.Now()
	moved, first, last := read(cfg)
	if !slices.Equal(moved, fixed) {
		t.Errorf("EndNow changed the lines: %d event ids against %d, or another order", len(moved), len(fixed))
	}
	// 2,000 calls at 100 a second: the first is sent 20 s ago, the last
	// now; its answer and the re-sends of 429s and 503s come within a
	// minute or so after.
	if want := now.Add(-20 * time.Second); first.Before(want.Add(-3*time.Second)) || first.After(want.Add(3*time.Second)) {
		t.Errorf("EndNow: first line at %v, want about %v", first, want)
	}
	if last.Before(now) || last.After(now.Add(2*time.Minute)) {
		t.Errorf("EndNow: last line at %v, want within two minutes after %v", last, now)
	}
}
