package shippers

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestOTelGolden maps every OTLP/JSON sample with the Go reference,
// compares with testdata/otel/want and decodes each event with the
// ingester's decoder.
func TestOTelGolden(t *testing.T) {
	for _, s := range samples(t, "otel") {
		t.Run(s.name, func(t *testing.T) {
			events, err := OTel(compact(t, s.in))
			if err != nil {
				t.Fatal(err)
			}
			if len(events) == 0 {
				t.Fatal("no MCP records mapped")
			}
			for _, ev := range events {
				line, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				decodes(t, "Go reference", line)
			}
			checkGolden(t, s.want, events)
		})
	}
}

func TestOTelNotOTLP(t *testing.T) {
	if _, err := OTel([]byte(`{"resourceLogs":"x"}`)); err == nil {
		t.Error("OTel accepted a malformed export")
	}
}

// otelcol is the part of otelcol.yaml the tests read.
type otelcol struct {
	Receivers  map[string]any            `yaml:"receivers"`
	Processors map[string]map[string]any `yaml:"processors"`
	Exporters  map[string]map[string]any `yaml:"exporters"`
	Service    struct {
		Pipelines map[string]struct {
			Receivers  []string `yaml:"receivers"`
			Processors []string `yaml:"processors"`
			Exporters  []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

func readOtelcol(t *testing.T) otelcol {
	t.Helper()
	raw, err := os.ReadFile("otelcol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cfg otelcol
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("otelcol.yaml: %v", err)
	}
	return cfg
}

// statements returns the OTTL statements of the transform processor, with
// the collector's "$$" escape undone.
func statements(t *testing.T, cfg otelcol) []string {
	t.Helper()
	var out []string
	for name, p := range cfg.Processors {
		if !strings.HasPrefix(name, "transform") {
			continue
		}
		groups, _ := p["log_statements"].([]any)
		for _, g := range groups {
			for _, s := range g.(map[string]any)["statements"].([]any) {
				out = append(out, strings.ReplaceAll(fmt.Sprint(s), "$$", "$"))
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("otelcol.yaml: no transform processor with log_statements")
	}
	return out
}

var (
	ottlTarget   = regexp.MustCompile(`^set\(log\.body\["([^"]+)"\]`)
	ottlAttr     = regexp.MustCompile(`\blog\.attributes\["([^"]+)"\]`)
	ottlResource = regexp.MustCompile(`\bresource\.attributes\["([^"]+)"\]`)
	ottlField    = regexp.MustCompile(`\blog\.(time|observed_time|trace_id|span_id|event_name)\b`)
	ottlKeepKeys = regexp.MustCompile(`^keep_keys\(log\.cache\["attrs"\], \[(.*)\]\)$`)
	ottlHeaders  = regexp.MustCompile(`^keep_matching_keys\(log\.cache\["\w+"\], "\^http\\\\\.(request|response)\\\\\.header\\\\\."\)$`)
	ottlDrop     = regexp.MustCompile(`^delete_matching_keys\(log\.cache\["(req_h|resp_h)"\], "\^\(([^)]*)\)\$"\)$`)
)

// TestOTelCollectorEncodesTheTable: the transform processor sets exactly
// the contract fields of OTelFields from exactly its inputs, keeps
// OTelAttrs and drops the same headers as the gateway mapping.
func TestOTelCollectorEncodesTheTable(t *testing.T) {
	stmts := statements(t, readOtelcol(t))
	var targets, sources, kept []string
	drops := map[string][]string{}
	for _, s := range stmts {
		if m := ottlTarget.FindStringSubmatch(s); m != nil {
			targets = append(targets, m[1])
		}
		for _, m := range ottlAttr.FindAllStringSubmatch(s, -1) {
			sources = append(sources, "attributes["+m[1]+"]")
		}
		for _, m := range ottlResource.FindAllStringSubmatch(s, -1) {
			sources = append(sources, "resource["+m[1]+"]")
		}
		for _, m := range ottlField.FindAllStringSubmatch(s, -1) {
			sources = append(sources, m[1])
		}
		if s == `set(log.cache["body"], log.body)` {
			sources = append(sources, "body")
		}
		if m := ottlHeaders.FindStringSubmatch(s); m != nil {
			sources = append(sources, "attributes[http."+m[1]+".header.*]")
		}
		if m := ottlKeepKeys.FindStringSubmatch(s); m != nil {
			for _, k := range strings.Split(m[1], ",") {
				k = strings.Trim(strings.TrimSpace(k), `"`)
				kept = append(kept, k)
				sources = append(sources, "attributes["+k+"]")
			}
		}
		if m := ottlDrop.FindStringSubmatch(s); m != nil {
			drops[m[1]] = strings.Split(m[2], "|")
		}
	}
	sameSet(t, "fields set", targets, Names(OTelFields))
	sameSet(t, "inputs read", sources, Sources(OTelFields))
	if !slices.Equal(kept, OTelAttrs) {
		t.Errorf("attrs kept %q, want %q", kept, OTelAttrs)
	}
	sameSet(t, "request headers dropped", drops["req_h"], DroppedRequestHeaders)
	sameSet(t, "response headers dropped", drops["resp_h"], DroppedResponseHeaders)
	// The body is replaced by the event only after everything it feeds was
	// kept aside.
	replaced := slices.Index(stmts, `set(log.body, ParseJSON("{}"))`)
	if replaced < 0 || replaced < slices.Index(stmts, `set(log.cache["body"], log.body)`) {
		t.Errorf("the body must be saved to log.cache before it is replaced by the event")
	}
	for _, s := range stmts[:max(replaced, 0)] {
		if strings.Contains(s, `set(log.body[`) {
			t.Errorf("%q runs before the body is replaced", s)
		}
	}
}

// TestOTelCollectorPipeline checks the wiring: every component a pipeline
// names is defined, MCP records are filtered by event name, and Kafka gets
// the body as JSON (raw encoding), partitioned so both halves meet.
func TestOTelCollectorPipeline(t *testing.T) {
	cfg := readOtelcol(t)
	p, ok := cfg.Service.Pipelines["logs/mcplens"]
	if !ok {
		t.Fatal("otelcol.yaml: no logs/mcplens pipeline")
	}
	for _, r := range p.Receivers {
		if _, ok := cfg.Receivers[r]; !ok {
			t.Errorf("receiver %s is not defined", r)
		}
	}
	for _, name := range p.Processors {
		if _, ok := cfg.Processors[name]; !ok {
			t.Errorf("processor %s is not defined", name)
		}
	}
	if i, j := slices.Index(p.Processors, "filter/mcp"), slices.Index(p.Processors, "transform/mcplens"); i < 0 || j < i {
		t.Errorf("processors %v: want filter/mcp before transform/mcplens", p.Processors)
	}
	filter, _ := json.Marshal(cfg.Processors["filter/mcp"])
	for _, name := range []string{EventRequest, EventResponse} {
		if !strings.Contains(string(filter), `\"`+name+`\"`) {
			t.Errorf("filter/mcp does not name %s", name)
		}
	}
	for _, name := range p.Exporters {
		exp, ok := cfg.Exporters[name]
		if !ok {
			t.Errorf("exporter %s is not defined", name)
			continue
		}
		logs, _ := exp["logs"].(map[string]any)
		if logs["encoding"] != "raw" {
			t.Errorf("exporter %s: logs encoding %v, want raw (the body map as one JSON object)", name, logs["encoding"])
		}
		if exp["partition_logs_by_trace_id"] != true {
			t.Errorf("exporter %s: partition_logs_by_trace_id must be true so a request and its response share a partition", name)
		}
	}
}
