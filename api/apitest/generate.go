package apitest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/schema"
)

// GenerateConfig shapes a generated store. Exchanges are spread evenly
// over [From, From+Span) in sessions of about 20; the mix of outcomes,
// retries and MRTR rounds is fixed (about 80% tool successes).
type GenerateConfig struct {
	Exchanges int
	From      time.Time
	Span      time.Duration
	Seed      uint64
	// BodyEvery stores a body for every n-th exchange (0: none).
	BodyEvery int
	// Batch is the rows per store write; 0 means 100,000.
	Batch int
}

const (
	genServers = 20
	genClients = 12
	genTools   = 40
)

// GeneratedID returns the id of the i-th generated exchange.
func GeneratedID(i int) string { return fmt.Sprintf("g-%08d", i) }

// Writer is a store Generate writes into (both stores are).
type Writer interface {
	Write(ctx context.Context, b *schema.Batch) error
}

// Generate writes cfg.Exchanges synthetic exchanges (with their chains,
// tool annotations and some bodies) into s.
func Generate(ctx context.Context, s Writer, cfg GenerateConfig) error {
	if cfg.Batch <= 0 {
		cfg.Batch = 100_000
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	step := cfg.Span / time.Duration(max(cfg.Exchanges, 1))
	b := &schema.Batch{}
	for t := 0; t < genTools; t++ {
		for sv := 0; sv < genServers; sv++ {
			b.Annotations = append(b.Annotations, schema.ToolAnnotation{
				Server: server(sv), Tool: tool(t), ReadOnly: t%4 == 0, Destructive: t%4 != 0, Idempotent: t%3 == 0,
				OpenWorld: true, SeenAt: cfg.From,
			})
		}
	}
	var prev *schema.Exchange
	session, sessionLeft, sv, cl := "", 0, 0, 0
	for i := 0; i < cfg.Exchanges; i++ {
		if sessionLeft == 0 {
			session, sessionLeft = fmt.Sprintf("sess-%07d", i), 10+rng.IntN(20)
			sv, cl, prev = rng.IntN(genServers), rng.IntN(genClients), nil
		}
		sessionLeft--
		e := exchange(rng, i, cfg.From.Add(time.Duration(i)*step), session, sv, cl, prev)
		b.Exchanges = append(b.Exchanges, e)
		if cfg.BodyEvery > 0 && i%cfg.BodyEvery == 0 {
			b.Bodies = append(b.Bodies, schema.Body{
				ExchangeID: e.ExchangeID, TS: e.TS,
				RequestHeaders:  classify.HeaderOf(map[string]string{"content-type": "application/json", "mcp-session-id": session}),
				ResponseHeaders: classify.HeaderOf(map[string]string{"content-type": "application/json"}),
				RequestBody:     fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"name":%q}}`, i, e.Method, e.ToolName),
				ResponseBody:    fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`, i),
			})
		}
		prev = &b.Exchanges[len(b.Exchanges)-1]
		if len(b.Exchanges) == cfg.Batch || i == cfg.Exchanges-1 {
			if err := s.Write(ctx, b); err != nil {
				return fmt.Errorf("write generated batch: %w", err)
			}
			last := *prev
			prev = &last
			b = &schema.Batch{}
		}
	}
	return nil
}

func server(i int) string { return fmt.Sprintf("srv-%02d", i) }
func tool(i int) string   { return fmt.Sprintf("tool_%02d", i) }

// exchange makes the i-th exchange of a session; prev is the one before
// it in the session (nil for the first), which it may retry or continue.
func exchange(rng *rand.Rand, i int, ts time.Time, session string, sv, cl int, prev *schema.Exchange) schema.Exchange {
	id := GeneratedID(i)
	dur := math.Exp(3.5 + rng.NormFloat64()) // median ~33ms
	e := schema.Exchange{
		ExchangeID: id, RequestEventID: id + "-q", ResponseEventID: id + "-r",
		TS: ts, EndTS: ts.Add(time.Duration(dur * float64(time.Millisecond))), DurationMS: math.Round(dur*1000) / 1000,
		Source: "gateway", Sources: []string{"gateway"}, OneSided: true, Observer: "gw-1",
		Server: server(sv), URL: "https://" + server(sv) + ".example/mcp",
		ClientName: fmt.Sprintf("client-%02d", cl), ClientVersion: "1." + fmt.Sprint(cl%3),
		SessionID: session, HTTPMethod: "POST", HTTPStatus: 200, RequestBytes: 180 + rng.IntN(400), ResponseBytes: 200 + rng.IntN(2000),
		Attempt: 1, ChainID: id, RetryOrigin: "none",
	}
	e.JSONRPCID = fmt.Sprint(i)
	e.Evidence = classify.EvidenceBodies
	e.Transport, e.ContentType = classify.Transport("json"), "application/json"
	if rng.IntN(10) < 4 {
		e.Transport, e.ContentType = classify.Transport("sse"), "text/event-stream"
		e.SSEEvents = 1 + rng.IntN(3)
	}
	e.ProtocolVersion = "2025-11-25"
	switch r := rng.IntN(100); {
	case r < 5:
		e.Method, e.Layer, e.Outcome, e.RetryAdvice = "tools/list", classify.LayerApplication, classify.Success, classify.Advice("NONE")
	case r < 8:
		e.Method, e.Layer, e.Outcome, e.RetryAdvice = "resources/read", classify.LayerApplication, classify.Success, classify.Advice("NONE")
	case r < 10:
		e.Method, e.Notification, e.HTTPStatus = "notifications/initialized", true, 202
		e.Layer, e.Outcome, e.RetryAdvice, e.Transport = classify.LayerTransport, classify.Accepted, classify.Advice("NONE"), classify.Transport("none")
	default:
		e.Method, e.ToolName = "tools/call", tool(rng.IntN(genTools))
		toolCall(rng, &e)
	}
	e.OutcomeKnown = e.Outcome != classify.HTTPError || e.HTTPStatus < 500
	e.SideEffectRisk = classify.Risk("possible")
	e.ParamsHash = fmt.Sprintf("%016x", rng.Uint64())
	e.Rule = "generated"
	if prev != nil && prev.Method == "tools/call" {
		switch prev.Outcome {
		case classify.HTTPError, classify.StreamIncomplete, classify.TransportError, classify.NoResponse:
			if rng.IntN(2) == 0 { // a retry of the failed call
				e.Method, e.ToolName, e.ParamsHash = prev.Method, prev.ToolName, prev.ParamsHash
				e.Attempt, e.RetryOf, e.ChainID, e.RetryOrigin = prev.Attempt+1, prev.ExchangeID, prev.ChainID, "sdk"
				e.UnknownSideEffectRetry = prev.Outcome != classify.HTTPError || prev.HTTPStatus >= 500
			}
		case classify.InputRequired: // the MRTR continuation
			e.Method, e.ToolName, e.Continuation = prev.Method, prev.ToolName, true
			e.Continues, e.ChainID = prev.ExchangeID, prev.ChainID
		}
	}
	return e
}

// toolCall picks a tools/call outcome.
func toolCall(rng *rand.Rand, e *schema.Exchange) {
	set := func(layer classify.Layer, o classify.Outcome, class classify.ErrorClass, advice string) {
		e.Layer, e.Outcome, e.ErrorClass, e.RetryAdvice = layer, o, class, classify.Advice(advice)
	}
	switch r := rng.IntN(1000); {
	case r < 800:
		set(classify.LayerApplication, classify.ToolSuccess, "", "NONE")
	case r < 860:
		set(classify.LayerApplication, classify.ToolError, "TOOL_FAILED", "DO_NOT_RETRY_BLINDLY")
		e.ErrorMessage = "upstream returned status " + fmt.Sprint(400+rng.IntN(100))
		if rng.IntN(10) == 0 {
			e.ClientOutcome, e.ClientDisagrees = "success", true
		}
	case r < 910:
		codes := []int64{-32602, -32603, -32601, -32000}
		msgs := []string{"Invalid params", "Internal error", "Method not found", "Server error"}
		k := rng.IntN(len(codes))
		set(classify.LayerProtocol, classify.JSONRPCError, classify.ErrorClass([]string{"INVALID_PARAMS", "INTERNAL_ERROR", "METHOD_NOT_FOUND", "IMPLEMENTATION_ERROR"}[k]), "FIX_REQUEST")
		e.JSONRPCCode, e.ErrorMessage = classify.NullInt{V: codes[k], Valid: true}, msgs[k]
	case r < 935:
		set(classify.LayerTransport, classify.HTTPError, "RATE_LIMITED", "RETRY_AFTER")
		e.HTTPStatus = 429
		if rng.IntN(4) != 0 {
			e.RetryAfterS = classify.NullInt{V: int64(1 + rng.IntN(30)), Valid: true}
		}
	case r < 955:
		set(classify.LayerTransport, classify.HTTPError, "SERVER_ERROR", "RETRY_IF_SAFE")
		e.HTTPStatus = 502 + rng.IntN(3)
	case r < 975:
		set(classify.LayerStream, classify.StreamIncomplete, "SERVER_ABORT", "RETRY_IF_SAFE")
		e.Transport, e.CloseReason = classify.Transport("sse"), []string{"server_abort", "reset", "client_abort"}[rng.IntN(3)]
	case r < 985:
		set(classify.LayerInteraction, classify.InputRequired, "", "CONTINUE_INPUT")
	case r < 993:
		set(classify.LayerTransport, classify.TransportError, "TIMEOUT", "RETRY_IF_SAFE")
		e.HTTPStatus, e.TransportError = 0, "context deadline exceeded"
	default:
		set(classify.LayerTransport, classify.NoResponse, "RESPONSE_WINDOW_EXPIRED", "RETRY_IF_SAFE")
		e.HTTPStatus, e.NoResponseReason = 0, "window expired"
	}
}
