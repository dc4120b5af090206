package agentgateway_test

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline/agentgateway"
	"github.com/mcplens/mcplens/pipeline/enginetest"
)

// TestAccessLog runs access-log lines in agentgateway's JSON format (the
// older mcp.method/mcp.resource.name fields and the newer semconv names,
// with and without the bodies deploy/agentgateway/config.yaml captures)
// through the pipeline.
func TestAccessLog(t *testing.T) {
	raw, err := os.ReadFile("testdata/access.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	res := enginetest.Run(t, agentgateway.Format{}, lines...)
	byID := map[string]int{}
	for i, ex := range res.Exchanges {
		byID[ex.ExchangeID] = i
	}
	f := func(id string, evidence classify.Evidence, outcome classify.Outcome, class classify.ErrorClass, tool, rule string) {
		t.Helper()
		i, ok := byID[id]
		if !ok {
			t.Errorf("%s: no exchange", id)
			return
		}
		ex := res.Exchanges[i]
		if ex.Outcome != outcome || ex.ErrorClass != class || ex.ToolName != tool || ex.Rule != rule || ex.Evidence != evidence {
			t.Errorf("%s: %s/%s tool %q rule %s evidence %s, want %s/%s tool %q rule %s evidence %s",
				id, ex.Outcome, ex.ErrorClass, ex.ToolName, ex.Rule, ex.Evidence, outcome, class, tool, rule, evidence)
		}
	}
	f("ba8e0e8c4138978666eecdc5d494f00a-b9a6ff1a457183f3", classify.EvidenceEnvelope, classify.ToolSuccess, "", "fetch", "envelope-tool-success")
	f("1f0c9a8b7e6d5c4b3a29180706f5e4d3-c3b2a1908f7e6d5c", classify.EvidenceEnvelope, classify.JSONRPCError, classify.UnknownTool, "create_repo", "envelope-jsonrpc-error")
	f("1f0c9a8b7e6d5c4b3a29180706f5e4d4-c3b2a1908f7e6d5d", classify.EvidenceBodies, classify.ToolError, classify.ToolFailed, "list_issues", "sse-tool-iserror")
	f("1f0c9a8b7e6d5c4b3a29180706f5e4d5-c3b2a1908f7e6d5e", classify.EvidenceEnvelope, classify.TransportError, classify.ConnectionRefused, "", "transport-error")
	f("1f0c9a8b7e6d5c4b3a29180706f5e4d6-c3b2a1908f7e6d5f", classify.EvidenceStatusOnly, classify.Success, "", "", "status_only-http-get")
	f("1f0c9a8b7e6d5c4b3a29180706f5e4d7-c3b2a1908f7e6d60", classify.EvidenceEnvelope, classify.HTTPError, classify.RateLimited, "list_issues", "envelope-http-status")
	if len(res.Exchanges) != 6 {
		t.Errorf("%d exchanges, want 6 (the xds line is not a request)", len(res.Exchanges))
	}
	if len(res.Quarantine) != 1 || !strings.Contains(res.Quarantine[0].Reason, "time") || res.Quarantine[0].Position != "test:8" {
		t.Errorf("quarantine %+v: want line 8 for its time", res.Quarantine)
	}
}

func FuzzEvent(f *testing.F) {
	raw, _ := os.ReadFile("testdata/access.log")
	for _, l := range bytes.Split(raw, []byte("\n")) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		_, _ = agentgateway.Event(line)
	})
}

// TestShippedConfig: deploy/agentgateway/config.yaml is YAML, logs JSON,
// and adds every field the mapping reads beyond agentgateway's own.
func TestShippedConfig(t *testing.T) {
	raw, err := os.ReadFile("../../deploy/agentgateway/config.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Config struct {
			Logging struct {
				Format string `yaml:"format"`
			} `yaml:"logging"`
		} `yaml:"config"`
		FrontendPolicies struct {
			AccessLog struct {
				Add map[string]string `yaml:"add"`
			} `yaml:"accessLog"`
		} `yaml:"frontendPolicies"`
		Binds []struct {
			Listeners []struct {
				Routes []struct {
					Backends []map[string]any `yaml:"backends"`
				} `yaml:"routes"`
			} `yaml:"listeners"`
		} `yaml:"binds"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Config.Logging.Format != "json" {
		t.Errorf("logging format %q, want json", cfg.Config.Logging.Format)
	}
	if len(cfg.Binds) == 0 || len(cfg.Binds[0].Listeners) == 0 || len(cfg.Binds[0].Listeners[0].Routes) == 0 ||
		len(cfg.Binds[0].Listeners[0].Routes[0].Backends) == 0 || cfg.Binds[0].Listeners[0].Routes[0].Backends[0]["mcp"] == nil {
		t.Fatal("no route to an MCP backend")
	}
	add := cfg.FrontendPolicies.AccessLog.Add
	for _, k := range []string{"mcplens.request_body", "mcplens.response_body", "mcplens.response_content_type", "rq.headers.all"} {
		if add[k] == "" {
			t.Errorf("access log does not add %s", k)
		}
	}
}
