package shippers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/mcplens/mcplens/pipeline/agentgateway"
	"github.com/mcplens/mcplens/pipeline/enginetest"
)

// agentgatewayLines are agentgateway's access-log lines of the reference's
// tests (its documented format), the lines a real agentgateway wrote, and
// lines with what the real ones lack: a
// quoted status, a code given as text, credentials among the headers, no
// trace ids, a request that never got a status, no fields beyond the
// required ones, and lines that cannot be mapped.
func agentgatewayLines(t *testing.T) [][]byte {
	t.Helper()
	raw, err := os.ReadFile("../../pipeline/agentgateway/testdata/access.log")
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	// The lines a real agentgateway wrote (pipeline/agentgateway/testdata/recorded).
	rec, err := os.ReadFile("../../pipeline/agentgateway/testdata/recorded/access.log")
	if err != nil {
		t.Fatal(err)
	}
	lines = append(lines, bytes.Split(bytes.TrimSpace(rec), []byte("\n"))...)
	for _, l := range []string{
		`{"level":"info","time":"2026-11-30T09:13:00.5+01:00","scope":"request","gateway":"agw-2","route":"default/files","http.method":"POST","http.host":"mcp.example.com","http.status":"200","trace.id":"aa01","span.id":"bb01","mcp.method.name":"tools/call","gen_ai.tool.name":"read_file","mcp.error.code":"-32603","mcp.error.message":"Internal error","duration":"7.25ms","rq.headers.all":{"Authorization":"Bearer sk-live-1234","Cookie":"s=1","User-Agent":"claude-code/2.1.3 (darwin)","MCP-Session-Id":"s-77","x-api-key":"k"}}`,
		`{"level":"info","time":"2026-11-30T09:13:01Z","scope":"request","http.method":"POST","http.host":"mcp.example.com","http.path":"/mcp","error":"connection refused","mcp.method":"tools/list","rq.headers.all":{}}`,
		`{"level":"info","time":"2026-11-30T09:13:02Z","scope":"request","http.method":"POST","http.status":503,"error":"upstream connect error","reason":"UpstreamFailure","mcp.target":"jira","mcp.error.code":-32000.0,"duration":"bad"}`,
		`{"level":"info","time":"2026-11-30T09:13:03Z","scope":"request","http.method":"DELETE"}`,
		`{"level":"info","time":"2026-11-30T09:13:04Z","scope":"request","http.method":"POST","http.status":"two hundred"}`,
		`{"level":"info","time":"2026-11-30T09:13:05Z","scope":"request","http.status":200}`,
		`{"level":"info","time":"2026-13-30T09:13:06Z","scope":"request","http.method":"POST","http.status":200}`,
		`{"level":"warn","time":"2026-11-30T09:13:07Z","scope":"xds","message":"config rejected"}`,
	} {
		lines = append(lines, []byte(l))
	}
	return lines
}

// reference maps a line with pipeline/agentgateway: the event, or the
// error that quarantines it; neither for a line that is no request.
func reference(line []byte) (ev []byte, err error, any bool) {
	agentgateway.Format{}.Expand(line, func(l []byte, e error) { ev, err, any = l, e, true })
	return ev, err, any
}

// TestAgentgatewayLua runs agentgateway.lua through fluent-bit-agentgateway.yaml's
// filter on agentgateway's log lines the way Fluent Bit does and requires
// the reference's events: the same event for a request line, unmappable
// where the reference quarantines, dropped where it reads no request.
func TestAgentgatewayLua(t *testing.T) {
	cfg := readFluentBit(t, "fluent-bit-agentgateway.yaml")
	in := plugin(t, cfg.Pipeline.Inputs, "tail")
	lf := plugin(t, cfg.Pipeline.Filters, "lua")
	out := plugin(t, cfg.Pipeline.Outputs, "kafka")
	if in["tag"] != lf["match"] || in["tag"] != out["match"] || out["format"] != "json" {
		t.Errorf("tag %v, lua match %v, kafka match %v format %v: want one tag and JSON", in["tag"], lf["match"], out["match"], out["format"])
	}
	f := loadLuaFilter(t, cfg)
	mapped, unmappable, dropped := 0, 0, 0
	for i, line := range agentgatewayLines(t) {
		want, wantErr, isRequest := reference(line)
		code, got := f.run(t, "agentgateway.access", line)
		var ev map[string]any
		if got != nil {
			if err := json.Unmarshal(got, &ev); err != nil {
				t.Fatal(err)
			}
		}
		switch {
		case !isRequest:
			dropped++
			if code != -1 {
				t.Errorf("line %d is no request, but the filter returned %d: %s", i+1, code, got)
			}
		case wantErr != nil:
			unmappable++
			reason, _ := ev["unmappable"].(string)
			if code != 2 || reason == "" || ev["raw"] == nil {
				t.Errorf("line %d: the reference quarantines it (%v); the filter gave %d %s", i+1, wantErr, code, got)
			}
		default:
			mapped++
			var w map[string]any
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatal(err)
			}
			f.checkIntKeys(t, intsOf(w))
			if !sameEvents(t, got, want) {
				t.Errorf("line %d: agentgateway.lua and pipeline/agentgateway disagree\nlua: %s\ngo:  %s", i+1, got, want)
			}
		}
	}
	if mapped < 8 || unmappable < 3 || dropped < 2 {
		t.Errorf("%d mapped, %d unmappable, %d dropped: the corpus lacks cases", mapped, unmappable, dropped)
	}
}

// intsOf gives the reference event's whole numbers as ints, as
// checkIntKeys expects the Go reference's integers.
func intsOf(ev map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range ev {
		if f, ok := v.(float64); ok && f == float64(int(f)) && k != "duration_ms" {
			out[k] = int(f)
		}
	}
	return out
}

// TestAgentgatewayLuaThroughIngest: the Lua filter's events, read by the
// ingester as contract events, give the same exchanges as `ingest --format
// agentgateway` on the raw lines, and the same lines quarantined.
func TestAgentgatewayLuaThroughIngest(t *testing.T) {
	f := loadLuaFilter(t, readFluentBit(t, "fluent-bit-agentgateway.yaml"))
	lines := agentgatewayLines(t)
	var shipped [][]byte
	for _, line := range lines {
		if code, ev := f.run(t, "agentgateway.access", line); code != -1 {
			shipped = append(shipped, ev)
		}
	}
	direct := enginetest.Run(t, agentgateway.Format{}, lines...)
	viaLua := enginetest.Run(t, nil, shipped...)
	if len(direct.Exchanges) < 8 || len(direct.Exchanges) != len(viaLua.Exchanges) {
		t.Fatalf("%d exchanges read directly, %d through the Lua filter", len(direct.Exchanges), len(viaLua.Exchanges))
	}
	for i := range direct.Exchanges {
		d, l := direct.Exchanges[i], viaLua.Exchanges[i]
		if !reflect.DeepEqual(d, l) {
			dj, _ := json.Marshal(d)
			lj, _ := json.Marshal(l)
			t.Errorf("exchange %d:\ndirect: %s\nlua:    %s", i, dj, lj)
		}
		if strings.Contains(string(mustJSON(t, l)), "sk-live") {
			t.Errorf("exchange %d holds the bearer token", i)
		}
	}
	if len(direct.Quarantine) != len(viaLua.Quarantine) {
		t.Errorf("%d lines quarantined directly, %d through the Lua filter", len(direct.Quarantine), len(viaLua.Quarantine))
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAgentgatewayVRL runs agentgateway.vrl with vrlCommand's binary when
// there is one, on the same lines as TestAgentgatewayLua, and requires the
// reference's events; without one it says so.
func TestAgentgatewayVRL(t *testing.T) {
	cmd := vrlCommand(t)
	if cmd == nil {
		t.Log("unchecked: no VRL runner (MCPLENS_VRL, vrl or vector on PATH), agentgateway.vrl was not run (make test-shippers-vrl runs it)")
		return
	}
	lines := agentgatewayLines(t)
	got := parseEvents(t, runVRL(t, cmd, "agentgateway.vrl", lines))
	if len(got) != len(lines) {
		t.Fatalf("%d events for %d lines", len(got), len(lines))
	}
	for i, line := range lines {
		want, wantErr, isRequest := reference(line)
		ev, _ := got[i].(map[string]any)
		out := mustJSON(t, ev)
		switch {
		case !isRequest:
			if ev["mcplens_drop"] != true {
				t.Errorf("line %d is no request; the program gave %s", i+1, out)
			}
		case wantErr != nil:
			if reason, _ := ev["unmappable"].(string); reason == "" || ev["raw"] == nil {
				t.Errorf("line %d: the reference quarantines it (%v); the program gave %s", i+1, wantErr, out)
			}
		default:
			decodes(t, "VRL output", out)
			if !sameEvents(t, out, want) {
				t.Errorf("line %d: agentgateway.vrl and pipeline/agentgateway disagree\nvrl: %s\ngo:  %s", i+1, out, want)
			}
		}
	}
	t.Logf("ran %s on %d lines", cmd[0], len(lines))
}

// TestVectorAgentgatewayConfig checks the wiring of
// vector-agentgateway.yaml: the remap runs agentgateway.vrl, the filter
// drops what it marks, Kafka gets the rest keyed by a contract field.
func TestVectorAgentgatewayConfig(t *testing.T) {
	raw, err := os.ReadFile("vector-agentgateway.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Transforms map[string]map[string]any `yaml:"transforms"`
		Sinks      map[string]map[string]any `yaml:"sinks"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	remap, filter, kafka := cfg.Transforms["mcp_contract"], cfg.Transforms["mcp_requests"], cfg.Sinks["mcplens_kafka"]
	if remap["type"] != "remap" || !strings.HasSuffix(fmt.Sprint(remap["file"]), "/agentgateway.vrl") || remap["drop_on_error"] != true {
		t.Errorf("remap %v: want agentgateway.vrl, dropping errors", remap)
	}
	if filter["type"] != "filter" || fmt.Sprint(filter["inputs"]) != "[mcp_contract]" || !strings.Contains(fmt.Sprint(filter["condition"]), "mcplens_drop") {
		t.Errorf("filter %v: want the remap's output without what it marks mcplens_drop", filter)
	}
	if fmt.Sprint(kafka["inputs"]) != "[mcp_requests]" || kafka["key_field"] != "session_id" {
		t.Errorf("kafka %v: want the filter's output keyed by session_id", kafka)
	}
	if fmt.Sprint(cfg.Sinks["rejected"]["inputs"]) != "[mcp_contract.dropped]" {
		t.Errorf("rejected %v: want what the program failed on", cfg.Sinks["rejected"])
	}
}
