package api

import (
	"net/http"
	"testing"
	"time"
)

func TestNewServerLimits(t *testing.T) {
	cfg := Config{QueryTimeout: 7 * time.Second}
	srv := NewServer(cfg, http.NotFoundHandler())
	if srv.ReadHeaderTimeout != ReadHeaderTimeout || srv.ReadTimeout != ReadTimeout || srv.IdleTimeout != IdleTimeout ||
		srv.MaxHeaderBytes != MaxHeaderBytes || srv.WriteTimeout != 17*time.Second {
		t.Errorf("server limits: %+v", srv)
	}
}
