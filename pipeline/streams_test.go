package pipeline

import (
	"bytes"
	"context"
	"hash/fnv"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/internal/loadgen"
	"github.com/mcplens/mcplens/pipeline/pipelinetest"
	"github.com/mcplens/mcplens/schema"
)

// partitioned places a corpus on n streams by key, as a hashing producer
// does, and returns each stream's messages in offset order.
func partitioned(c pipelinetest.Corpus, n int) [][]Message {
	out := make([][]Message, n)
	for i, l := range c.Lines {
		h := fnv.New32a()
		h.Write(c.Keys[i])
		p := int(h.Sum32() % uint32(n))
		out[p] = append(out[p], Message{Value: l, Pos: Position{
			Stream: "mcp/" + string(rune('0'+p)), Topic: "mcp", Partition: p, Offset: int64(len(out[p])),
		}})
	}
	return out
}

func runMessages(t *testing.T, msgs []Message) []schema.Exchange {
	t.Helper()
	return runSeeded(t, msgs, nil)
}

// runSeeded is runMessages with the engine seeded with stored records
// first, as a restart is from the store (none when seed is nil).
func runSeeded(t *testing.T, msgs []Message, seed []schema.Exchange) []schema.Exchange {
	t.Helper()
	src := &sliceSource{msgs: msgs, committed: map[string]int64{}}
	sink := &memSink{}
	e, err := New(testConfig(), Deps{Source: src, Sink: sink, Logger: zerolog.Nop(), Now: func() time.Time { return time.Unix(0, 0).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	if seed != nil {
		e.Seed(seed, nil)
	}
	if err := e.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	return sink.exchanges
}

// checkExactlyOnce fails unless recs hold each wanted exchange once, paired
// with its own response, and nothing else.
func checkExactlyOnce(t *testing.T, recs []schema.Exchange, wants []pipelinetest.Want) {
	t.Helper()
	byReq := map[string]int{}
	for _, r := range recs {
		byReq[r.RequestEventID]++
	}
	noResponse, doubled, lost, wrong := 0, 0, 0, 0
	for _, r := range recs {
		if r.Outcome == classify.NoResponse {
			noResponse++
		}
	}
	want := map[string]pipelinetest.Want{}
	for _, w := range wants {
		want[w.RequestEventID] = w
		switch byReq[w.RequestEventID] {
		case 0:
			lost++
		case 1:
		default:
			doubled++
		}
	}
	for _, r := range recs {
		if w, ok := want[r.RequestEventID]; !ok || w.ResponseEventID != r.ResponseEventID {
			wrong++
		}
	}
	if noResponse+doubled+lost+wrong > 0 || len(recs) != len(wants) {
		t.Errorf("%d records for %d exchanges: %d NO_RESPONSE, %d doubled, %d lost, %d not paired as logged",
			len(recs), len(wants), noResponse, doubled, lost, wrong)
	}
}

// A backlog on three partitions read at any relative speed gives the same
// records as the same events read from one file: each partition keeps its
// own event time, so the partition read first never expires the requests
// of the others (issue 12, case 1, without a broker).
func TestBacklogAcrossStreams(t *testing.T) {
	corpus, wants := pipelinetest.Production(pipelinetest.Shape{Exchanges: 20_000, Seed: 1})
	var file []Message
	for i, l := range corpus.Lines {
		file = append(file, Message{Value: l, Pos: Position{Stream: "all.ndjson", Offset: int64(i + 1)}})
	}
	fromFile := runMessages(t, file)
	checkExactlyOnce(t, fromFile, wants)

	parts := partitioned(corpus, 3)
	var oneAfterAnother, roundRobin []Message
	for _, p := range parts {
		oneAfterAnother = append(oneAfterAnother, p...)
	}
	for i := 0; ; i++ {
		more := false
		for _, p := range parts {
			// partition p is read (p+1) times as fast as partition 0
			for j := i * 10; j < len(p) && j < (i+1)*10; j++ {
				roundRobin = append(roundRobin, p[j])
				more = true
			}
		}
		if !more {
			break
		}
	}
	for name, msgs := range map[string][]Message{"one partition after another": oneAfterAnother, "interleaved": roundRobin} {
		t.Run(name, func(t *testing.T) {
			recs := runMessages(t, msgs)
			checkExactlyOnce(t, recs, wants)
			same := map[string]schema.Exchange{}
			for _, r := range fromFile {
				same[r.RequestEventID] = r
			}
			for _, r := range recs {
				f := same[r.RequestEventID]
				if f.ExchangeID != r.ExchangeID || f.Outcome != r.Outcome || f.DurationMS != r.DurationMS || f.TS != r.TS {
					t.Fatalf("record differs from the file run:\n got %+v\nwant %+v", r, f)
				}
			}
		})
	}
}

// TestUnkeyedPartitionsMerge: sparse traffic (50 calls/s) on three
// partitions by no key (a session-less client's lines, or a producer
// without keys), read a hundred lines at a time from each partition in
// turn, as a consumer catching up reads a fetch at a time: each fetch
// spans seconds of event time. The halves of an exchange and its gateway
// and client views land on different partitions, each partition seconds
// ahead of or behind the others. Nothing may be lost or expired without
// its response, and no client view left apart from its gateway view but
// in the first seconds (a partition not yet read holds nothing back) and
// at the end of input (the last lines run further apart than Lateness).
// Before, a partition read ahead closed its exchanges' merge windows by
// its own event time: 191 of about 520 client views stayed apart there.
func TestUnkeyedPartitionsMerge(t *testing.T) {
	g, err := loadgen.New(loadgen.Config{Seed: 5, Calls: 5_000, Rate: 50, KeepTruth: true})
	if err != nil {
		t.Fatal(err)
	}
	recs := runMessages(t, unkeyed(g, 3, func(int) int { return 100 }))
	r := countTruth(t, g.Truth(), recs)
	if r.Lost+r.Wrong > 0 || r.Extra != r.Apart || r.ApartBeforeEnd > 0 {
		t.Errorf("%+v: want nothing lost or wrong, and no client view apart between the first 10 s and the end of input", r)
	}
}

// TestUnkeyedPartitionsAtDifferentPaces: the same lines on three
// partitions by no key, the second read twice and the third three times
// as fast as the first, as a consumer catching up drifts: by the end the
// first is tens of seconds of event time behind. No request may expire
// before its response is read from a slower partition: before, 13 of
// 20,902 calls came out as NO_RESPONSE and an orphan response.
func TestUnkeyedPartitionsAtDifferentPaces(t *testing.T) {
	g, err := loadgen.New(loadgen.Config{Seed: 5, Calls: 20_000, KeepTruth: true})
	if err != nil {
		t.Fatal(err)
	}
	recs := runMessages(t, unkeyed(g, 3, func(p int) int { return 100 * (p + 1) }))
	if r := countTruth(t, g.Truth(), recs); r.Lost+r.Wrong > 0 || r.Extra != r.Apart {
		t.Errorf("%+v: want nothing lost or wrong, and no record but client views apart", r)
	}
}

// unkeyed places g's lines on n partitions at random, as a producer
// without keys does, and reads them fetch(p) lines at a time from each
// partition p in turn.
func unkeyed(g *loadgen.Generator, n int, fetch func(p int) int) []Message {
	parts := scatter(linesOf(g), n, rand.New(rand.NewPCG(1, 2)))
	var msgs []Message
	for i := 0; len(msgs) < g.Truth().Lines; i++ {
		for p, part := range parts {
			f := fetch(p)
			msgs = append(msgs, part[min(i*f, len(part)):min((i+1)*f, len(part))]...)
		}
	}
	return msgs
}

// linesOf returns g's lines, each a copy (Lines reuses its buffers).
func linesOf(g *loadgen.Generator) [][]byte {
	var lines [][]byte
	for _, line := range g.Lines() {
		lines = append(lines, bytes.Clone(line))
	}
	return lines
}

// scatter places lines on n partitions of topic "mcp" at random, by rng,
// as a producer without keys does.
func scatter(lines [][]byte, n int, rng *rand.Rand) [][]Message {
	parts := make([][]Message, n)
	for _, line := range lines {
		p := rng.IntN(n)
		parts[p] = append(parts[p], Message{Value: line, Pos: Position{
			Stream: "mcp/" + strconv.Itoa(p), Topic: "mcp", Partition: p, Offset: int64(len(parts[p])),
		}})
	}
	return parts
}

// countTruth counts recs against the truth and logs the tally.
func countTruth(t *testing.T, truth *loadgen.Truth, recs []schema.Exchange) loadgen.Tally {
	t.Helper()
	c := truth.Tally(recs, loadgen.DefaultStart)
	t.Logf("%d records for %d calls: %+v", len(recs), len(truth.Calls), c)
	return c
}

// TestMergeTimeWaitsForTheSlowestFlowingStream: a stream's merge windows
// close by the slowest stream that still flows, held back by at most
// Lateness; a stream without a line for the idle advance holds nothing
// back, and one stream alone keeps its own time.
func TestMergeTimeWaitsForTheSlowestFlowingStream(t *testing.T) {
	wall := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	c := newCorrelator(CorrelatorConfig{Lateness: 5 * time.Second})
	c.idle = 5 * time.Second
	c.now = func() time.Time { return wall }
	at := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	line := func(stream string, d time.Duration) {
		c.Add(&schema.Event{TS: at.Add(d), Kind: schema.KindRequest, Source: "gateway", Observer: "gw", EventID: stream + d.String()},
			Position{Stream: stream})
	}
	mt := func(stream string) time.Duration { return c.mergeTime(c.streams[stream], c.slowest()).Sub(at) }

	line("a", 10*time.Second)
	if got := mt("a"); got != 10*time.Second {
		t.Errorf("one stream: %v, want its own 10s", got)
	}
	line("b", 8*time.Second)
	line("c", 3*time.Second)
	for s, want := range map[string]time.Duration{"a": 5 * time.Second, "b": 3 * time.Second, "c": 3 * time.Second} {
		if got := mt(s); got != want {
			t.Errorf("stream %s (slowest at 3s): %v, want %v", s, got, want)
		}
	}
	wall = wall.Add(4 * time.Second)
	line("a", 11*time.Second)
	line("b", 9*time.Second)
	wall = wall.Add(2 * time.Second) // c has read nothing for 6 s
	for s, want := range map[string]time.Duration{"a": 9 * time.Second, "b": 9 * time.Second, "c": 3 * time.Second} {
		if got := mt(s); got != want {
			t.Errorf("stream %s (c idle): %v, want %v", s, got, want)
		}
	}
	c.idle = 0 // no idle advance: every stream by its own time
	if got := mt("a"); got != 11*time.Second {
		t.Errorf("without idle advance: %v, want 11s", got)
	}
}
