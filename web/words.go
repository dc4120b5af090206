package web

import "strings"

// adviceWords says a retry advice in plain words, for someone who has
// not read the log contract.
func adviceWords(advice string) string {
	switch advice {
	case "NONE":
		return "Nothing to do: it worked."
	case "RETRY_AFTER":
		return "Rate limited: wait the Retry-After the server sent (or back off), then send it again."
	case "RETRY_IF_SAFE":
		return "Retry only if the call is read-only or idempotent, a bounded number of times with backoff: it may have run already."
	case "FIX_REQUEST":
		return "Do not retry as is: the same request fails again. Fix the arguments, the tool name or the headers."
	case "REAUTHENTICATE":
		return "Get a valid token (or one with the scopes asked for), then retry."
	case "REINITIALIZE":
		return "The session is gone: send initialize again, then retry in the new session."
	case "DO_NOT_RETRY_BLINDLY":
		return "Do not retry blindly: the answer was broken or the tool's failure has unknown meaning; look at the evidence first."
	case "CONTINUE_INPUT":
		return "Not an error: the server waits for input; answer with inputResponses in a new request."
	case "":
		return ""
	}
	return "Advice " + advice + "."
}

// layerWords says what failing at a layer means.
func layerWords(layer string) string {
	switch layer {
	case "transport":
		return "no usable HTTP answer: an HTTP error status, a transport failure or no response"
	case "protocol":
		return "HTTP was fine but the JSON-RPC answer was an error or broken"
	case "application":
		return "the tool ran and reported failure (isError: true)"
	case "stream":
		return "the SSE stream ended before the final answer"
	case "interaction":
		return "the server asked the client for more input (MRTR)"
	}
	return layer
}

// classWords writes an error class as words: RATE_LIMITED, "rate limited".
func classWords(class string) string {
	if class == "" {
		return "(no class)"
	}
	return strings.ToLower(strings.ReplaceAll(class, "_", " "))
}

// okOutcomes are the outcomes that are not failures, as in the API's and
// the dashboards' error rates; INPUT_REQUIRED and CANCELLED (the client's
// decision) and UNVERIFIED (a 2xx whose record shows no more) are no
// success either, and are counted apart.
var okOutcomes = map[string]bool{"SUCCESS": true, "TOOL_SUCCESS": true, "ACCEPTED": true, "INPUT_REQUIRED": true, "CANCELLED": true, "UNVERIFIED": true}

// behind2xx are the failed outcomes that only a 2xx answer can have: an
// HTTP status outside 2xx is always HTTP_ERROR.
var behind2xx = map[string]bool{
	"TOOL_ERROR": true, "JSONRPC_ERROR": true, "MALFORMED_JSON": true, "INVALID_ENVELOPE": true,
	"INVALID_TOOL_RESULT": true, "STREAM_INCOMPLETE": true, "UNEXPECTED_RESPONSE": true,
}

// failureLayers are the layers a failure is stacked by, bottom up.
var failureLayers = []string{"transport", "protocol", "application", "stream"}
