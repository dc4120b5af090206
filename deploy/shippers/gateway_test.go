package shippers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/mcplens/mcplens/classify"
	"github.com/mcplens/mcplens/pipeline/enginetest"
	"github.com/mcplens/mcplens/schema"
)

// TestGatewayGolden maps every sample with the Go reference, compares with
// testdata/gateway/want and decodes each event with the ingester's decoder.
func TestGatewayGolden(t *testing.T) {
	for _, s := range samples(t, "gateway") {
		t.Run(s.name, func(t *testing.T) {
			ev, err := Gateway(compact(t, s.in))
			if err != nil {
				t.Fatal(err)
			}
			line, err := json.Marshal(ev)
			if err != nil {
				t.Fatal(err)
			}
			decodes(t, "Go reference", line)
			checkGolden(t, s.want, []map[string]any{ev})
		})
	}
}

func TestGatewayNotJSON(t *testing.T) {
	for _, line := range []string{"", "GET /mcp 200", "[1,2]", "null"} {
		if _, err := Gateway([]byte(line)); err == nil {
			t.Errorf("Gateway(%q) succeeded", line)
		}
	}
}

// Program text: comments out, then the fields a program assigns and the
// access-log fields it reads.
var (
	vrlComment = regexp.MustCompile(`(?m)#.*$`)
	vrlTarget  = regexp.MustCompile(`(?:^|[\s{;])\.(?:"([^"]+)"|([A-Za-z_]\w*))\s*=[^=]`)
	vrlSource  = regexp.MustCompile(`\bin\.(?:"([^"]+)"|(\w+))`)
	vrlFlag    = regexp.MustCompile(`includes\(flags, "(\w+)"\)\s*\{\s*"(\w+)"`)
	luaComment = regexp.MustCompile(`(?m)--.*$`)
	luaTarget  = regexp.MustCompile(`\bout(?:\["([^"]+)"\]|\.(\w+))\s*=[^=]`)
	luaSource  = regexp.MustCompile(`\brec(?:\["([^"]+)"\]|\.(\w+))`)
	luaFlag    = regexp.MustCompile(`\{\s*"(\w+)",\s*"(\w+)"\s*\}`)
)

func matches(re *regexp.Regexp, text string) []string {
	var out []string
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		for _, g := range m[1:] {
			if g != "" {
				out = append(out, g)
				break
			}
		}
	}
	return out
}

func flagPairs(re *regexp.Regexp, text string) []FlagRule {
	var out []FlagRule
	for _, m := range re.FindAllStringSubmatch(text, -1) {
		out = append(out, FlagRule{m[1], m[2]})
	}
	return out
}

// sameSet compares two name lists as sets and reports the difference.
func sameSet(t *testing.T, what string, got, want []string) {
	t.Helper()
	g, w := slices.Compact(slices.Sorted(slices.Values(got))), slices.Compact(slices.Sorted(slices.Values(want)))
	if !slices.Equal(g, w) {
		var extra, missing []string
		for _, x := range g {
			if !slices.Contains(w, x) {
				extra = append(extra, x)
			}
		}
		for _, x := range w {
			if !slices.Contains(g, x) {
				missing = append(missing, x)
			}
		}
		t.Errorf("%s: not in the Go table: %q; missing: %q", what, extra, missing)
	}
}

func readText(t *testing.T, path string, comment *regexp.Regexp) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return comment.ReplaceAllString(string(raw), "")
}

// TestGatewayProgramsEncodeTheTable: gateway.vrl and gateway.lua assign
// exactly the contract fields of GatewayFields, read exactly its inputs,
// drop the same headers and apply the same response-flag rules in the same
// order.
func TestGatewayProgramsEncodeTheTable(t *testing.T) {
	flags := append(slices.Clone(TransportFlags), StreamFlags...)
	for _, p := range []struct {
		file                    string
		comment, target, source *regexp.Regexp
		flag                    *regexp.Regexp
		flagOrder               []FlagRule
	}{
		{"gateway.vrl", vrlComment, vrlTarget, vrlSource, vrlFlag, flags},
		{"gateway.lua", luaComment, luaTarget, luaSource, luaFlag, flags},
	} {
		t.Run(p.file, func(t *testing.T) {
			text := readText(t, p.file, p.comment)
			sameSet(t, "fields assigned", matches(p.target, text), Names(GatewayFields))
			sameSet(t, "access-log fields read", matches(p.source, text), Sources(GatewayFields))
			for _, h := range append(slices.Clone(DroppedRequestHeaders), DroppedResponseHeaders...) {
				if !strings.Contains(text, `"`+h+`"`) {
					t.Errorf("does not drop header %q", h)
				}
			}
			if got := flagPairs(p.flag, text); !slices.Equal(got, p.flagOrder) {
				t.Errorf("response-flag rules %v, want %v", got, p.flagOrder)
			}
		})
	}
}

// TestVectorConfig checks the wiring of vector.yaml: file source, remap of
// gateway.vrl that drops what it cannot map, Kafka keyed by a contract
// field with JSON records.
func TestVectorConfig(t *testing.T) {
	raw, err := os.ReadFile("vector.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Sources    map[string]map[string]any `yaml:"sources"`
		Transforms map[string]map[string]any `yaml:"transforms"`
		Sinks      map[string]map[string]any `yaml:"sinks"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("vector.yaml: %v", err)
	}
	var remap, kafka map[string]any
	var remapName string
	for name, tr := range cfg.Transforms {
		if tr["type"] == "remap" {
			remap, remapName = tr, name
		}
	}
	for _, s := range cfg.Sinks {
		if s["type"] == "kafka" {
			kafka = s
		}
	}
	if remap == nil || kafka == nil {
		t.Fatalf("vector.yaml needs a remap transform and a kafka sink")
	}
	if f := fmt.Sprint(remap["file"]); !strings.HasSuffix(f, "/gateway.vrl") {
		t.Errorf("remap file %q, want gateway.vrl", f)
	}
	for _, in := range remap["inputs"].([]any) {
		if src, ok := cfg.Sources[fmt.Sprint(in)]; !ok || src["type"] != "file" {
			t.Errorf("remap input %v is not a file source", in)
		}
	}
	if remap["drop_on_abort"] != true || remap["drop_on_error"] != true {
		t.Errorf("remap must drop lines it cannot map (drop_on_error, drop_on_abort), not send them on")
	}
	if !slices.Contains(kafka["inputs"].([]any), any(remapName)) {
		t.Errorf("kafka sink inputs %v, want %s", kafka["inputs"], remapName)
	}
	if enc, _ := kafka["encoding"].(map[string]any); enc["codec"] != "json" {
		t.Errorf("kafka encoding %v, want codec json", kafka["encoding"])
	}
	if key := fmt.Sprint(kafka["key_field"]); !slices.Contains(Names(GatewayFields), key) {
		t.Errorf("kafka key_field %q is not a contract field of the mapping", key)
	}
}

// vrlCommand runs VRL programs: $MCPLENS_VRL when set (vrlrun, which
// make test-shippers-vrl builds, or any binary taking the vrl CLI's flags),
// else the vrl CLI (or vector vrl) on PATH, nil without one; with
// MCPLENS_REQUIRE_VRL=1 (make test-shippers-vrl) a missing one fails the
// test instead.
func vrlCommand(t *testing.T) []string {
	t.Helper()
	if p := os.Getenv("MCPLENS_VRL"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("MCPLENS_VRL=%s: %v (make vrlrun builds it)", p, err)
		}
		return []string{p}
	}
	if p, err := exec.LookPath("vrl"); err == nil {
		return []string{p}
	}
	if p, err := exec.LookPath("vector"); err == nil {
		return []string{p, "vrl"}
	}
	if os.Getenv("MCPLENS_REQUIRE_VRL") == "1" {
		t.Fatal("MCPLENS_REQUIRE_VRL=1 but MCPLENS_VRL is not set and no vrl or vector binary is on PATH (make test-shippers-vrl builds and sets one)")
	}
	return nil
}

// runVRL runs a VRL program over log lines as Vector's file source hands
// them over ({"message": line} events) and returns what the CLI prints:
// each event after the program, one a line; an event whose run fails
// prints its error instead, which the JSON decoding then rejects.
func runVRL(t *testing.T, cmd []string, program string, lines [][]byte) []byte {
	t.Helper()
	var input bytes.Buffer
	for _, line := range lines {
		msg, _ := json.Marshal(map[string]string{"message": string(line)})
		input.Write(append(msg, '\n'))
	}
	in := t.TempDir() + "/in.ndjson"
	if err := os.WriteFile(in, input.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	run := exec.Command(cmd[0], append(cmd[1:], "--print-object", "--input", in, "--program", program)...)
	run.Env = append(os.Environ(), "NO_COLOR=1")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", run.Args, err, out)
	}
	return out
}

// TestGatewayVRL runs gateway.vrl with vrlCommand's binary when there is
// one and requires the Go reference's events; without one it says so and
// the text check above stands alone.
func TestGatewayVRL(t *testing.T) {
	cmd := vrlCommand(t)
	if cmd == nil {
		t.Log("unchecked: no VRL runner (MCPLENS_VRL, vrl or vector on PATH), gateway.vrl was not run (make test-shippers-vrl runs it)")
		return
	}
	var lines [][]byte
	var want []map[string]any
	for _, s := range samples(t, "gateway") {
		line := compact(t, s.in)
		lines = append(lines, line)
		ev, err := Gateway(line)
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}
	out := runVRL(t, cmd, "gateway.vrl", lines)
	var wantLines bytes.Buffer
	for _, ev := range want {
		line, _ := json.Marshal(ev)
		wantLines.Write(append(line, '\n'))
	}
	if !sameEvents(t, out, wantLines.Bytes()) {
		t.Errorf("gateway.vrl and gateway.go disagree\nvrl:\n%s\ngo:\n%s", out, wantLines.Bytes())
	}
	for _, ev := range parseEvents(t, out) {
		line, _ := json.Marshal(ev)
		decodes(t, "VRL output", line)
	}
	t.Logf("ran %s on %d samples", cmd[0], len(want))
}

func FuzzGateway(f *testing.F) {
	ins, _ := filepath.Glob(filepath.Join("testdata", "gateway", "in", "*.json"))
	for _, in := range ins {
		raw, _ := os.ReadFile(in)
		f.Add(raw)
	}
	f.Add([]byte(`{"status":1e400,"response_flags":",,-,","request_headers":{"A":null}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		ev, err := Gateway(line)
		if err != nil {
			return
		}
		if _, err := json.Marshal(ev); err != nil {
			t.Fatalf("mapped event is not JSON: %v", err)
		}
	})
}

// TestGatewayCorpusClassification runs the whole gateway corpus, mapped by
// the Go reference, through the ingest pipeline and checks what the
// defects of issue 15 were about: a quoted status is a call like any other,
// a client's disconnect is its timeout, a request the gateway could not
// send on ran no tool, and an unmappable line is quarantined with the
// mapping's reason.
func TestGatewayCorpusClassification(t *testing.T) {
	var lines [][]byte
	for _, s := range samples(t, "gateway") {
		ev, err := Gateway(compact(t, s.in))
		if err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(ev)
		lines = append(lines, line)
	}
	res := enginetest.Run(t, nil, lines...)
	byID := map[string]schema.Exchange{}
	for _, ex := range res.Exchanges {
		byID[ex.ExchangeID] = ex
	}
	f := func(id string, outcome classify.Outcome, class classify.ErrorClass, risk classify.Risk) {
		t.Helper()
		ex, ok := byID[id]
		if !ok {
			t.Errorf("%s: no exchange", id)
			return
		}
		if ex.Outcome != outcome || ex.ErrorClass != class || ex.SideEffectRisk != risk {
			t.Errorf("%s: %s/%s risk %s, want %s/%s risk %s", id, ex.Outcome, ex.ErrorClass, ex.SideEffectRisk, outcome, class, risk)
		}
	}
	f("9b1f0c7a6e5d4c3b2a1908f7e6d5c4b3", classify.ToolSuccess, "", classify.RiskPossible)                             // nginx "status":"200"
	f("9b1f0c7a6e5d4c3b2a1908f7e6d5c4b4", classify.TransportError, classify.ClientAbort, classify.RiskUnknown)         // nginx 499: the client went away, as cmd/tap records it
	f("9b1f0c7a6e5d4c3b2a1908f7e6d5c4b5", classify.ToolError, classify.ToolFailed, classify.RiskPossible)              // nginx SSE, quoted status
	f("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", classify.TransportError, classify.ConnectionRefused, classify.RiskNone)  // UF,URX 503
	f("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4e", classify.TransportError, classify.ConnectionRefused, classify.RiskNone)  // UH 503
	f("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4f", classify.TransportError, classify.ClientAbort, classify.RiskUnknown)     // DC, no status: the client went away
	f("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c50", classify.TransportError, classify.ConnectionReset, classify.RiskUnknown) // UR 503
	f("0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c51", classify.HTTPError, classify.ServerError, classify.RiskUnknown)          // URX: the server's 503
	f("e1f2a3b4-c5d6-4e7f-8091-a2b3c4d5e6f7", classify.TransportError, classify.Timeout, classify.RiskUnknown)         // UT 504
	f("5d6e7f80-1a2b-4c3d-9e8f-7a6b5c4d3e2f", classify.StreamIncomplete, classify.ClientAbort, classify.RiskUnknown)   // DC on SSE
	reasons := map[string]bool{}
	for _, q := range res.Quarantine {
		reasons[q.Reason] = true
	}
	for _, want := range []string{"the shipper could not map the line: status - is not an HTTP status", "the shipper could not map the line: method missing"} {
		if !reasons[want] {
			t.Errorf("no quarantine row %q in %v", want, reasons)
		}
	}
	if got := len(res.Exchanges) + len(res.Quarantine); got != len(lines) {
		t.Errorf("%d exchanges + %d quarantined for %d lines", len(res.Exchanges), len(res.Quarantine), len(lines))
	}
}
