package ottlrun

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/contexts/ottllog"
	"github.com/open-telemetry/opentelemetry-collector-contrib/pkg/ottl/ottlfuncs"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/pdata/plog"
)

const shippers = ".."

// collectorConfig is the part of otelcol.yaml this runs.
type collectorConfig struct {
	Processors struct {
		Filter struct {
			ErrorMode string `yaml:"error_mode"`
			Logs      struct {
				LogRecord []string `yaml:"log_record"`
			} `yaml:"logs"`
		} `yaml:"filter/mcp"`
		Transform struct {
			ErrorMode     string `yaml:"error_mode"`
			LogStatements []struct {
				Context    string   `yaml:"context"`
				Statements []string `yaml:"statements"`
			} `yaml:"log_statements"`
		} `yaml:"transform/mcplens"`
	} `yaml:"processors"`
}

// program is otelcol.yaml's OTTL, parsed as the collector parses it: "$$"
// is the collector's escape of a literal "$" (its ${...} expansion runs
// before OTTL sees the text).
type program struct {
	drop       []*ottl.Condition[*ottllog.TransformContext]
	statements []*ottl.Statement[*ottllog.TransformContext]
}

func load(t *testing.T) program {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(shippers, "otelcol.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg collectorConfig
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	unescape := func(v []string) []string {
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = strings.ReplaceAll(s, "$$", "$")
		}
		return out
	}
	p := cfg.Processors
	if len(p.Filter.Logs.LogRecord) == 0 || len(p.Transform.LogStatements) != 1 || p.Transform.LogStatements[0].Context != "log" {
		t.Fatalf("otelcol.yaml: want filter/mcp log_record conditions and one transform/mcplens log context, got %+v", p)
	}
	parser, err := ottllog.NewParser(ottlfuncs.StandardFuncs[*ottllog.TransformContext](), componenttest.NewNopTelemetrySettings(),
		ottllog.EnablePathContextNames())
	if err != nil {
		t.Fatal(err)
	}
	var prog program
	if prog.drop, err = parser.ParseConditions(unescape(p.Filter.Logs.LogRecord)); err != nil {
		t.Fatalf("filter/mcp: %v", err)
	}
	if prog.statements, err = parser.ParseStatements(unescape(p.Transform.LogStatements[0].Statements)); err != nil {
		t.Fatalf("transform/mcplens: %v", err)
	}
	return prog
}

// run is what the pipeline does to one export request: drop the records a
// filter/mcp condition matches, run every statement on the others (an
// error fails the test: with error_mode ignore the collector would log it
// and go on, and the record would come out wrong), and return each
// remaining record's body as a JSON object with sorted keys, as the Kafka
// exporter's raw encoding writes a map body.
func (p program) run(t *testing.T, logs plog.Logs) [][]byte {
	t.Helper()
	ctx := context.Background()
	var out [][]byte
	for _, rl := range logs.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				tc := ottllog.NewTransformContext(rl, sl, lr)
				dropped := false
				for _, c := range p.drop {
					match, err := c.Eval(ctx, tc)
					if err != nil {
						t.Fatalf("filter/mcp: %v", err)
					}
					dropped = dropped || match
				}
				if dropped {
					continue
				}
				for _, s := range p.statements {
					if _, _, err := s.Execute(ctx, tc); err != nil {
						t.Fatalf("transform/mcplens: %v", err)
					}
				}
				line, err := json.Marshal(lr.Body().AsRaw())
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, line)
			}
		}
	}
	return out
}

// TestOTTLMatchesGoReference: every OTLP/JSON sample through the
// collector's OTTL gives, line for line, the events the Go reference
// (deploy/shippers/otel.go) gives in testdata/otel/want.
func TestOTTLMatchesGoReference(t *testing.T) {
	prog := load(t)
	ins, err := filepath.Glob(filepath.Join(shippers, "testdata", "otel", "in", "*.json"))
	if err != nil || len(ins) == 0 {
		t.Fatalf("no samples: %v", err)
	}
	for _, in := range ins {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			raw, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			logs, err := (&plog.JSONUnmarshaler{}).UnmarshalLogs(raw)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(filepath.Join(shippers, "testdata", "otel", "want", name+".ndjson"))
			if err != nil {
				t.Fatal(err)
			}
			wantLines := bytes.Split(bytes.TrimSpace(want), []byte("\n"))
			got := prog.run(t, logs)
			if len(got) != len(wantLines) {
				t.Errorf("%d events, want %d", len(got), len(wantLines))
			}
			for i := range min(len(got), len(wantLines)) {
				if !sameJSON(t, got[i], wantLines[i]) {
					t.Errorf("event %d:\n got %s\nwant %s", i, got[i], wantLines[i])
				}
			}
		})
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}
