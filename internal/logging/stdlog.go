package logging

import (
	"bytes"
	"log"

	"github.com/rs/zerolog"
)

// lineWriter logs every line written to it as one entry: the writer under
// a standard library *log.Logger.
type lineWriter struct {
	logger zerolog.Logger
	level  zerolog.Level
}

func (w lineWriter) Write(p []byte) (int, error) {
	for line := range bytes.SplitSeq(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if e := w.logger.WithLevel(w.level); e.Enabled() {
			e.Msg(string(bytes.TrimRight(line, "\r")))
		}
	}
	return len(p), nil
}

// StdLogger returns a standard library *log.Logger that logs each line as
// one zerolog entry of logger at level, with key "logger" saying whose
// line it is: for http.Server.ErrorLog, httputil.ReverseProxy.ErrorLog
// and libraries that take a *log.Logger. It is safe for concurrent use.
func StdLogger(logger zerolog.Logger, level zerolog.Level, from string) *log.Logger {
	return log.New(lineWriter{logger.With().Str("logger", from).Logger(), level}, "", 0)
}

// CaptureStdlib sends the standard library's default logger (log.Printf
// of any library without a logger of its own) through logger as warnings,
// so that stderr holds only zerolog's JSON lines. Every command's main
// calls it once, right after building its logger.
func CaptureStdlib(logger zerolog.Logger) {
	log.SetFlags(0)
	log.SetPrefix("")
	log.SetOutput(lineWriter{logger.With().Str("logger", "log").Logger(), zerolog.WarnLevel})
}
