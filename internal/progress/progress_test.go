package progress

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline"
)

type fileAt struct{ read, size int64 }

func (f *fileAt) BytesRead() (int64, int64) { return f.read, f.size }

type lagAt struct{ lag int64 }

func (l *lagAt) Lag() (int64, int) { return l.lag, 3 }

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLinesOfAFile(t *testing.T) {
	c := &clock{t: time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)}
	st := pipeline.Stats{Exchanges: map[classify.Outcome]int64{}}
	src := &fileAt{size: 800 << 20}
	r := New(Config{Mode: Never, Interval: time.Second}, Deps{Out: &bytes.Buffer{}, Stats: func() pipeline.Stats { return st }, Source: src, Now: c.now})

	// 10 s in: 200 MiB and 250,000 events done; 600 MiB left at 20 MiB/s.
	c.t = c.t.Add(10 * time.Second)
	src.read = 200 << 20
	st.Accepted, st.Events = 250_000, 250_000
	st.Exchanges[classify.ToolSuccess], st.Exchanges[classify.JSONRPCError] = 120_000, 4_321
	st.Exchanges[classify.HTTPError], st.Exchanges[classify.NoResponse], st.Exchanges[classify.StreamIncomplete] = 10, 3, 1
	got := r.Line()
	want := "progress: 200.0 MiB of 800.0 MiB (25%), 250,000 events, 25,000 events/s, 124,335 exchanges " +
		"(TOOL_SUCCESS 120,000, JSONRPC_ERROR 4,321, HTTP_ERROR 10, NO_RESPONSE 3, 1 more), ETA 30s"
	if got != want {
		t.Errorf("line:\n got %s\nwant %s", got, want)
	}

	// The rate is over the last interval: 5 s later at 100 MiB/s.
	c.t = c.t.Add(5 * time.Second)
	src.read += 500 << 20
	st.Events += 50_000
	if got := r.Line(); !strings.Contains(got, "700.0 MiB of 800.0 MiB (88%), 300,000 events, 10,000 events/s,") || !strings.HasSuffix(got, "ETA 1s") {
		t.Errorf("second line: %s", got)
	}

	st.Duplicates, st.Quarantined, st.Evicted, st.Stored = 7, 2, 1, 124_335
	st.Events = st.Accepted + st.Duplicates + st.Quarantined
	c.t = c.t.Add(1500 * time.Millisecond)
	want = "ingest done: 250,009 events (250,000 accepted, 7 duplicates, 2 quarantined), 124,335 exchanges " +
		"(TOOL_SUCCESS 120,000, JSONRPC_ERROR 4,321, HTTP_ERROR 10, NO_RESPONSE 3, STREAM_INCOMPLETE 1), " +
		"124,335 stored, 1 evicted, in 16.5s (15,152 events/s)"
	if got := r.Summary(); got != want {
		t.Errorf("summary:\n got %s\nwant %s", got, want)
	}
}

func TestLineOfKafka(t *testing.T) {
	c := &clock{t: time.Unix(0, 0)}
	st := pipeline.Stats{Events: 0, Exchanges: map[classify.Outcome]int64{}}
	r := New(Config{Mode: Never, Interval: time.Second}, Deps{Stats: func() pipeline.Stats { return st }, Source: &lagAt{lag: 12_345}, Now: c.now})
	c.t = c.t.Add(2 * time.Second)
	st.Events = 1000
	if got, want := r.Line(), "progress: 1,000 events, 500 events/s, lag 12,345 messages (3 partitions), 0 exchanges"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestModes(t *testing.T) {
	stats := func() pipeline.Stats { return pipeline.Stats{} }
	for _, c := range []struct {
		mode     string
		periodic bool
	}{{Auto, false}, {Always, true}, {Never, false}} {
		var out bytes.Buffer // Run writes from this goroutine
		r := New(Config{Mode: c.mode, Interval: 5 * time.Millisecond}, Deps{Out: &out, Stats: stats})
		if r.Periodic() != c.periodic {
			t.Errorf("mode %s on a buffer: periodic %v", c.mode, r.Periodic())
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Millisecond)
		r.Run(ctx)
		cancel()
		if lines := strings.Count(out.String(), "progress: "); (lines > 0) != c.periodic {
			t.Errorf("mode %s: %d progress lines", c.mode, lines)
		}
	}
}

func TestValidate(t *testing.T) {
	c := Config{Mode: "sometimes", Interval: 0}
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "want auto, always or never") || !strings.Contains(err.Error(), "such as 5s") {
		t.Errorf("Validate: %v", err)
	}
}

func TestFormats(t *testing.T) {
	f := func(got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	f(count(0), "0")
	f(count(999), "999")
	f(count(1000), "1,000")
	f(count(-1234567), "-1,234,567")
	f(bytesHuman(512), "512 B")
	f(bytesHuman(1536), "1.5 KiB")
	f(bytesHuman(3<<30), "3.0 GiB")
	f(roundDuration(1234567*time.Microsecond).String(), "1.2s")
	f(roundDuration(112*time.Second+300*time.Millisecond).String(), "1m52s")
}
