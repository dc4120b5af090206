package logging

import (
	"time"

	"github.com/rs/zerolog"
)

// Step runs one shutdown step (closing a store, a source) and logs what it
// was, its error if any and how long it took, as every command's shutdown
// does in reverse start order.
func Step(logger zerolog.Logger, what string, step func() error) error {
	start := time.Now()
	err := step()
	logger.Info().Err(err).Int64("took_ms", time.Since(start).Milliseconds()).Msgf("closed %s", what)
	return err
}
