package mcptest

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestMain fails the package when tests leave goroutines of the SDK, of
// mcplens or of net/http connections running.
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		if leaked := leakedGoroutines(5 * time.Second); leaked != "" {
			fmt.Fprintf(os.Stderr, "goroutines left running after the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

// leakedGoroutines waits up to timeout for the suspicious goroutines to end
// and returns the stacks of those still running.
func leakedGoroutines(timeout time.Duration) string {
	suspicious := []string{"modelcontextprotocol/go-sdk", "mcplens/mcplens", "net/http.(*conn).serve", "net/http.(*persistConn)"}
	deadline := time.Now().Add(timeout)
	for {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		var leaked []string
		for i, g := range strings.Split(string(buf), "\n\n") {
			if i == 0 {
				continue // this goroutine
			}
			for _, s := range suspicious {
				if strings.Contains(g, s) {
					leaked = append(leaked, g)
					break
				}
			}
		}
		if len(leaked) == 0 || time.Now().After(deadline) {
			return strings.Join(leaked, "\n\n")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
