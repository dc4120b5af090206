package main

import (
	"bytes"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcplens/mcplens/store/duckstore"
)

// TestFlags: defaults, environment fallback, flags over environment,
// validation and the help text.
func TestFlags(t *testing.T) {
	cfg := testConfig(t)
	if cfg.Store != "duckdb:mcplens.duckdb" || cfg.Listen != "127.0.0.1:8080" || cfg.API.MaxLimit != 1000 ||
		cfg.API.MaxSpan != 31*24*time.Hour || cfg.API.DefaultWindow != 24*time.Hour || cfg.API.QueryTimeout != 10*time.Second || cfg.API.Dev ||
		cfg.duckDBOptions().Threads != 0 || cfg.duckDBOptions().MemoryLimit != duckstore.ServingMemoryLimit {
		t.Errorf("defaults: %+v", cfg)
	}
	t.Setenv("MCPLENS_LISTEN", "127.0.0.1:9999")
	t.Setenv("MCPLENS_MAX_SPAN", "7d")
	t.Setenv("MCPLENS_CORS_ORIGIN", "https://a.example,https://b.example")
	t.Setenv("MCPLENS_DEV", "true")
	cfg = testConfig(t, "--listen", "127.0.0.1:7777")
	if cfg.Listen != "127.0.0.1:7777" || cfg.API.MaxSpan != 7*24*time.Hour || len(cfg.API.CORSOrigins) != 2 || !cfg.API.Dev {
		t.Errorf("environment: %+v", cfg)
	}
	t.Setenv("MCPLENS_MAX_LIMIT", "lots")
	var c config
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	if err := parseFlags(fs, nil); err == nil || !strings.Contains(err.Error(), "MCPLENS_MAX_LIMIT") {
		t.Errorf("bad environment value: %v", err)
	}
	for _, args := range [][]string{{"--store", "postgres://x"}, {"--log-format", "xml"}, {"--max-limit", "0"}, {"--default-window", "40d"},
		{"--duckdb-threads", "-1"}, {"--duckdb-memory-limit", "512MB&threads=9"}, {"--duckdb-memory-limit", "lots"}} {
		os.Unsetenv("MCPLENS_MAX_LIMIT")
		var c config
		fs := flag.NewFlagSet("api", flag.ContinueOnError)
		c.RegisterFlags(fs)
		if err := parseFlags(fs, args); err != nil {
			t.Fatal(err)
		}
		if c.Validate() == nil {
			t.Errorf("%v validated", args)
		}
	}
	t.Setenv("CLICKHOUSE_PASSWORD", "hunter2-secret")
	var help bytes.Buffer
	fs = flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(&help)
	c.RegisterFlags(fs)
	usage(fs)
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" || !strings.Contains(help.String(), "-"+f.Name) {
			t.Errorf("flag --%s is not explained in --help", f.Name)
		}
	})
	if strings.Contains(help.String(), "hunter2") {
		t.Error("--help prints the ClickHouse password")
	}
	for _, want := range []string{"MCPLENS_TOKENS", "sha256:", "scopes=", "MCPLENS_<FLAG>", "--dev"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("--help does not mention %s", want)
		}
	}
}

// TestLoadTokens reads the file and the environment list together.
func TestLoadTokens(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(file, []byte("# ops\nfile-token-0123456789 scopes=read,bodies name=ops\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tk, err := loadTokens(file, "env-token-0123456789 scopes=read name=dash")
	if err != nil || tk.Len() != 2 {
		t.Fatalf("%v, %d tokens", err, tk.Len())
	}
	if _, err := loadTokens(file, "file-token-0123456789 scopes=read name=again"); err == nil {
		t.Error("the same token in file and environment accepted")
	}
	if _, err := loadTokens(filepath.Join(t.TempDir(), "none"), ""); err == nil {
		t.Error("a missing tokens file accepted")
	}
}
