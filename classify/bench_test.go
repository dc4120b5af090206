package classify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// benchBodies returns a tools/call request and a JSON and an SSE response
// whose result text makes the body about size bytes.
func benchBodies(size int) (req, jsonBody, sseBody []byte) {
	req = []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"retry budget","limit":10},"_meta":{"progressToken":"p-42"}}}`)
	var text strings.Builder
	for text.Len() < size-160 {
		text.WriteString(`Result line with \"quoted\" words, numbers 12345 and unicode \u00e9. `)
	}
	res := `{"jsonrpc":"2.0","id":42,"result":{"content":[{"type":"text","text":"` + text.String() + `"}],"structuredContent":{"hits":3},"isError":false}}`
	note := `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-42","progress":1,"total":2}}`
	sse := "id: s-0\ndata:\n\nevent: message\ndata: " + note + "\n\nevent: message\ndata: " + res + "\n\n"
	return req, []byte(res), []byte(sse)
}

var benchSizes = []int{1 << 10, 2 << 10, 4 << 10, 20 << 10}

// benchCase is one exchange of the benchmarks and the JSON response body of
// its size, the naive decoder's input.
type benchCase struct {
	name string
	ex   Exchange
	body []byte
	json []byte
}

// benchExchanges returns the JSON and the SSE exchange of a body size.
func benchExchanges(size int) []benchCase {
	req, js, sse := benchBodies(size)
	mk := func(ct string, body []byte) Exchange {
		return Exchange{HTTPMethod: "POST", RequestBody: req, Status: 200, ResponseHeaders: Header{{"content-type", ct}}, ResponseBody: body, Stream: StreamComplete}
	}
	return []benchCase{
		{"json", mk("application/json", js), js, js},
		{"sse", mk("text/event-stream", sse), sse, js},
	}
}

// BenchmarkClassify measures classification of whole exchanges (request and
// response parsed). Compare with BenchmarkNaiveDecode: one json.Unmarshal of
// the same response body into map[string]any.
func BenchmarkClassify(b *testing.B) {
	for _, size := range benchSizes {
		for _, c := range benchExchanges(size) {
			ex := c.ex
			b.Run(fmt.Sprintf("%s/%dKiB", c.name, size>>10), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(c.body)))
				for b.Loop() {
					if r := Classify(&ex); r.Outcome != ToolSuccess {
						b.Fatalf("outcome %s", r.Outcome)
					}
				}
			})
		}
	}
}

// BenchmarkNaiveDecode is the yardstick of the classifier's goal: decoding
// the same response body with encoding/json into map[string]any, nothing
// else.
func BenchmarkNaiveDecode(b *testing.B) {
	for _, size := range benchSizes {
		_, js, _ := benchBodies(size)
		b.Run(fmt.Sprintf("json/%dKiB", size>>10), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(js)))
			for b.Loop() {
				var m map[string]any
				if err := json.Unmarshal(js, &m); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkClassifyRatio alternates the classifier and the naive decode in
// small rounds and reports the ratio of their times, so that load from
// other processes hits both sides alike.
func BenchmarkClassifyRatio(b *testing.B) {
	for _, size := range benchSizes {
		for _, c := range benchExchanges(size) {
			ex, js := c.ex, c.json
			b.Run(fmt.Sprintf("%s/%dKiB", c.name, size>>10), func(b *testing.B) {
				const round = 16
				var tc, tn time.Duration
				for b.Loop() {
					start := time.Now()
					for range round {
						Classify(&ex)
					}
					mid := time.Now()
					for range round {
						var m map[string]any
						_ = json.Unmarshal(js, &m)
					}
					tc += mid.Sub(start)
					tn += time.Since(mid)
				}
				b.ReportMetric(float64(tc)/float64(tn), "ratio")
				b.ReportMetric(float64(b.N*round)/tc.Seconds(), "exchanges/s")
			})
		}
	}
}
