package pipeline

// Format reads a log format other than contract-v1 (agentgateway access
// logs, OTLP traces). The engine hands it each raw message; Expand calls
// emit once for every contract-v1 line the message holds: with err nil and
// the line, or with the part that cannot be mapped (line is then its raw
// bytes) and why, which the engine quarantines at the message's position.
// A message may hold many events (an OTLP export request carries many
// spans) or none (spans that are not MCP traffic): the message's position
// is committed once all of them are stored. Expand is called from the
// engine's one goroutine; emit must not be retained.
type Format interface {
	Expand(value []byte, emit func(line []byte, err error))
}
