package classify

import (
	"bytes"
	"strings"
)

// The texts SDKs put into isError results (and JSON-RPC messages) when they
// reject a call before the tool's own code runs. See
// shared/docs/mcp-wire-facts.md §5.2 and §5.5 and the Go SDK's server.go.
var (
	// Input validation: TypeScript 1.21–1.30 ("MCP error -32602: Input
	// validation error: Invalid arguments for tool X: …"), TypeScript 2.x and
	// Python low-level servers ("Input validation error: …"), TypeScript ≤
	// 1.20 ("Invalid arguments for tool X"), the Go SDK ("validating
	// \"arguments\": …"), FastMCP/pydantic ("Error executing tool X: 1
	// validation error for …").
	inputValidationPrefixes = []string{
		"input validation error",
		"invalid arguments for tool",
		"validating \"arguments\"",
		// rmcp 3.x: serde could not read the arguments into the tool's
		// parameter type ("failed to deserialize parameters: invalid
		// type: integer `42`, expected a string").
		"failed to deserialize parameters",
	}
	outputValidationPrefixes = []string{
		"output validation error",
		"validating tool output",
	}
)

// sdkPrefix is the prefix TypeScript v1 puts before every McpError message.
const sdkPrefix = "mcp error -32602:"

// toolTextClass returns the class of an isError result from its first text.
func toolTextClass(text []byte) ErrorClass {
	t := normalizedText(text)
	switch {
	case unknownToolText(t):
		return UnknownTool
	case hasAnyPrefix(t, inputValidationPrefixes):
		return ToolInputValidation
	case hasAnyPrefix(t, outputValidationPrefixes):
		return ToolOutputValidation
	case strings.HasPrefix(t, "error executing tool ") && strings.Contains(t, "validation error"):
		return ToolInputValidation
	}
	return ToolFailed
}

// normalizedText lower-cases the start of a message and drops the
// TypeScript "MCP error -32602:" prefix.
func normalizedText(text []byte) string {
	if len(text) > 256 {
		text = text[:256]
	}
	t := strings.ToLower(string(bytes.TrimSpace(text)))
	if strings.HasPrefix(t, sdkPrefix) {
		t = strings.TrimSpace(t[len(sdkPrefix):])
	}
	return t
}

// unknownToolText recognises "Tool X not found" (TypeScript), "Unknown tool:
// X" (Python FastMCP, the spec's example) and `unknown tool "X"` (Go).
func unknownToolText(msg string) bool {
	t := msg
	if len(t) > 256 || t != strings.ToLower(t) || strings.HasPrefix(t, sdkPrefix) {
		t = normalizedText([]byte(msg))
	}
	switch {
	case strings.HasPrefix(t, "unknown tool"):
		return true
	case strings.HasPrefix(t, "tool ") && (strings.HasSuffix(t, " not found") || strings.Contains(t, " not found:") || strings.HasSuffix(t, " disabled")):
		return true
	}
	return false
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
