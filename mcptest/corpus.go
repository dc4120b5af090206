package mcptest

// Corpus returns the scenarios recorded in testdata/real/gosdk.ndjson: the
// same tools, failures and faults over four server/client pairings:
//
//   - legacy-sse: stateful server, SSE responses, client on 2025-06-18
//     (initialize, GET stream, elicitation round trip, DELETE);
//   - legacy-json: stateful server, JSON responses, client left on the SDK
//     default, which probes server/discover and falls back to 2025-11-25;
//   - modern-sse and modern-json: stateless server, client on 2026-07-28
//     (server/discover, _meta on every request, MRTR input_required).
func Corpus() []Scenario {
	return []Scenario{
		{
			Name:            "legacy-sse",
			ProtocolVersion: "2025-06-18",
			Server: Options{Faults: []Fault{
				{Method: "tools/call", Tool: ToolLookup, Occurrence: 3, Kind: FaultUnavailable},
				{Method: "tools/call", Tool: ToolCountSlowly, Occurrence: 2, Kind: FaultCutStream},
				{Method: "tools/call", Tool: ToolDeleteItem, Occurrence: 2, Kind: FaultRateLimited},
				{Method: "tools/call", Tool: ToolLookup, Occurrence: 5, Kind: FaultUnauthorized},
			}},
			Steps: append(commonSteps(),
				Step{Name: "unavailable then resent", Tool: ToolLookup, Args: map[string]any{"key": "b"}, Resend: 1},
				Step{Name: "cut stream", Tool: ToolCountSlowly, Args: map[string]any{"n": 3}, Progress: true, Want: WantCallError},
				Step{Name: "client gives up", Tool: ToolCountSlowly, Args: map[string]any{"n": 5}, CancelOnProgress: true, Want: WantCallError, AwaitMethod: "notifications/cancelled"},
				Step{Name: "rate limited", Tool: ToolDeleteItem, Args: map[string]any{"id": "item-2"}, Want: WantCallError},
				// A 401 with a plain-text body breaks the SDK client's connection: last.
				Step{Name: "unauthorized", Tool: ToolLookup, Args: map[string]any{"key": "c"}, Want: WantCallError},
			),
		},
		{
			Name: "legacy-json",
			Server: Options{JSONResponse: true, Faults: []Fault{
				{Method: "tools/call", Tool: ToolLookup, Occurrence: 3, Kind: FaultUnavailableJSON},
				{Method: "tools/call", Tool: ToolLookup, Occurrence: 5, Kind: FaultMalformedJSON},
			}},
			Steps: append(commonSteps(),
				Step{Name: "unavailable json then resent", Tool: ToolLookup, Args: map[string]any{"key": "b"}, Resend: 1},
				// A malformed body breaks the SDK client's connection: last.
				Step{Name: "malformed json", Tool: ToolLookup, Args: map[string]any{"key": "c"}, Want: WantCallError},
			),
		},
		{
			Name:            "modern-sse",
			ProtocolVersion: "2026-07-28",
			Server: Options{Stateless: true, Faults: []Fault{
				{Method: "tools/call", Tool: ToolCountSlowly, Occurrence: 2, Kind: FaultHijackClose},
				{Method: "tools/call", Tool: ToolLookup, Occurrence: 3, Kind: FaultRateLimited},
				{Method: "tools/call", Tool: ToolLookup, Occurrence: 5, Kind: FaultMalformedSSE},
			}},
			Steps: append(commonSteps(),
				Step{Name: "cut stream", Tool: ToolCountSlowly, Args: map[string]any{"n": 3}, Progress: true, Want: WantCallError},
				Step{Name: "client gives up", Tool: ToolCountSlowly, Args: map[string]any{"n": 5}, CancelOnProgress: true, Want: WantCallError, AwaitMethod: "notifications/cancelled"},
				Step{Name: "rate limited then resent", Tool: ToolLookup, Args: map[string]any{"key": "b"}, Resend: 1},
				// A malformed event breaks the SDK client's connection: last.
				Step{Name: "malformed event", Tool: ToolLookup, Args: map[string]any{"key": "c"}, Want: WantCallError},
			),
		},
		{
			Name:            "modern-json",
			ProtocolVersion: "2026-07-28",
			Server: Options{Stateless: true, JSONResponse: true, Faults: []Fault{
				{Method: "tools/call", Tool: ToolLookup, Occurrence: 3, Kind: FaultUnavailable},
				{Method: "tools/call", Tool: ToolDeleteItem, Occurrence: 2, Kind: FaultUnauthorized},
			}},
			Steps: append(commonSteps(),
				Step{Name: "unavailable then resent", Tool: ToolLookup, Args: map[string]any{"key": "b"}, Resend: 1},
				// A 401 with a plain-text body breaks the SDK client's connection: last.
				Step{Name: "unauthorized", Tool: ToolDeleteItem, Args: map[string]any{"id": "item-2"}, Want: WantCallError},
			),
		},
	}
}

// commonSteps are the calls every scenario makes before its faults. They
// call lookup twice and delete_item and count_slowly once, which the
// faults' occurrence counts rely on.
func commonSteps() []Step {
	return []Step{
		{Name: "list tools", Op: OpListTools},
		{Name: "lookup", Tool: ToolLookup, Args: map[string]any{"key": "a"}},
		{Name: "delete item", Tool: ToolDeleteItem, Args: map[string]any{"id": "item-1"}},
		{Name: "tool error", Tool: ToolAlwaysFails, Want: WantToolError},
		{Name: "unknown tool", Tool: "no_such_tool", Want: WantCallError},
		{Name: "invalid arguments", Tool: ToolLookup, Args: map[string]any{"key": 42}, Want: WantToolError},
		{Name: "progress", Tool: ToolCountSlowly, Args: map[string]any{"n": 3}, Progress: true},
		{Name: "approve", Tool: ToolApprove, Args: map[string]any{"item": "invoice-7"}},
	}
}
