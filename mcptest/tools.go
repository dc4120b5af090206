package mcptest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool names served by [NewMCPServer].
const (
	ToolLookup      = "lookup"       // read-only, idempotent: {key}
	ToolDeleteItem  = "delete_item"  // destructive: {id}
	ToolAlwaysFails = "always_fails" // handler error, so an isError result
	ToolCountSlowly = "count_slowly" // progress notifications, then a result: {n}
	ToolApprove     = "approve"      // asks for input (MRTR / elicitation): {item}
)

// ProgressStep is the pause between two progress notifications of
// count_slowly; long enough that a client can react to the first one while
// the call is still running.
const ProgressStep = 40 * time.Millisecond

type lookupIn struct {
	Key string `json:"key" jsonschema:"the key to look up"`
}

type deleteIn struct {
	ID string `json:"id" jsonschema:"the item to delete"`
}

type countIn struct {
	N int `json:"n,omitempty" jsonschema:"how far to count (default 3)"`
}

type approveIn struct {
	Item string `json:"item" jsonschema:"the item that needs approval"`
}

// NewMCPServer returns an official Go SDK server with the test tools:
// lookup, delete_item, always_fails, count_slowly and approve.
func NewMCPServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcptest", Version: "1.0.0"}, nil)
	destructive := true
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolLookup,
		Description: "Look up a value by key.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, lookup)
	mcp.AddTool(s, &mcp.Tool{
		Name:        ToolDeleteItem,
		Description: "Delete an item.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive},
	}, deleteItem)
	mcp.AddTool(s, &mcp.Tool{Name: ToolAlwaysFails, Description: "Fail every time."}, alwaysFails)
	mcp.AddTool(s, &mcp.Tool{Name: ToolCountSlowly, Description: "Count, reporting progress."}, countSlowly)
	mcp.AddTool(s, &mcp.Tool{Name: ToolApprove, Description: "Approve an item after asking the user."}, approve)
	return s
}

func lookup(_ context.Context, _ *mcp.CallToolRequest, in lookupIn) (*mcp.CallToolResult, any, error) {
	return text("value-of-" + in.Key), nil, nil
}

func deleteItem(_ context.Context, _ *mcp.CallToolRequest, in deleteIn) (*mcp.CallToolResult, any, error) {
	return text("deleted " + in.ID), nil, nil
}

func alwaysFails(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
	return nil, nil, errors.New("backend exploded")
}

// countSlowly sends one progress notification per step when the caller
// asked for progress, pausing ProgressStep between steps. It notices
// cancellation only between steps, like a tool doing uninterruptible work,
// so that a client that gives up has left before the tool's (isError)
// result is ready, whichever of notifications/cancelled and the closed
// connection the server sees first.
func countSlowly(ctx context.Context, req *mcp.CallToolRequest, in countIn) (*mcp.CallToolResult, any, error) {
	n := in.N
	if n <= 0 {
		n = 3
	}
	token := req.Params.GetProgressToken()
	for i := 1; i <= n; i++ {
		if token != nil {
			// Progress is best effort: a stateless JSON-mode server has no
			// stream to carry it and the SDK returns an error.
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(i),
				Total:         float64(n),
				Message:       fmt.Sprintf("counted %d", i),
			})
		}
		time.Sleep(ProgressStep)
		if err := ctx.Err(); err != nil {
			return nil, nil, fmt.Errorf("counting: %w", err)
		}
	}
	return text(fmt.Sprintf("counted to %d", n)), nil, nil
}

// approve asks for a confirmation through MRTR input requests. A 2026-07-28
// client sees resultType "input_required" and re-sends the call with
// inputResponses; for older clients the SDK turns the same request into an
// elicitation/create round trip inside the call.
func approve(_ context.Context, req *mcp.CallToolRequest, in approveIn) (*mcp.CallToolResult, any, error) {
	resp, ok := req.Params.InputResponses["confirm"]
	if !ok {
		return &mcp.CallToolResult{
			InputRequests: mcp.InputRequestMap{"confirm": &mcp.ElicitParams{
				Message: "Approve " + in.Item + "?",
				RequestedSchema: &jsonschema.Schema{
					Type:       "object",
					Properties: map[string]*jsonschema.Schema{"approved": {Type: "boolean"}},
				},
			}},
			RequestState: "approve:" + in.Item,
		}, nil, nil
	}
	if er, ok := resp.(*mcp.ElicitResult); !ok || er.Action != "accept" || er.Content["approved"] != true {
		return text("not approved: " + in.Item), nil, nil
	}
	return text("approved " + in.Item), nil, nil
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}
