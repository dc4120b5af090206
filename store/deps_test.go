package store

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering holds the layout to its promise: the readers (api, tap,
// bundle) link no ingest engine, and the stores import only schema,
// queries, classify and internal/secret of this module. Two later changes
// broke the first silently (a compile-time interface check in a store, a
// terminal check borrowed from internal/progress); this test fails instead.
func TestLayering(t *testing.T) {
	const mod = "github.com/mcplens/mcplens/"
	deps := func(pkgs ...string) []string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list: %v\n%s", err, out)
		}
		return strings.Fields(string(out))
	}
	for _, p := range deps("../cmd/api", "../cmd/tap", "../cmd/bundle") {
		if p == mod+"pipeline" || strings.HasPrefix(p, mod+"pipeline/") {
			t.Errorf("api, tap or bundle links %s", p)
		}
	}
	allowed := map[string]bool{"classify": true, "schema": true, "queries": true, "internal/secret": true,
		"store/duckstore": true, "store/chstore": true}
	for _, p := range deps("./duckstore", "./chstore") {
		if rest, ok := strings.CutPrefix(p, mod); ok && !allowed[rest] {
			t.Errorf("a store imports %s", p)
		}
	}
}
