package mcptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"
)

// WaitListening waits until something accepts TCP connections on addr
// (HOST:PORT), polling every 100 ms, or ctx ends. The recorders use it for
// the servers and gateways they start.
func WaitListening(ctx context.Context, addr string) error {
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			return c.Close()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nothing listened on %s: %w", addr, errors.Join(err, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
