package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcplens/mcplens/internal/loadgen"
)

// TestCPUProfileCoversTheRun: --cpu-profile writes a pprof profile of the
// whole run, finished at shutdown, whose samples reach the engine; a path
// that cannot be created is refused before any input is read.
func TestCPUProfileCoversTheRun(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "load.ndjson")
	if _, err := loadgen.WriteFile(in, loadgen.Config{Seed: 5, Calls: 40_000}); err != nil {
		t.Fatal(err)
	}
	prof := filepath.Join(dir, "cpu.pprof")
	cmd := exec.Command(ingestBin, "--from", "file:"+in, "--to", "stdout", "--listen", "", "--cpu-profile", prof)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ingest: %v\n%s", err, stderr.String())
	}
	f, err := os.Open(prof)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f) // a pprof profile is gzipped protobuf
	if err != nil {
		t.Fatalf("the profile is not gzipped: %v", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("the profile is cut short: %v", err)
	}
	// The string table names the functions sampled: the engine's loop runs
	// for most of the run, so a profile of the whole run holds it.
	for _, fn := range []string{"pipeline.(*Engine).loop", "pipeline.(*Decoder).decode"} {
		if !bytes.Contains(raw, []byte(fn)) {
			t.Errorf("the profile never sampled %s (%d bytes)", fn, len(raw))
		}
	}
	if !strings.Contains(stderr.String(), "closed cpu profile") {
		t.Errorf("no log line for the profile's close:\n%s", stderr.String())
	}

	bad := exec.Command(ingestBin, "--from", "file:"+in, "--to", "stdout", "--listen", "", "--cpu-profile", filepath.Join(dir, "missing", "cpu.pprof"))
	out, err := bad.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--cpu-profile") {
		t.Fatalf("an uncreatable profile path: err %v, output:\n%s", err, out)
	}
	if strings.Contains(string(out), `"exchange_id"`) {
		t.Error("records were written although the profile could not be created")
	}
}

// TestBuiltWithTheProfile: a plain `go build` of the ingester uses
// default.pgo (profile-guided optimisation), which the benchmarks'
// -pgo flag names too; a profile that went missing or that the compiler
// refuses shows here, not as a quietly slower binary.
func TestBuiltWithTheProfile(t *testing.T) {
	if _, err := os.Stat("default.pgo"); err != nil {
		t.Fatalf("cmd/ingest/default.pgo: %v (make pgo writes it)", err)
	}
	out, err := exec.Command("go", "version", "-m", ingestBin).CombinedOutput()
	if err != nil {
		t.Fatalf("go version -m: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "-pgo=") || !strings.Contains(string(out), "default.pgo") {
		t.Fatalf("the ingest binary was built without default.pgo:\n%s", out)
	}
}
