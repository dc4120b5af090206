// Package pipelinetest generates contract-v1 log corpora for pipeline
// tests and benchmarks.
package pipelinetest

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Corpus is a generated log: one line per event, the Kafka key of each
// line (its session, so both halves of an exchange share a partition), and
// the exchange ids the output must hold.
type Corpus struct {
	Keys, Lines [][]byte
	IDs         []string
}

// Generate returns n exchanges whose response text makes bodies of about
// bodyBytes bytes; even exchanges are one exchange event, odd ones a
// request and a response event (a 50/50 mix of records, 1.5 events per
// exchange). Every fifth tool call fails with isError.
func Generate(n, bodyBytes int) Corpus {
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	filler := strings.Repeat("lorem ipsum dolor sit amet ", bodyBytes/27+1)[:max(bodyBytes-120, 1)]
	var c Corpus
	for i := range n {
		ts := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		sess := fmt.Sprintf("s-%d", i%7)
		req := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"lookup","arguments":{"key":"k%d"}}}`, i, i)
		resp := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s %d"}],"isError":%v}}`, i, filler, i, i%5 == 0)
		xid := fmt.Sprintf("x-%07d", i)
		c.IDs = append(c.IDs, xid)
		mk := func(kind string, extra map[string]any, at time.Time) []byte {
			return marshalLine(map[string]any{"event_id": xid + "-" + kind, "ts": at.Format(time.RFC3339Nano), "kind": kind,
				"source": "gateway", "observer": "gw", "server": "kv", "session_id": sess, "exchange_id": xid}, extra)
		}
		jsonCT := map[string]string{"content-type": "application/json"}
		if i%2 == 0 {
			c.Lines = append(c.Lines, mk("exchange", map[string]any{"http.method": "POST", "http.status": 200, "request_body": req, "response_body": resp, "http.response_headers": jsonCT, "duration_ms": 3.5}, ts))
			c.Keys = append(c.Keys, []byte(sess))
			continue
		}
		c.Lines = append(c.Lines,
			mk("request", map[string]any{"http.method": "POST", "request_body": req}, ts),
			mk("response", map[string]any{"http.status": 200, "response_body": resp, "http.response_headers": jsonCT}, ts.Add(3*time.Millisecond)))
		c.Keys = append(c.Keys, []byte(sess), []byte(sess))
	}
	return c
}

// marshalLine encodes the union of field sets as one JSON line; later sets
// win.
func marshalLine(sets ...map[string]any) []byte {
	m := map[string]any{}
	for _, set := range sets {
		for k, v := range set {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}
