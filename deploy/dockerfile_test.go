package deploy

import (
	"bufio"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// dockerfile is what the tests read of one Dockerfile.
type dockerfile struct {
	Args       map[string]string // ARG defaults
	From       []string          // every FROM image, ARGs expanded
	Run        []string          // RUN instructions, continuation lines joined
	User       string            // last USER
	Expose     []string
	Entrypoint []string
	Copies     []string // COPY instructions
}

var argRef = regexp.MustCompile(`\$\{(\w+)\}`)

func readDockerfile(t *testing.T, path string) dockerfile {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := dockerfile{Args: map[string]string{}}
	var lines []string
	var cur strings.Builder
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasSuffix(line, `\`) {
			cur.WriteString(strings.TrimSuffix(line, `\`) + " ")
			continue
		}
		cur.WriteString(line)
		lines = append(lines, cur.String())
		cur.Reset()
	}
	for _, line := range lines {
		instr, rest, _ := strings.Cut(line, " ")
		expand := func(s string) string {
			return argRef.ReplaceAllStringFunc(s, func(m string) string { return d.Args[argRef.FindStringSubmatch(m)[1]] })
		}
		switch strings.ToUpper(instr) {
		case "ARG":
			name, def, _ := strings.Cut(rest, "=")
			if _, ok := d.Args[name]; !ok || def != "" {
				d.Args[name] = def
			}
		case "FROM":
			d.From = append(d.From, expand(strings.Fields(rest)[0]))
		case "RUN":
			d.Run = append(d.Run, expand(rest))
		case "USER":
			d.User = rest
		case "EXPOSE":
			d.Expose = append(d.Expose, strings.Fields(rest)...)
		case "COPY":
			d.Copies = append(d.Copies, rest)
		case "ENTRYPOINT":
			for _, q := range regexp.MustCompile(`"([^"]*)"`).FindAllStringSubmatch(rest, -1) {
				d.Entrypoint = append(d.Entrypoint, q[1])
			}
		}
	}
	return d
}

// goDirective is the go version of go.mod ("1.26").
func goDirective(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(raw)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	return string(m[1])
}

func versionAtLeast(have, want string) bool {
	h, w := strings.Split(have, "."), strings.Split(want, ".")
	for i := 0; i < len(w); i++ {
		if i >= len(h) {
			return false
		}
		a, _ := strconv.Atoi(h[i])
		b, _ := strconv.Atoi(w[i])
		if a != b {
			return a > b
		}
	}
	return true
}

// TestDockerfiles: every Dockerfile builds one cmd/ binary in a pinned Go
// image new enough for go.mod, runs it non-root on distroless (cc with
// glibc for cgo builds, static otherwise, same Debian release as the
// builder) and exposes the port of its --listen default.
func TestDockerfiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("docker", "*.Dockerfile"))
	if len(files) == 0 {
		t.Fatal("no deploy/docker/*.Dockerfile")
	}
	goVersion := goDirective(t)
	releases := map[string]string{"bookworm": "debian12", "trixie": "debian13"}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".Dockerfile")
		t.Run(name, func(t *testing.T) {
			d := readDockerfile(t, path)
			if len(d.From) < 2 {
				t.Fatalf("FROM %v: want a build stage and a runtime stage", d.From)
			}
			for _, img := range d.From {
				if _, err := checkImage(img); err != nil {
					t.Error(err)
				}
			}
			builder, runtime := d.From[0], d.From[len(d.From)-1]
			_, btag := splitImage(builder)
			goImage, release, _ := strings.Cut(btag, "-")
			if !strings.HasPrefix(builder, "golang:") || !versionAtLeast(goImage, goVersion) {
				t.Errorf("builder %s: want golang %s or newer (go.mod)", builder, goVersion)
			}
			if want := "-" + releases[release] + ":"; !strings.Contains(runtime, want) {
				t.Errorf("runtime %s: the builder is Debian %s, want a distroless%s image (same glibc)", runtime, release, strings.TrimSuffix(want, ":"))
			}
			if !strings.HasSuffix(runtime, ":nonroot") || (d.User != "65532:65532" && d.User != "nonroot:nonroot" && d.User != "nonroot") {
				t.Errorf("runtime %s, USER %q: want the distroless nonroot user", runtime, d.User)
			}
			build := strings.Join(d.Run, "\n")
			if !regexp.MustCompile(`go build .*-o /out/` + name + ` \./cmd/` + name + `\b`).MatchString(build) {
				t.Errorf("no RUN builds ./cmd/%s to /out/%s", name, name)
			}
			cgo := strings.Contains(build, "CGO_ENABLED=1")
			switch {
			case strings.Contains(runtime, "/cc-") && !cgo:
				t.Errorf("runtime %s is for cgo binaries: build with CGO_ENABLED=1 (DuckDB)", runtime)
			case strings.Contains(runtime, "/static-") && !strings.Contains(build, "CGO_ENABLED=0"):
				t.Errorf("runtime %s has no libc: build with CGO_ENABLED=0", runtime)
			}
			if want := []string{"/usr/local/bin/" + name}; !slices.Equal(d.Entrypoint, want) {
				t.Errorf("ENTRYPOINT %q, want %q", d.Entrypoint, want)
			}
			if !slices.Contains(d.Copies, "--from=build /out/"+name+" /usr/local/bin/"+name) {
				t.Errorf("the runtime stage does not COPY /out/%s to /usr/local/bin/%s", name, name)
			}
			if _, err := os.Stat(path + ".dockerignore"); err != nil {
				t.Errorf("no %s.dockerignore: the build context would carry .git and data", path)
			}
			b := bin(t, name)
			if b == nil {
				unchecked(t, name, path)
				return
			}
			listen := b.Flags["listen"].Default
			if listen == "auto" { // ingest: the address it serves for a Kafka source, named in its help
				m := regexp.MustCompile(`auto: (\S+:\d+)`).FindStringSubmatch(b.Flags["listen"].Usage)
				if m == nil {
					t.Fatalf("%s --listen default auto: its help names no HOST:PORT after 'auto:'", name)
				}
				listen = m[1]
			}
			_, port, err := net.SplitHostPort(listen)
			if err != nil {
				t.Fatalf("%s --listen default: %v", name, err)
			}
			if !slices.Equal(d.Expose, []string{port}) {
				t.Errorf("EXPOSE %v, want the port of %s's --listen default %q", d.Expose, name, b.Flags["listen"].Default)
			}
		})
	}
}
