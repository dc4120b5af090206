package duckstore

import (
	"fmt"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// generator makes realistic exchange records quickly: 40 servers, 12
// tools, a mix of outcomes, one body each.
type generator struct {
	start time.Time
	step  time.Duration
	n     int
}

func newGenerator(start time.Time) *generator {
	return &generator{start: start, step: 10 * time.Millisecond}
}

var genOutcomes = []classify.Outcome{
	classify.ToolSuccess, classify.ToolSuccess, classify.ToolSuccess, classify.ToolSuccess, classify.Success,
	classify.ToolError, classify.JSONRPCError, classify.HTTPError, classify.StreamIncomplete, classify.NoResponse,
}

func (g *generator) exchange() (schema.Exchange, schema.Body) {
	i := g.n
	g.n++
	o := genOutcomes[i%len(genOutcomes)]
	ts := g.start.Add(time.Duration(i) * g.step)
	e := schema.Exchange{
		ExchangeID: fmt.Sprintf("x-%016x", i*2654435761), RequestEventID: fmt.Sprintf("e-%d", i), ResponseEventID: fmt.Sprintf("e-%d-r", i),
		TS: ts, EndTS: ts.Add(20 * time.Millisecond), DurationMS: float64(5 + i%300), Source: "gateway", Sources: []string{"gateway"},
		Observer: "gw-1", Server: fmt.Sprintf("srv-%02d", i%40), URL: "https://mcp.example/mcp", ClientName: []string{"claude-code", "cursor", "vscode"}[i%3],
		ClientVersion: "1.0", SessionID: fmt.Sprintf("s-%d", i/50), HTTPMethod: "POST", HTTPStatus: 200, RequestBytes: 180, ResponseBytes: 420,
	}
	e.Result = classify.Result{
		Layer: o.Layer(), Outcome: o, RetryAdvice: classify.AdviceNone, OutcomeKnown: true, SideEffectRisk: classify.RiskPossible,
		Rule: "json-result", JSONRPCID: fmt.Sprint(i), Method: "tools/call", ToolName: fmt.Sprintf("tool-%d", i%12),
		ParamsHash: fmt.Sprintf("%016x", i%5000), ContentType: "application/json", Transport: classify.TransportJSON,
	}
	switch o {
	case classify.HTTPError:
		e.HTTPStatus, e.ErrorClass, e.ErrorMessage = 503, "SERVER_ERROR", "Service Unavailable"
	case classify.JSONRPCError:
		e.JSONRPCCode, e.ErrorClass, e.ErrorMessage = classify.Int(-32602), "INVALID_PARAMS", "Invalid params: path must be absolute"
	case classify.NoResponse:
		e.HTTPStatus, e.Transport, e.DurationMS = 0, classify.TransportNone, 0
	case classify.StreamIncomplete:
		e.Transport, e.CloseReason = classify.TransportSSE, "server_abort"
	}
	e.Attempt, e.ChainID, e.RetryOrigin = 1, e.ExchangeID, "none"
	b := schema.Body{
		ExchangeID: e.ExchangeID, TS: ts,
		RequestHeaders:  classify.HeaderOf(map[string]string{"content-type": "application/json", "accept": "application/json, text/event-stream"}),
		ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json"}),
		RequestBody:     `{"jsonrpc":"2.0","id":` + e.JSONRPCID + `,"method":"tools/call","params":{"name":"` + e.ToolName + `","arguments":{"path":"/tmp"}}}`,
		ResponseBody:    `{"jsonrpc":"2.0","id":` + e.JSONRPCID + `,"result":{"content":[{"type":"text","text":"ok"}]}}`,
	}
	return e, b
}

func (g *generator) batch(n int) *schema.Batch {
	b := &schema.Batch{Token: fmt.Sprintf("gen-%d", g.n)}
	for i := 0; i < n; i++ {
		e, body := g.exchange()
		b.Exchanges = append(b.Exchanges, e)
		b.Bodies = append(b.Bodies, body)
	}
	return b
}
