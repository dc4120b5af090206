package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestDemoClickHouse runs the demo with --store clickhouse (from the
// tap's file, so no broker): it starts a ClickHouse server of its own,
// prints the same two headline answers as on DuckDB, and leaves nothing
// running: no API, no server on its ports, no process in its workdir.
func TestDemoClickHouse(t *testing.T) {
	script := clickhousetest.Script(t) // skips locally without chdb-core, fails in CI
	listen := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	work := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "demo"), "--bin", bin, "--listen", listen, "--workdir", work, "--kafka", "off",
		"--store", "clickhouse", "--clickhouse-script", script)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{`server="demo-tools"`, `tool_name="delete_item"`, `prev_http_status=503`, "demo finished in"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	m := regexp.MustCompile(`4\. ingest '[^']+' -> clickhouse://[^@]*@(127\.0\.0\.1:\d+)/mcplens`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("the demo did not ingest into a ClickHouse server of its own:\n%s", text)
	}
	if strings.Contains(text, "xxxxx") && !strings.Contains(text, "clickhouse://default:xxxxx@") {
		t.Errorf("a password in the output:\n%s", text)
	}
	if listening(listen) {
		t.Error("the demo left the API running")
	}
	// The kernel may take a moment to tear down the listener of a server
	// that just exited.
	waitFor(t, "the demo's ClickHouse server "+m[1]+" to be gone", 5*time.Second, func() bool { return !listening(m[1]) })
	if pids, _ := exec.Command("pgrep", "-f", work).Output(); len(pids) > 0 {
		t.Errorf("processes left in the demo's workdir: %s", pids)
	}
}
