// Package leaktest finds goroutines a package's tests left running: the
// one goroutine-leak check that TestMain functions share.
package leaktest

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// Wait waits up to wait for every goroutine whose stack names one of
// needles (a package path such as "mcplens/mcplens/api.", a function such
// as "net/http.(*Server).Serve") to end, and returns an error listing
// those still running. The goroutine running TestMain and this check are
// never counted.
func Wait(wait time.Duration, needles ...string) error {
	deadline := time.Now().Add(wait)
	for {
		leaked := running(needles)
		if len(leaked) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("goroutines still running after the tests:\n\n%s", strings.Join(leaked, "\n\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func running(needles []string) []string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var leaked []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "leaktest.running") || strings.Contains(g, ".TestMain(") {
			continue
		}
		for _, n := range needles {
			if strings.Contains(g, n) {
				leaked = append(leaked, g)
				break
			}
		}
	}
	return leaked
}
