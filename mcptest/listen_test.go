package mcptest

import (
	"context"
	"net"
	"testing"
	"time"
)

func TestWaitListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := WaitListening(context.Background(), addr); err != nil {
		t.Fatalf("listening %s: %v", addr, err)
	}
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if err := WaitListening(ctx, addr); err == nil {
		t.Fatalf("closed %s: want an error once the context ends", addr)
	}
}
