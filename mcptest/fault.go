package mcptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// FaultKind is what a [Fault] does to the request it hits.
type FaultKind string

// Fault kinds. The "respond" kinds answer instead of the MCP server, which
// never sees the request; the "cut" kinds let the server answer and break
// its event stream after the first event.
const (
	// FaultUnavailable answers 503 with a plain-text body.
	FaultUnavailable FaultKind = "unavailable"
	// FaultUnavailableJSON answers 503 with a JSON-RPC error body
	// (-32603) carrying the request's id.
	FaultUnavailableJSON FaultKind = "unavailable_json"
	// FaultRateLimited answers 429 with "Retry-After: 2".
	FaultRateLimited FaultKind = "rate_limited"
	// FaultUnauthorized answers 401 with a Bearer challenge naming the
	// protected-resource metadata, and a plain-text body.
	FaultUnauthorized FaultKind = "unauthorized"
	// FaultMalformedJSON answers 200 application/json with a JSON-RPC
	// response cut off in the middle.
	FaultMalformedJSON FaultKind = "malformed_json"
	// FaultMalformedSSE answers 200 text/event-stream with one event whose
	// data is a JSON-RPC response cut off in the middle.
	FaultMalformedSSE FaultKind = "malformed_sse"
	// FaultCutStream lets the server answer, then aborts the connection
	// after the first SSE event with panic(http.ErrAbortHandler).
	FaultCutStream FaultKind = "cut_stream"
	// FaultHijackClose is FaultCutStream done by hijacking the connection
	// and closing it.
	FaultHijackClose FaultKind = "hijack_close"
	// FaultLoseSession is FaultCutStream that also loses the session, as
	// a server crash mid-call does: every later request carrying the same
	// Mcp-Session-Id reaches the server under an id it never issued, so the
	// real server answers with its own "session not found".
	FaultLoseSession FaultKind = "lose_session"
	// FaultBadVersion makes the client's request carry
	// "MCP-Protocol-Version: 2099-01-01"; the real server answers it.
	// It is applied before the recorder, so the recording shows the header.
	FaultBadVersion FaultKind = "bad_version"
	// FaultGarbleBody cuts the request body in half, so the server gets
	// JSON it cannot parse. Applied before the recorder, like
	// FaultBadVersion.
	FaultGarbleBody FaultKind = "garble_body"
)

// rewrites reports whether kind changes the request the client sent
// rather than what the server answers.
func (k FaultKind) rewrites() bool { return k == FaultBadVersion || k == FaultGarbleBody }

// Fault hits one request chosen by JSON-RPC method, tool name and
// occurrence. Only POSTs are matched.
type Fault struct {
	// Method is the JSON-RPC method to match, e.g. "tools/call". Required.
	Method string
	// Tool narrows a tools/call match to params.name. Empty matches any.
	Tool string
	// Occurrence is which matching request is hit, counting from 1 in the
	// order the server receives them. Zero means the first.
	Occurrence int
	// Kind is what happens to it.
	Kind FaultKind
}

// faults is the fault-injection middleware, between the recorder and the
// MCP handler.
type faults struct {
	next http.Handler

	mu   sync.Mutex
	plan []Fault
	seen []int           // per plan entry: matching requests so far
	lost map[string]bool // sessions FaultLoseSession lost
}

func newFaults(next http.Handler, plan []Fault) *faults {
	return &faults{next: next, plan: plan, seen: make([]int, len(plan)), lost: map[string]bool{}}
}

// rpcHead is the part of a JSON-RPC message a fault matches on.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name string `json:"name"`
	} `json:"params"`
}

// readHead reads r's body, puts it back for the next handler and decodes
// its JSON-RPC head; batches and junk give an empty head.
func readHead(r *http.Request) (rpcHead, error) {
	var head rpcHead
	if r.Body == nil {
		return head, nil
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return head, fmt.Errorf("read request body: %w", err)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	_ = json.Unmarshal(body, &head)
	return head, nil
}

func (f *faults) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = f.forgetLost(r)
	if r.Method != http.MethodPost {
		f.next.ServeHTTP(w, r)
		return
	}
	head, err := readHead(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch kind := f.match(head); kind {
	case "":
		f.next.ServeHTTP(w, r)
	case FaultCutStream, FaultHijackClose:
		cutAfterFirstEvent(w, r, f.next, kind)
	case FaultLoseSession:
		if id := r.Header.Get("Mcp-Session-Id"); id != "" {
			f.mu.Lock()
			f.lost[id] = true
			f.mu.Unlock()
		}
		cutAfterFirstEvent(w, r, f.next, FaultCutStream)
	case FaultBadVersion:
		r.Header.Set("MCP-Protocol-Version", "2099-01-01")
		f.next.ServeHTTP(w, r)
	case FaultGarbleBody:
		garble(r)
		f.next.ServeHTTP(w, r)
	default:
		respond(w, r, kind, head.ID)
	}
}

// forgetLost returns r with the session renamed when its session was
// lost; a copy, so that the recorder in front still sees the client's.
func (f *faults) forgetLost(r *http.Request) *http.Request {
	id := r.Header.Get("Mcp-Session-Id")
	if id == "" {
		return r
	}
	f.mu.Lock()
	lost := f.lost[id]
	f.mu.Unlock()
	if !lost {
		return r
	}
	r = r.Clone(r.Context())
	r.Header.Set("Mcp-Session-Id", "lost-"+id)
	return r
}

// garble replaces r's body with its first half.
func garble(r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	body = body[:len(body)/2]
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Set("Content-Length", strconv.Itoa(len(body)))
}

// match counts the request against the plan and returns the kind of the
// first fault it hits.
func (f *faults) match(head rpcHead) FaultKind {
	f.mu.Lock()
	defer f.mu.Unlock()
	var hit FaultKind
	for i, p := range f.plan {
		if p.Method != head.Method || (p.Tool != "" && p.Tool != head.Params.Name) {
			continue
		}
		f.seen[i]++
		if f.seen[i] == max(p.Occurrence, 1) && hit == "" {
			hit = p.Kind
		}
	}
	return hit
}

// respond answers in place of the MCP server.
func respond(w http.ResponseWriter, r *http.Request, kind FaultKind, id json.RawMessage) {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	switch kind {
	case FaultUnavailable:
		http.Error(w, "upstream unavailable", http.StatusServiceUnavailable)
	case FaultUnavailableJSON:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"upstream unavailable"}}`, id)
	case FaultRateLimited:
		w.Header().Set("Retry-After", "2")
		http.Error(w, "rate limit exceeded", http.StatusTooManyRequests)
	case FaultUnauthorized:
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer resource_metadata="http://%s/.well-known/oauth-protected-resource"`, r.Host))
		http.Error(w, "invalid token", http.StatusUnauthorized)
	case FaultMalformedJSON:
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"trunc`, id)
	case FaultMalformedSSE:
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"content\":[{\"type\":\"te\n\n", id)
	default:
		http.Error(w, "mcptest: unknown fault "+string(kind), http.StatusInternalServerError)
	}
}

// WithFaults wraps next in the fault injector, for programs (the demo)
// that serve the test tools without a test.
func WithFaults(next http.Handler, plan []Fault) http.Handler { return newFaults(next, plan) }
