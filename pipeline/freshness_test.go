package pipeline_test

import (
	"io"
	"testing"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/enginetest"
)

// BenchmarkFreshness is [enginetest.Freshness] into the stdout sink
// (encoding every record, to io.Discard): what the engine itself adds.
// store/duckstore and store/chstore run the same into their stores.
func BenchmarkFreshness(b *testing.B) {
	enginetest.Freshness(b, func() (pipeline.Sink, func()) {
		return pipeline.NewStdoutSink(io.Discard, io.Discard), func() {}
	})
}
