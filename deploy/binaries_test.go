package deploy

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = ".."

// flagInfo is one flag as a binary's --help describes it.
type flagInfo struct {
	Bool    bool   // takes no value
	Default string // "" when the help shows none
	Usage   string // the help text
}

// binary is what the manifests may pass to one command of cmd/.
type binary struct {
	Name  string
	Flags map[string]flagInfo
	// Env: the binary reads MCPLENS_<FLAG> variables (its --help says so).
	Env bool
}

var (
	binMu    sync.Mutex
	binCache = map[string]*binary{}
	binDir   string
)

// TestMain removes the binaries built for the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// hasGoCode reports whether cmd/NAME holds a Go command (non-test files).
func hasGoCode(name string) bool {
	files, _ := filepath.Glob(filepath.Join(repoRoot, "cmd", name, "*.go"))
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			return true
		}
	}
	return false
}

// bin builds cmd/NAME once, runs its --help and returns its flags. It
// returns nil when cmd/NAME has no Go code yet: the caller logs what it
// could not check. A command that exists but does not build or print its
// flags fails the test.
func bin(t *testing.T, name string) *binary {
	t.Helper()
	if !hasGoCode(name) {
		return nil
	}
	binMu.Lock()
	defer binMu.Unlock()
	if b, ok := binCache[name]; ok {
		return b
	}
	if binDir == "" {
		dir, err := os.MkdirTemp("", "deploy-test-bin")
		if err != nil {
			t.Fatal(err)
		}
		binDir = dir
	}
	exe := filepath.Join(binDir, name)
	build := exec.Command("go", "build", "-o", exe, "./cmd/"+name)
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build cmd/%s: %v\n%s", name, err, out)
	}
	// Some commands exit non-zero after --help; the flag list is what counts.
	out, err := exec.Command(exe, "--help").CombinedOutput()
	b := parseHelp(name, string(out))
	if len(b.Flags) == 0 {
		t.Fatalf("%s --help lists no flags (%v):\n%s", name, err, out)
	}
	binCache[name] = b
	return b
}

var (
	// Go's flag package: "  -name type" (no type for a bool), usage on the
	// next lines; pflag/cobra: "  -n, --name type   usage".
	helpFlag    = regexp.MustCompile(`^\s{1,4}(?:-\w, )?--?([A-Za-z0-9][\w.-]*)(?:[ =](\S+))?(?:\s{2,}(.*))?$`)
	helpDefault = regexp.MustCompile(`\(default (.*)\)\s*$`)
)

func parseHelp(name, help string) *binary {
	b := &binary{Name: name, Flags: map[string]flagInfo{}, Env: strings.Contains(help, "MCPLENS_")}
	var last string
	sc := bufio.NewScanner(strings.NewReader(help))
	for sc.Scan() {
		line := sc.Text()
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			last = m[1]
			info := flagInfo{Bool: m[2] == "" || m[2] == "bool", Usage: m[3]}
			if d := helpDefault.FindStringSubmatch(m[3]); d != nil {
				info.Default = strings.Trim(d[1], `"`)
			}
			b.Flags[last] = info
			continue
		}
		if last != "" {
			info := b.Flags[last]
			info.Usage += " " + strings.TrimSpace(line)
			if d := helpDefault.FindStringSubmatch(line); d != nil {
				info.Default = strings.Trim(d[1], `"`)
			}
			b.Flags[last] = info
		}
	}
	return b
}

// envFlag names the flag an MCPLENS_* variable sets ("" if it is not one).
func envFlag(env string) string {
	rest, ok := strings.CutPrefix(env, "MCPLENS_")
	if !ok {
		return ""
	}
	return strings.ReplaceAll(strings.ToLower(rest), "_", "-")
}

// settings is what one container of a binary is told: flags given as
// arguments, MCPLENS_* variables, with the source named for messages.
type settings struct {
	Args map[string]string
	Env  map[string]string
}

// check parses args as Go's flag package would and checks every argument
// and MCPLENS_* variable against the binary's flags.
func (b *binary) check(where string, args []string, env map[string]string) (settings, []error) {
	s := settings{Args: map[string]string{}, Env: map[string]string{}}
	var errs []error
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" || a == "--" {
			errs = append(errs, fmt.Errorf("%s: argument %q: %s takes no positional arguments", where, a, b.Name))
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		info, ok := b.Flags[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s has no flag --%s", where, b.Name, name))
			continue
		}
		if !hasVal {
			if info.Bool {
				val = "true"
			} else if i+1 < len(args) {
				i++
				val = args[i]
			} else {
				errs = append(errs, fmt.Errorf("%s: --%s needs a value", where, name))
			}
		}
		s.Args[name] = val
	}
	for k, v := range env {
		name := envFlag(k)
		if name == "" {
			continue
		}
		switch _, ok := b.Flags[name]; {
		case !b.Env:
			errs = append(errs, fmt.Errorf("%s: %s=%s: %s does not read MCPLENS_* variables (its --help does not say so)", where, k, v, b.Name))
		case !ok:
			errs = append(errs, fmt.Errorf("%s: %s sets --%s, which %s does not have", where, k, name, b.Name))
		default:
			s.Env[name] = v
		}
	}
	return s, errs
}

// value is the flag's effective value: argument, else environment, else
// the default of --help.
func (b *binary) value(s settings, name string) string {
	if v, ok := s.Args[name]; ok {
		return v
	}
	if v, ok := s.Env[name]; ok {
		return v
	}
	return b.Flags[name].Default
}

// listenPort checks that a --listen address is reachable from outside the
// container (not loopback) and returns its port.
func listenPort(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--listen %q: %v", addr, err)
	}
	if host == "localhost" || (net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback()) {
		return "", fmt.Errorf("--listen %q: a loopback address is unreachable from outside the container; listen on 0.0.0.0 (or :PORT)", addr)
	}
	return port, nil
}

// unchecked records, once per binary, that a manifest refers to a command
// that is not there yet.
func unchecked(t *testing.T, name, what string) {
	t.Helper()
	t.Logf("unchecked: %s refers to cmd/%s, which has no Go code yet; its flags and --listen are not verified", what, name)
}

func TestHelpParsing(t *testing.T) {
	help := `Usage: x [flags]
Every flag can also be set by MCPLENS_<FLAG>.
  -from string
    	source (default "stdout")
  -listen string
    	address (default "127.0.0.1:9464")
  -migrate
    	apply migrations
  -redact-header value
    	extra header (repeatable)
  -tap.max-body-bytes int
    	cap; 0 means 1048576
`
	b := parseHelp("x", help)
	want := map[string]flagInfo{
		"from": {Default: "stdout"}, "listen": {Default: "127.0.0.1:9464"}, "migrate": {Bool: true},
		"redact-header": {}, "tap.max-body-bytes": {},
	}
	if u := b.Flags["tap.max-body-bytes"].Usage; strings.TrimSpace(u) != "cap; 0 means 1048576" {
		t.Errorf("tap.max-body-bytes usage %q", u)
	}
	for name, f := range b.Flags { // the usage text is checked above; compare the rest
		f.Usage = ""
		b.Flags[name] = f
	}
	if fmt.Sprint(b.Flags) != fmt.Sprint(want) || !b.Env {
		t.Errorf("parseHelp = %v (env %v), want %v", b.Flags, b.Env, want)
	}
	s, errs := b.check("test", []string{"--migrate", "--listen", ":1", "-from=file:x", "--nope", "pos"},
		map[string]string{"MCPLENS_REDACT_HEADER": "x", "MCPLENS_BOGUS": "1", "OTHER": "2"})
	if len(errs) != 3 || s.Args["listen"] != ":1" || s.Args["migrate"] != "true" || s.Args["from"] != "file:x" || s.Env["redact-header"] != "x" {
		t.Errorf("check = %v, %v", s, errs)
	}
	if _, err := listenPort("127.0.0.1:8080"); err == nil {
		t.Error("loopback --listen accepted")
	}
	if p, err := listenPort(":8080"); err != nil || p != "8080" {
		t.Errorf("listenPort(:8080) = %q, %v", p, err)
	}
}
