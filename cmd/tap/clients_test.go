package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/api"
	"github.com/mcplens/mcplens/mcptest"
	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/store/duckstore"
)

// TestClientsOneRowPerRealClient sends the sessions of two real Go SDK
// clients through the tap (which, like most gateways, only learns a
// client's name from its initialize; the rest carry the User-Agent
// "Go-http-client"), ingests the recording into DuckDB and asks the API:
// /api/v1/clients has one row per client holding all of its session's
// exchanges, and none for the User-Agent.
func TestClientsOneRowPerRealClient(t *testing.T) {
	ctx := context.Background()
	addr, out, stop := startTap(t)
	for _, name := range []string{"agent-a", "agent-b"} {
		client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.ToolLookup, Arguments: map[string]any{"key": "a"}}); err != nil {
			t.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcptest.ToolAlwaysFails}); err != nil {
			t.Fatal(err)
		}
		cs.Close()
	}
	stop()

	store, err := duckstore.Open(ctx, filepath.Join(t.TempDir(), "mcplens.duckdb"), duckstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src, err := pipeline.NewFileSource(out, pipeline.FileSourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := pipeline.New(pipeline.DefaultConfig(), pipeline.Deps{Source: src, Sink: store, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Run(ctx); err != nil {
		t.Fatal(err)
	}
	var recorded, named int64
	if err := store.DB().QueryRowContext(ctx, "SELECT count(*), count(*) FILTER (WHERE client_name IN ('agent-a', 'agent-b')) FROM exchanges").Scan(&recorded, &named); err != nil {
		t.Fatal(err)
	}

	cfg := api.DefaultConfig()
	cfg.Dev, cfg.RateLimit = true, 0
	a, err := api.New(cfg, api.Deps{Store: store, Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(a)
	defer srv.Close()
	from := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	resp, err := http.Get(srv.URL + "/api/v1/clients?from=" + from)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct {
		Rows []struct {
			GroupKey string `json:"group_key"`
			Total    int64  `json:"total"`
		} `json:"rows"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/api/v1/clients: %d %v", resp.StatusCode, err)
	}
	var keys []string
	var total int64
	for _, r := range body.Rows {
		keys = append(keys, r.GroupKey)
		total += r.Total
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"agent-a", "agent-b"}) || total != recorded || named != recorded {
		t.Errorf("clients %v holding %d of %d exchanges (%d named by the ingester), want one row per client holding all", keys, total, recorded, named)
	}
	if recorded < 10 {
		t.Errorf("only %d exchanges recorded", recorded)
	}
}
