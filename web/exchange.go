package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
)

// page is the API's answer of an ordered listing.
type page[T any] struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	Rows []T       `json:"rows"`
	Next *string   `json:"next"`
}

// searchParams are the parameters of /exchanges passed on to the API.
var searchParams = []string{"server", "client", "tool", "method", "outcome", "layer", "error_class", "session", "q", "cursor"}

type exchangesPage struct {
	Filters  [][2]string
	Rows     []queries.SearchRow
	NextHref string
}

func (v *View) exchanges(w http.ResponseWriter, r *http.Request) {
	rng, tr := rangeOf(r)
	q := r.URL.Query()
	var p exchangesPage
	for _, k := range searchParams {
		if val := q.Get(k); val != "" {
			rng.Set(k, val)
			if k != "cursor" {
				p.Filters = append(p.Filters, [2]string{k, val})
			}
		}
	}
	var res page[queries.SearchRow]
	if err := v.get(r, "/api/v1/exchanges", params(rng, "limit", v.limit(100)), &res); err != nil {
		v.fail(w, r, err)
		return
	}
	resolved(&tr, res.From, res.To)
	p.Rows = res.Rows
	if res.Next != nil {
		next := params(rng, "from", res.From.Format(time.RFC3339Nano), "to", res.To.Format(time.RFC3339Nano), "cursor", *res.Next)
		p.NextHref = "/exchanges?" + next.Encode()
	}
	v.renderRange(w, r, http.StatusOK, "exchanges", "Exchanges", p, tr)
}

// exchangeAnswer is the API's answer of /api/v1/exchanges/{id}.
type exchangeAnswer struct {
	Exchange schema.Exchange     `json:"exchange"`
	Chain    []queries.ChainLink `json:"chain"`
	Body     *schema.Body        `json:"body"`
	Bodies   string              `json:"bodies"`
}

type exchangePage struct {
	X           schema.Exchange
	Evidence    [][2]string
	Why         string
	Body        *schema.Body
	Bodies      string
	BodiesShown bool
	// Events is the SSE stream of the response event by event; Tail
	// what the stream held of a message it never finished.
	Events                                        []sseRow
	Tail                                          string
	Cut                                           bool
	RequestJSON, ResponseJSON                     string
	Chain                                         []chainRow
	SessionHref, ServerHref, ToolHref, ClientHref string
}

type sseRow struct {
	N     int
	Type  string
	ID    string
	Data  string
	Final bool
}

type chainRow struct {
	queries.ChainLink
	Offset  string
	Current bool
	Href    string
	// Joins says how the link joins the chain: "first", "retry" (by
	// retry_of) or "MRTR round" (by continues).
	Joins string
}

func (v *View) exchange(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		v.required(w, r, "id", "exchange")
		return
	}
	var a exchangeAnswer
	if err := v.get(r, "/api/v1/exchanges/"+url.PathEscape(id), nil, &a); err != nil {
		v.fail(w, r, err)
		return
	}
	x := a.Exchange
	p := exchangePage{X: x, Body: a.Body, Bodies: a.Bodies, BodiesShown: a.Body != nil, Why: whyWords(x)}
	p.Evidence = evidence(x)
	p.Chain = chainRows(a.Chain, x.ExchangeID)
	if x.SessionID != "" {
		p.SessionHref = link("/session", "id", x.SessionID, "from", x.TS.Add(-12*time.Hour).Format(time.RFC3339), "to", x.TS.Add(12*time.Hour).Format(time.RFC3339))
	}
	keep := func(path, name string) string {
		if name == "" {
			return ""
		}
		return link(path, "name", name, "from", x.TS.Add(-12*time.Hour).Format(time.RFC3339), "to", x.TS.Add(12*time.Hour).Format(time.RFC3339))
	}
	p.ServerHref, p.ToolHref, p.ClientHref = keep("/server", x.Server), keep("/tool", x.ToolName), keep("/client", x.ClientName)
	if a.Body != nil {
		p.RequestJSON = pretty(a.Body.RequestBody)
		if strings.HasPrefix(strings.ToLower(x.ContentType), "text/event-stream") {
			events, tail := classify.SSEEvents([]byte(a.Body.ResponseBody))
			for i, e := range events {
				p.Events = append(p.Events, sseRow{N: i + 1, Type: e.Type, ID: e.ID, Data: pretty(e.Data), Final: answers(e.Data, x.JSONRPCID)})
			}
			p.Tail = tail
			p.Cut = x.Outcome == classify.StreamIncomplete || x.CloseReason != "" && x.CloseReason != "complete"
		} else {
			p.ResponseJSON = pretty(a.Body.ResponseBody)
		}
	}
	v.render(w, r, http.StatusOK, "exchange", "Exchange "+x.ExchangeID, p)
}

// evidence lists what the classifier saw, in the order its rules look.
func evidence(x schema.Exchange) [][2]string {
	var ev [][2]string
	add := func(k, val string) {
		if val != "" {
			ev = append(ev, [2]string{k, val})
		}
	}
	add("rule", x.Rule)
	if x.HTTPStatus != 0 {
		add("HTTP status", fmt.Sprint(x.HTTPStatus))
	}
	add("transport error", x.TransportError)
	add("content type", x.ContentType)
	add("body carried as", string(x.Transport))
	if x.Transport == classify.TransportSSE {
		add("SSE events", fmt.Sprint(x.SSEEvents))
	}
	add("stream close reason", x.CloseReason)
	add("JSON-RPC id", x.JSONRPCID)
	if x.JSONRPCCode.Valid {
		add("JSON-RPC code", fmt.Sprint(x.JSONRPCCode.V))
	}
	label := "error message"
	if x.Outcome == classify.ToolError {
		label = "isError text"
	}
	add(label, x.ErrorMessage)
	if x.RetryAfterS.Valid {
		add("Retry-After", fmt.Sprintf("%d s", x.RetryAfterS.V))
	}
	if x.BodyTruncated {
		add("body", "cut by the logger")
	}
	if x.Notification {
		add("request", "a notification or client response (no answer expected)")
	}
	if x.Continuation {
		add("request", "continues an input_required round (MRTR)")
	}
	add("no response because", x.NoResponseReason)
	return ev
}

// whyWords says in a sentence why the exchange got its outcome.
func whyWords(x schema.Exchange) string {
	switch x.Outcome {
	case classify.Success, classify.ToolSuccess:
		return "The answer was a well-formed result."
	case classify.Accepted:
		return "A notification or client response was accepted with 202 and no body."
	case classify.HTTPError:
		return fmt.Sprintf("The HTTP status was %d, outside 2xx: the status wins over anything in the body.", x.HTTPStatus)
	case classify.TransportError:
		return "No HTTP response arrived: the client recorded a transport error."
	case classify.NoResponse:
		return "The request was logged but no response arrived within the correlation window."
	case classify.JSONRPCError:
		return "HTTP was fine but the JSON-RPC envelope carried an error object: no tool result exists."
	case classify.ToolError:
		return "The protocol exchange worked but the tool reported failure with isError: true."
	case classify.InputRequired:
		return "The server answered resultType input_required: it waits for the client's inputResponses."
	case classify.StreamIncomplete:
		return "The SSE stream started with HTTP 200 but ended before the final response to this request."
	case classify.MalformedJSON:
		return "The response body (or the final SSE message) is not valid JSON."
	case classify.InvalidEnvelope:
		return "The body is JSON but not a JSON-RPC 2.0 response to this request."
	case classify.InvalidToolResult:
		return "The tools/call result breaks the schema."
	case classify.UnexpectedResponse:
		return "A body where none belongs, or none where one must be."
	}
	return ""
}

// answers reports whether an SSE event's data is the response to the
// request with JSON-RPC id want (as the record writes ids).
func answers(data, want string) bool {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
		Method *string         `json:"method"`
	}
	if want == "" || json.Unmarshal([]byte(data), &m) != nil || m.Method != nil || (m.Result == nil && m.Error == nil) {
		return false
	}
	id := string(m.ID)
	return id == want || strings.Trim(id, `"`) == want && strings.HasPrefix(id, `"`) == strings.HasPrefix(want, `"`)
}

// pretty indents JSON for reading; anything else is returned as is.
func pretty(s string) string {
	var v any
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if d.Decode(&v) != nil || d.More() {
		return s
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return s
	}
	return string(b)
}

func chainRows(links []queries.ChainLink, current string) []chainRow {
	if len(links) < 2 {
		return nil
	}
	out := make([]chainRow, len(links))
	for i, l := range links {
		out[i] = chainRow{ChainLink: l, Current: l.ExchangeID == current, Href: link("/exchange", "id", l.ExchangeID), Joins: "first"}
		switch {
		case l.Continues != "":
			out[i].Joins = "MRTR round"
		case l.RetryOf != "":
			out[i].Joins = "retry"
		}
		out[i].Offset = "+" + l.TS.Sub(links[0].TS).Round(time.Millisecond).String()
	}
	return out
}

type sessionPage struct {
	ID       string
	Rows     []queries.TimelineRow
	NextHref string
}

func (v *View) session(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		v.required(w, r, "id", "session")
		return
	}
	rng, tr := rangeOf(r)
	rng.Set("cursor", r.URL.Query().Get("cursor"))
	if rng.Get("cursor") == "" {
		rng.Del("cursor")
	}
	var res page[queries.TimelineRow]
	if err := v.get(r, "/api/v1/sessions/"+url.PathEscape(id)+"/timeline", params(rng, "limit", v.limit(200)), &res); err != nil {
		v.fail(w, r, err)
		return
	}
	resolved(&tr, res.From, res.To)
	p := sessionPage{ID: id, Rows: res.Rows}
	if res.Next != nil {
		p.NextHref = "/session?" + params(nil, "id", id, "from", res.From.Format(time.RFC3339Nano), "to", res.To.Format(time.RFC3339Nano), "cursor", *res.Next).Encode()
	}
	v.renderRange(w, r, http.StatusOK, "session", "Session "+id, p, tr)
}

// bundle passes the API's postmortem bundle on as a download, streamed;
// a refusal becomes the page it would be for any other request.
func (v *View) bundle(w http.ResponseWriter, r *http.Request) {
	rng, _ := rangeOf(r)
	if s := r.URL.Query().Get("server"); s != "" {
		rng.Set("server", s)
	}
	pw := &passWriter{w: w, rec: recorder{header: http.Header{}}}
	v.serveAPI(r, "/api/v1/incidents/bundle", rng, pw)
	if pw.rec.status != http.StatusOK && pw.rec.status != 0 {
		v.fail(w, r, errorOf(&pw.rec))
	}
}

// passWriter streams a 200 answer of the API to w with its content type
// and disposition, and keeps any other answer in rec.
type passWriter struct {
	w       http.ResponseWriter
	rec     recorder
	passing bool
}

func (p *passWriter) Header() http.Header { return p.rec.header }

func (p *passWriter) WriteHeader(code int) {
	if p.rec.status != 0 {
		return
	}
	p.rec.status = code
	if code == http.StatusOK {
		for _, h := range []string{"Content-Type", "Content-Disposition"} {
			if val := p.rec.header.Get(h); val != "" {
				p.w.Header().Set(h, val)
			}
		}
		p.passing = true
		p.w.WriteHeader(code)
	}
}

func (p *passWriter) Write(b []byte) (int, error) {
	if p.rec.status == 0 {
		p.WriteHeader(http.StatusOK)
	}
	if p.passing {
		return p.w.Write(b)
	}
	return p.rec.body.Write(b)
}

func (p *passWriter) Flush() {
	if f, ok := p.w.(http.Flusher); ok && p.passing {
		f.Flush()
	}
}
