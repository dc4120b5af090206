// Package readme runs the shell commands of the repository's README.md as
// written, on a fresh checkout (the committed tree, exported with git
// archive): every line of its ```sh blocks, in order, except those that
// need a service this machine may lack (Kafka, ClickHouse, an upstream MCP
// server, a token of the reader's own) or that run every test; each
// skipped line is logged with its reason. A line that starts a server
// (api) runs in the background until the test ends, so the curl lines
// after it ask it. URLs with '?' or '&' must be quoted (zsh expands them).
package readme

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// skips are the commands the test does not run, and why.
var skips = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`^make (test|bench|fuzz)\b`), "runs the whole suite: that is CI"},
	{regexp.MustCompile(`^make demo\b`), "the demo starts its own Kafka broker; e2e.TestDemo runs it"},
	{regexp.MustCompile(`kafka://`), "needs a Kafka broker"},
	{regexp.MustCompile(`clickhouse://`), "needs a ClickHouse server"},
	{regexp.MustCompile(`^(bin/)?tap\b`), "needs an upstream MCP server"},
	{regexp.MustCompile(`\$TOKEN|tokens\.txt`), "needs an API token of the reader's own"},
	{regexp.MustCompile(`^(docker|kubectl|helm)\b`), "needs a container engine"},
}

// server lines start a process that serves until stopped.
var server = regexp.MustCompile(`^(bin/)?api\b.*--listen (\S+)`)

type command struct {
	line int
	text string
}

// shellCommands returns the commands of the ```sh blocks, comments cut,
// continuation lines joined.
func shellCommands(t *testing.T, readme []byte) []command {
	t.Helper()
	var out []command
	in := false
	var cur strings.Builder
	start := 0
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
			continue
		case strings.HasPrefix(line, "```"):
			in = false
			continue
		case !in:
			continue
		}
		if cur.Len() == 0 {
			start = n
		}
		line = stripComment(line)
		if strings.HasSuffix(line, "\\") {
			cur.WriteString(strings.TrimSuffix(line, "\\") + " ")
			continue
		}
		cur.WriteString(line)
		if text := strings.TrimSpace(cur.String()); text != "" {
			out = append(out, command{line: start, text: text})
		}
		cur.Reset()
	}
	return out
}

// stripComment cuts a '#' comment that is outside quotes and starts a word.
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && (i == 0 || line[i-1] == ' '):
			return strings.TrimRight(line[:i], " ")
		}
	}
	return line
}

// unquotedGlob finds a word outside quotes with '?', '&' or '*' in a URL.
func unquotedGlob(cmd string) string {
	var quote rune
	word := strings.Builder{}
	check := func() string {
		w := word.String()
		word.Reset()
		if strings.Contains(w, "://") && strings.ContainsAny(w, "?&*") {
			return w
		}
		return ""
	}
	for _, r := range cmd {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == ' ':
			if w := check(); w != "" {
				return w
			}
		default:
			word.WriteRune(r)
		}
	}
	return check()
}

func TestURLsAreQuoted(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range shellCommands(t, readme) {
		if w := unquotedGlob(c.text); w != "" {
			t.Errorf("README.md:%d: quote %s (zsh expands ? and &): %s", c.line, w, c.text)
		}
	}
	// The prose's inline commands too: `...` spans that hold a URL with '?'.
	for _, m := range regexp.MustCompile("`((?:ingest|api|tap|bundle|curl) [^`]*)`").FindAllSubmatch(readme, -1) {
		if w := unquotedGlob(string(m[1])); w != "" {
			t.Errorf("README.md: quote %s in `%s`", w, m[1])
		}
	}
}

func TestStripComment(t *testing.T) {
	f := func(in, want string) {
		t.Helper()
		if got := stripComment(in); got != want {
			t.Errorf("stripComment(%q) = %q, want %q", in, got, want)
		}
	}
	f("make demo   # real traffic", "make demo")
	f("curl -s 'http://x/#frag'", "curl -s 'http://x/#frag'")
	f("echo a#b", "echo a#b")
	if w := unquotedGlob("ingest --from kafka://h:1/t?group=g"); w != "kafka://h:1/t?group=g" {
		t.Errorf("unquoted URL not found: %q", w)
	}
	if w := unquotedGlob("ingest --from 'kafka://h:1/t?group=g'"); w != "" {
		t.Errorf("quoted URL reported: %q", w)
	}
}

// TestCommandsRunAsWritten exports the committed tree, then runs the
// README's commands in it with its bin/ and a fresh GOBIN on PATH.
func TestCommandsRunAsWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every binary: not in -short")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	dir := t.TempDir()
	archive := exec.Command("bash", "-c", `git -C "$1" archive HEAD | tar -x -C "$2"`, "archive", strings.TrimSpace(string(root)), dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("export the committed tree: %v\n%s", err, out)
	}
	readme, err := os.ReadFile(filepath.Join(dir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	gobin := filepath.Join(dir, "gobin")
	env := append(os.Environ(), "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+os.Getenv("PATH"))

	ran, skipped := 0, 0
	var servers []string
	for _, c := range shellCommands(t, readme) {
		if why := skipReason(c.text); why != "" {
			t.Logf("README.md:%d skipped (%s): %s", c.line, why, c.text)
			skipped++
			continue
		}
		text := c.text
		if m := server.FindStringSubmatch(text); m != nil {
			addr := freeAddr(t)
			text = strings.ReplaceAll(text, m[2], addr)
			servers = append(servers, m[2]+"="+addr)
			startServer(t, dir, env, c, text, addr)
			ran++
			continue
		}
		for _, s := range servers { // curl the server started above
			old, addr, _ := strings.Cut(s, "=")
			text = strings.ReplaceAll(text, old, addr)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		cmd := exec.CommandContext(ctx, "bash", "-o", "pipefail", "-ec", text)
		cmd.Dir, cmd.Env = dir, env
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("README.md:%d failed as written: %s\n%v\n%s", c.line, c.text, err, tail(out))
		}
		if strings.HasPrefix(text, "curl") && (!bytes.HasPrefix(bytes.TrimSpace(out), []byte("{")) || bytes.Contains(out, []byte(`"status":`))) {
			t.Errorf("README.md:%d: %s answered %s", c.line, c.text, tail(out))
		}
		t.Logf("README.md:%d ran: %s", c.line, c.text)
		ran++
	}
	if ran < 8 {
		t.Errorf("ran only %d of the README's commands (%d skipped)", ran, skipped)
	}
	for _, want := range []string{"bin/ingest", "gobin/ingest", "incident.tar.gz", "mcplens.duckdb"} {
		if _, err := os.Stat(filepath.Join(dir, want)); err != nil {
			t.Errorf("after the README's commands: %v", err)
		}
	}
}

func skipReason(cmd string) string {
	for _, s := range skips {
		if s.re.MatchString(cmd) {
			return s.why
		}
	}
	return ""
}

func startServer(t *testing.T, dir string, env []string, c command, text, addr string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", "exec "+text)
	cmd.Dir, cmd.Env = dir, env
	logPath := filepath.Join(t.TempDir(), "server.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
		resp, err := http.DefaultClient.Do(req)
		cancel()
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("README.md:%d started: %s", c.line, c.text)
				return
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logPath)
			t.Fatalf("README.md:%d did not become ready on %s: %s\n%s", c.line, addr, c.text, tail(out))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func tail(b []byte) string {
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}
