package main

import "github.com/mcplens/mcplens/mcptest"

// The steps every client driver runs, in order (see python/client.py):
//
// legacy (2025-11-25 initialize handshake, one session, SSE answers):
// list tools; lookup a; delete item-1; always_fails; unknown tool;
// lookup with bad arguments; count_slowly with progress; a call the
// client cancels after a timeout; lookup with a wrong protocol version;
// lookup with a garbled body; delete item-2 answered 503, re-sent; and
// count_slowly cut mid-stream with the session lost (a server crash): the
// application re-sends it in the same session (404), then initializes a
// new session and re-sends it there.
//
// modern (2026-07-28, no session): list tools; lookup a; always_fails;
// lookup with bad arguments; delete item-1 answered 503, re-sent;
// count_slowly cut mid-stream, re-sent; a call the client cancels.
//
// typescript2 (the v2 SDK, whose server serves 2025-era requests without
// sessions) runs the modern steps on both wires: modern negotiates
// 2026-07-28, legacy is its client's default 2025 handshake, stateless.
//
// Occurrences count per tool in that order.
var legacy = []mcptest.Fault{
	{Method: "tools/call", Tool: mcptest.ToolLookup, Occurrence: 3, Kind: mcptest.FaultBadVersion},
	{Method: "tools/call", Tool: mcptest.ToolLookup, Occurrence: 4, Kind: mcptest.FaultGarbleBody},
	{Method: "tools/call", Tool: mcptest.ToolDeleteItem, Occurrence: 2, Kind: mcptest.FaultUnavailable},
	{Method: "tools/call", Tool: mcptest.ToolCountSlowly, Occurrence: 3, Kind: mcptest.FaultLoseSession},
}

var modern = []mcptest.Fault{
	{Method: "tools/call", Tool: mcptest.ToolDeleteItem, Occurrence: 1, Kind: mcptest.FaultUnavailable},
	{Method: "tools/call", Tool: mcptest.ToolCountSlowly, Occurrence: 1, Kind: mcptest.FaultCutStream},
}

var plans = map[string][]mcptest.Fault{
	"python/legacy":      legacy,
	"python/modern":      modern,
	"rust/legacy":        legacy,
	"rust/modern":        modern,
	"typescript/legacy":  legacy,
	"typescript2/modern": modern,
	"typescript2/legacy": modern,
}
