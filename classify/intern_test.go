package classify

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// TestInternSameBytesSameString: a name is returned as written, the same
// string for the same bytes while its slot holds it, and a collision or a
// long name still gives the right text.
func TestInternSameBytesSameString(t *testing.T) {
	if got := intern(nil); got != "" {
		t.Fatalf("intern(nil) = %q", got)
	}
	a := intern([]byte("tools/call"))
	b := intern([]byte("tools/call"))
	if a != "tools/call" || b != a {
		t.Fatalf("intern gave %q and %q", a, b)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = intern([]byte("tools/call")) }); allocs != 0 {
		t.Errorf("interning a held name allocates %.0f times", allocs)
	}
	// Many distinct names (collisions in 512 slots) and a long one.
	for i := range 5000 {
		name := "tool-" + strings.Repeat("x", i%70) + string(rune('a'+i%26))
		if got := intern([]byte(name)); got != name {
			t.Fatalf("intern(%q) = %q", name, got)
		}
	}
	// Concurrent use returns the right text (go test -race checks the rest).
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				name := []byte("m/" + string(rune('a'+(i+g)%26)))
				if got := intern(name); got != string(name) {
					t.Errorf("intern(%q) = %q", name, got)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestRulesCoverEveryRuleCall: every rule(via, "what") the classifier
// writes has its string built ahead in rules (else naming it allocates on
// every exchange), and rule builds the same text either way.
func TestRulesCoverEveryRuleCall(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`rule\(via, "([a-z-]+)"\)`)
	n := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			n++
			for _, via := range vias {
				if _, ok := rules[[2]string{via, m[1]}]; !ok {
					t.Errorf("%s: rule(via, %q) is not in rules", f, m[1])
				}
			}
		}
	}
	if n < 10 {
		t.Fatalf("found %d rule calls; the pattern no longer matches the code", n)
	}
	if got := rule("json", "result"); got != "json-result" {
		t.Errorf("rule(json, result) = %q", got)
	}
	if got := rule("other", "result"); got != "other-result" {
		t.Errorf("rule(other, result) = %q", got)
	}
}
