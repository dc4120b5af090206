package logging

import (
	"bytes"
	"log"
	"testing"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/internal/logging/logtest"
)

func TestStdLogger(t *testing.T) {
	var buf bytes.Buffer
	l := StdLogger(New(&buf, "info", "json", "api"), zerolog.WarnLevel, "net/http")
	l.Printf("http: superfluous response.WriteHeader call from x (y:1)")
	l.Print("two\nlines\n")
	entries := logtest.CheckLines(t, "StdLogger", buf.Bytes(), "api")
	if len(entries) != 3 {
		t.Fatalf("%d entries, want 3: %s", len(entries), buf.String())
	}
	for i, want := range []string{"http: superfluous response.WriteHeader call from x (y:1)", "two", "lines"} {
		if e := entries[i]; e["message"] != want || e["logger"] != "net/http" {
			t.Errorf("entry %d: %v, want message %q from net/http", i, e, want)
		}
	}

	buf.Reset()
	quiet := StdLogger(New(&buf, "error", "json", "api"), zerolog.WarnLevel, "net/http")
	quiet.Print("below the level")
	if buf.Len() != 0 {
		t.Errorf("a warning logged at level error: %s", buf.String())
	}
}

func TestCaptureStdlib(t *testing.T) {
	w, flags, prefix := log.Writer(), log.Flags(), log.Prefix()
	defer func() {
		log.SetOutput(w)
		log.SetFlags(flags)
		log.SetPrefix(prefix)
	}()
	var buf bytes.Buffer
	log.SetPrefix("lib: ")
	CaptureStdlib(New(&buf, "info", "json", "ingest"))
	log.Printf("dial %s: refused", "127.0.0.1:9")
	entries := logtest.CheckLines(t, "CaptureStdlib", buf.Bytes(), "ingest")
	if len(entries) != 1 || entries[0]["message"] != "dial 127.0.0.1:9: refused" || entries[0]["level"] != "warn" || entries[0]["logger"] != "log" {
		t.Errorf("log.Printf through zerolog: %v", entries)
	}
}
