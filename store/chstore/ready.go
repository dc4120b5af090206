package chstore

import (
	"context"
	"fmt"
)

// Ready reports whether the server answers a ping and the database
// exists: what an ingester's /readyz follows. It is deliberately not a
// Ping method: a pipeline.Pinger would make the engine take a failed write
// to a reachable server for refused rows and isolate them, where this
// store retries a write itself (see insertWithRetry).
func (s *Store) Ready(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return s.explain(fmt.Errorf("ping clickhouse: %w", err))
	}
	return s.ready(ctx)
}
