package duckstore

import "github.com/mcplens/mcplens/pipeline"

// The store is an ingest sink; the check lives in a test so that readers of
// the store (cmd/api, cmd/bundle) do not link the ingest engine.
var (
	_ pipeline.Sink      = (*Store)(nil)
	_ pipeline.StateSink = (*Store)(nil)
	_ pipeline.Pinger    = (*Store)(nil)
	_ pipeline.Copier    = (*Store)(nil)
)
