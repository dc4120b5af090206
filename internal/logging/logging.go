// Package logging builds the zerolog logger every mcplens command uses:
// JSON lines (or console text) on stderr, with time and component.
package logging

import (
	"io"

	"github.com/rs/zerolog"
)

// New returns a logger writing to w at level ("debug", "info", ...;
// unknown means info), as JSON lines or, with format "console", as text,
// each entry carrying the time and component.
func New(w io.Writer, level, format, component string) zerolog.Logger {
	lvl, err := zerolog.ParseLevel(level)
	if err != nil {
		lvl = zerolog.InfoLevel
	}
	if format == "console" {
		w = zerolog.ConsoleWriter{Out: w}
	}
	return zerolog.New(w).Level(lvl).With().Timestamp().Str("component", component).Logger()
}
