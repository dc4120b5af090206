package api

import (
	"net/http"
	"time"
)

// Server limits, the same wherever the API is served (cmd/api and
// ingest --api-listen): slow clients cannot hold connections open, and a
// response may take the query deadline plus time to write it.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 10 * time.Second
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 16 << 10
	// writeSlack is how long a response may take to write after its query
	// deadline.
	writeSlack = 10 * time.Second
)

// NewServer returns the HTTP server for an API handler built with cfg,
// with the read, write and idle timeouts and the header limit above.
func NewServer(cfg Config, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      cfg.QueryTimeout + writeSlack,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}
