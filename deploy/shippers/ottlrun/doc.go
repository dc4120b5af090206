// Package ottlrun runs the OTTL of deploy/shippers/otelcol.yaml (the
// filter/mcp conditions and the transform/mcplens statements) for real,
// with the OpenTelemetry Collector's own OTTL package
// (opentelemetry-collector-contrib/pkg/ottl, the code the collector's
// filter and transform processors run), over the OTLP/JSON samples of
// deploy/shippers/testdata/otel, and expects the events of the Go
// reference (testdata/otel/want). It is a module of its own so that the
// collector's dependencies stay out of mcplens' module; `make
// test-shippers-ottl` runs it.
package ottlrun
