package classify

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeDocumentsEveryClass keeps the README's outcome and error class
// tables in step with the code: each value needs a table row of its own.
func TestReadmeDocumentsEveryClass(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	row := func(name string) bool { return strings.Contains(readme, "| `"+name+"` |") }
	for _, o := range Outcomes {
		if !row(string(o)) {
			t.Errorf("README has no table row for outcome %s", o)
		}
	}
	for _, c := range ErrorClasses {
		if !row(string(c)) {
			t.Errorf("README has no table row for error class %s", c)
		}
	}
	for _, a := range []Advice{AdviceNone, AdviceRetryAfter, AdviceRetryIfSafe, AdviceFixRequest, AdviceReauthenticate, AdviceReinitialize, AdviceDoNotRetry, AdviceContinueInput} {
		if !row(string(a)) {
			t.Errorf("README has no table row for retry advice %s", a)
		}
	}
}
