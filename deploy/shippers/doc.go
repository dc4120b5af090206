// Package shippers is the reference for the log-shipper examples beside it:
// how a gateway's JSON access log ([Gateway]) and OpenTelemetry log records
// that follow the MCP semantic conventions ([OTel]) become contract-v1 events
// on Kafka.
//
// The shipper configurations encode the same mapping in their own languages:
// Vector in gateway.vrl (vector.yaml), Fluent Bit in gateway.lua
// (fluent-bit.yaml) and the OpenTelemetry Collector in the transform
// processor of otelcol.yaml. The tests hold each of them to the field tables
// [GatewayFields] and [OTelFields], run the Lua program on the sample lines
// in testdata/, run the VRL programs with vrlrun (make test-shippers-vrl)
// or a vrl or vector binary on PATH, and decode every mapped event with the
// ingester's own decoder.
//
// The functions here are pure and safe for concurrent use; they are not on
// the ingest path (the ingester reads contract events, never these formats).
package shippers
