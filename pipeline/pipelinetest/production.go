package pipelinetest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Shape is the timing of a production-shaped corpus. The zero value of a
// field means its default.
type Shape struct {
	// Exchanges is how many exchanges the corpus holds [10,000].
	Exchanges int
	// Span is the event time the requests spread over [11 minutes].
	Span time.Duration
	// MinDelay and MaxDelay bound how long after its request a response is
	// logged [10ms, 30s]; delays are log-uniform, so most are short and a
	// tail is long.
	MinDelay, MaxDelay time.Duration
	// Sessions is how many sessions the exchanges spread over [300].
	Sessions int
	// SplitShare is the share of exchanges logged as a request and a
	// response event; the others are one exchange event [0.8].
	SplitShare float64
	// Seed makes the corpus reproducible.
	Seed uint64
	// Start is the event time of the first request [2026-11-02T10:00Z].
	Start time.Time
	// IDPrefix starts every event and exchange id, so that two corpora
	// sent to one topic do not share ids [none].
	IDPrefix string
}

func (s *Shape) defaults() {
	if s.Exchanges <= 0 {
		s.Exchanges = 10_000
	}
	if s.Span <= 0 {
		s.Span = 11 * time.Minute
	}
	if s.MinDelay <= 0 {
		s.MinDelay = 10 * time.Millisecond
	}
	if s.MaxDelay <= 0 {
		s.MaxDelay = 30 * time.Second
	}
	if s.Sessions <= 0 {
		s.Sessions = 300
	}
	if s.SplitShare == 0 {
		s.SplitShare = 0.8
	}
	if s.Start.IsZero() {
		s.Start = time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	}
}

// Want is what a corpus must yield for one exchange: the request and
// response event ids it pairs (the same id for an exchange event) and, for
// an exchange event, its exchange id (a split exchange's id is derived by
// the pipeline).
type Want struct {
	ExchangeID, RequestEventID, ResponseEventID string
}

// Production returns a corpus shaped like a gateway's log: responses
// MinDelay to MaxDelay after their requests, every line in observation
// order (the order of its own event time, as a logger writes it), keyed by
// session. Split exchanges carry no exchange id, so they pair by session
// and JSON-RPC id (ids repeat across sessions); every seventh tool call
// answers isError. Corpus.IDs lists Want's exchange ids, "" for split ones.
func Production(shape Shape) (Corpus, []Want) {
	shape.defaults()
	rng := rand.New(rand.NewPCG(shape.Seed, 0x5eed))
	type line struct {
		at   time.Time
		seq  int
		key  []byte
		body []byte
	}
	var lines []line
	var wants []Want
	ratio := float64(shape.MaxDelay) / float64(shape.MinDelay)
	nextID := make([]int, shape.Sessions)
	for i := range shape.Exchanges {
		at := shape.Start.Add(time.Duration(float64(shape.Span) * float64(i) / float64(shape.Exchanges)))
		delay := time.Duration(float64(shape.MinDelay) * math.Pow(ratio, rng.Float64()))
		s := rng.IntN(shape.Sessions)
		sess := fmt.Sprintf("sess-%04d", s)
		nextID[s]++
		id := nextID[s]
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup","arguments":{"key":"k%d"}}}`, id, i)
		resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"value %d"}],"isError":%v}}`, id, i, i%7 == 0)
		base := map[string]any{"source": "gateway", "observer": "gw-1", "server": "kv", "session_id": sess,
			"http.request_headers": map[string]string{"content-type": "application/json", "mcp-session-id": sess}}
		mk := func(kind, eventID string, at time.Time, extra map[string]any) []byte {
			return marshalLine(map[string]any{"event_id": eventID, "ts": at.Format(time.RFC3339Nano), "kind": kind}, base, extra)
		}
		respFields := map[string]any{"http.status": 200, "response_body": resp,
			"http.response_headers": map[string]string{"content-type": "application/json"}}
		qid, rid := fmt.Sprintf("%sq-%07d", shape.IDPrefix, i), fmt.Sprintf("%sr-%07d", shape.IDPrefix, i)
		if rng.Float64() >= shape.SplitShare {
			xid := fmt.Sprintf("%sxe-%07d", shape.IDPrefix, i)
			f := map[string]any{"exchange_id": xid, "http.method": "POST", "request_body": req, "duration_ms": float64(delay) / 1e6}
			for k, v := range respFields {
				f[k] = v
			}
			lines = append(lines, line{at.Add(delay), len(lines), []byte(sess), mk("exchange", qid, at, f)})
			wants = append(wants, Want{ExchangeID: xid, RequestEventID: qid, ResponseEventID: qid})
			continue
		}
		lines = append(lines,
			line{at, len(lines), []byte(sess), mk("request", qid, at, map[string]any{"http.method": "POST", "request_body": req})},
			line{at.Add(delay), len(lines) + 1, []byte(sess), mk("response", rid, at.Add(delay), respFields)})
		wants = append(wants, Want{RequestEventID: qid, ResponseEventID: rid})
	}
	slices.SortStableFunc(lines, func(a, b line) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.seq - b.seq
	})
	var c Corpus
	for _, l := range lines {
		c.Keys = append(c.Keys, l.key)
		c.Lines = append(c.Lines, l.body)
	}
	for _, w := range wants {
		c.IDs = append(c.IDs, w.ExchangeID)
	}
	return c, wants
}
