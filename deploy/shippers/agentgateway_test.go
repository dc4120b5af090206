package shippers

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/pipeline/agentgateway"
	"github.com/mcplens/mcplens/pipeline/enginetest"
)

// agentgatewayLines are agentgateway's access-log lines of the reference's
// tests (its real format) and lines with what the real ones lack: a
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
