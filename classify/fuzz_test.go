package classify

import (
	"testing"
)

// FuzzClassify feeds arbitrary request and response bytes, statuses and
// flags and checks the invariants every record relies on: no panic,
// exactly one known outcome, a layer and advice consistent with it.
func FuzzClassify(f *testing.F) {
	for _, c := range classCases() {
		f.Add(string(c.ex.RequestBody), c.ex.Status, c.ex.ResponseHeaders.Get("content-type"), string(c.ex.ResponseBody), uint8(c.ex.Stream), c.ex.BodyTruncated, c.ex.TransportError)
	}
	f.Add(callReq, 200, "text/event-stream", "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n", uint8(1), false, "")
	f.Add(`[`+callReq+`]`, 200, "application/json", `[`+good+`]`, uint8(0), false, "")
	f.Fuzz(func(t *testing.T, req string, status int, ct, body string, stream uint8, truncated bool, terr string) {
		ex := Exchange{
			HTTPMethod:      "POST",
			RequestBody:     []byte(req),
			Status:          status,
			ResponseHeaders: Header{{"content-type", ct}, {"retry-after", terr}},
			ResponseBody:    []byte(body),
			Stream:          StreamEnd(stream % 3),
			BodyTruncated:   truncated,
			TransportError:  terr,
		}
		r := Classify(&ex)
		known := false
		for _, o := range Outcomes {
			known = known || o == r.Outcome
		}
		if !known {
			t.Fatalf("unknown outcome %q", r.Outcome)
		}
		if r.Layer != r.Outcome.Layer() {
			t.Fatalf("layer %s does not match outcome %s", r.Layer, r.Outcome)
		}
		if r.RetryAdvice == "" || r.SideEffectRisk == "" || r.Rule == "" || r.Transport == "" {
			t.Fatalf("incomplete result %+v", r)
		}
		if (r.Outcome == Success || r.Outcome == ToolSuccess) && r.RetryAdvice != AdviceNone {
			t.Fatalf("success with advice %s", r.RetryAdvice)
		}
		if status >= 200 && status <= 299 && r.Outcome == HTTPError {
			t.Fatalf("2xx classified as HTTP_ERROR")
		}
		if (status < 200 || status > 299) && status != 0 && r.Outcome != HTTPError {
			t.Fatalf("status %d classified as %s", status, r.Outcome)
		}
		if truncated && r.Outcome == MalformedJSON {
			t.Fatalf("truncated body called malformed")
		}
		if len(r.ErrorMessage) > maxMessage {
			t.Fatalf("error_message of %d bytes", len(r.ErrorMessage))
		}
	})
}
