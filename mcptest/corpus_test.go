package mcptest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/tap"
)

var update = flag.Bool("update", false, "rewrite testdata/real/gosdk.ndjson from a fresh recording")

// corpusPath is the committed recording of Corpus.
var corpusPath = filepath.Join("..", "testdata", "real", "gosdk.ndjson")

// TestCorpus records every scenario of Corpus with real SDK clients, checks
// the events, and compares their shape with the committed recording (or
// rewrites it with -update).
func TestCorpus(t *testing.T) {
	var all []schema.Event
	ran := 0
	for _, sc := range Corpus() {
		t.Run(sc.Name, func(t *testing.T) {
			evs := Run(t.Context(), t, sc)
			checkScenario(t, sc, evs)
			all = append(all, evs...)
			ran++
		})
	}
	checkUniqueIDs(t, all)
	if ran != len(Corpus()) || t.Failed() {
		return // a partial or failed recording is neither compared nor kept
	}
	if *update {
		writeCorpus(t, all)
		return
	}
	committed := readCorpus(t)
	got, want := shapes(all), shapes(committed)
	if !slices.Equal(got, want) {
		t.Errorf("recorded traffic differs from %s (scenario, HTTP method, JSON-RPC method, tool, status, content type):\n%s\n"+
			"If the change is intended (SDK upgrade, new scenario), refresh the corpus with:\n\tgo test ./mcptest -run TestCorpus -update",
			corpusPath, diffShapes(want, got))
	}
}

func writeCorpus(t *testing.T, evs []schema.Event) {
	t.Helper()
	var buf bytes.Buffer
	for _, ev := range evs {
		line, err := tap.MarshalLine(ev)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
	}
	if err := os.MkdirAll(filepath.Dir(corpusPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(corpusPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d events to %s", len(evs), corpusPath)
}

func readCorpus(t *testing.T) []schema.Event {
	t.Helper()
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Fatalf("open corpus: %v\nrecord it with:\n\tgo test ./mcptest -run TestCorpus -update", err)
	}
	defer func() { _ = f.Close() }()
	var evs []schema.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		var ev schema.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s:%d: %v", corpusPath, n, err)
		}
		evs = append(evs, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", corpusPath, err)
	}
	return evs
}

// shapes is what the corpus comparison looks at: everything that does not
// change from one recording to the next.
func shapes(evs []schema.Event) []string {
	out := make([]string, len(evs))
	for i, ev := range evs {
		x := view(ev)
		out[i] = fmt.Sprintf("%s %s %s %s %d %s", x.scenario, ev.HTTPMethod, orDash(x.method), orDash(x.tool), ev.HTTPStatus, orDash(x.ctype))
	}
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// diffShapes lists both sequences side by side from the first difference.
func diffShapes(want, got []string) string {
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "first difference at event %d (committed %d events, recorded %d)\n", i+1, len(want), len(got))
	for j := i; j < max(len(want), len(got)) && j < i+12; j++ {
		w, g := "", ""
		if j < len(want) {
			w = want[j]
		}
		if j < len(got) {
			g = got[j]
		}
		mark := " "
		if w != g {
			mark = "!"
		}
		fmt.Fprintf(&b, "%s %3d committed: %-60s recorded: %s\n", mark, j+1, w, g)
	}
	return b.String()
}

// exchange is an event with its JSON-RPC head decoded.
type exchange struct {
	ev       schema.Event
	scenario string
	step     string
	method   string // JSON-RPC method; "response" for a JSON-RPC response
	tool     string // params.name of tools/call
	params   json.RawMessage
	ctype    string // base media type of the response
}

func view(ev schema.Event) exchange {
	x := exchange{ev: ev}
	_ = json.Unmarshal(ev.Attrs["scenario"], &x.scenario)
	_ = json.Unmarshal(ev.Attrs["step"], &x.step)
	var head struct {
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal([]byte(ev.RequestBody), &head) == nil {
		x.method, x.params = head.Method, head.Params
		if x.method == "" && head.Result != nil {
			x.method = "response"
		}
		var p struct {
			Name string `json:"name"`
		}
		if x.method == "tools/call" && json.Unmarshal(head.Params, &p) == nil {
			x.tool = p.Name
		}
	}
	if ct := ev.ResponseHeaders.Get("content-type"); ct != "" {
		x.ctype, _, _ = mime.ParseMediaType(ct)
	}
	return x
}
