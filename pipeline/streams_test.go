package pipeline

import (
	"context"
	"hash/fnv"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/classify"
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
	src := &sliceSource{msgs: msgs, committed: map[string]int64{}}
	sink := &memSink{}
	e, err := New(testConfig(), Deps{Source: src, Sink: sink, Logger: zerolog.Nop(), Now: func() time.Time { return time.Unix(0, 0).UTC() }})
	if err != nil {
		t.Fatal(err)
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
