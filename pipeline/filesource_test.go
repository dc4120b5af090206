package pipeline

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestParseFileURL(t *testing.T) {
	f := func(in, want string, ok bool) {
		t.Helper()
		got, err := ParseFileURL(in)
		if (err == nil) != ok || got != want {
			t.Errorf("ParseFileURL(%q) = %q, %v; want %q ok=%v", in, got, err, want, ok)
		}
	}
	f("file:logs/a.ndjson", "logs/a.ndjson", true)
	f("file:/var/log/a.ndjson.gz", "/var/log/a.ndjson.gz", true)
	f("file:///var/log/a", "/var/log/a", true)
	f("file:-", "-", true)
	f("file:", "", false)
	f("file://host/a", "", false)
	f("kafka://b/t", "", false)
}

// drain fetches until io.EOF.
func drain(t *testing.T, s *FileSource) []Message {
	t.Helper()
	var msgs []Message
	for {
		m, err := s.Fetch(context.Background())
		if errors.Is(err, io.EOF) {
			return msgs
		}
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func gzipped(t *testing.T, data []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFileSourceLines(t *testing.T) {
	data := []byte("{\"a\":1}\n\n  \n{\"b\":2}\r\n{\"c\":3}")
	want := []struct {
		line int64
		val  string
	}{{1, `{"a":1}`}, {4, `{"b":2}`}, {5, `{"c":3}`}}
	for _, tc := range []struct{ name, file string }{
		{"plain", "a.ndjson"}, {"gzip by name", "a.ndjson.gz"}, {"gzip by magic", "a.log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			content := data
			if tc.name != "plain" {
				content = gzipped(t, data)
			}
			path := writeTemp(t, tc.file, content)
			s, err := NewFileSource(path, FileSourceConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			msgs := drain(t, s)
			if len(msgs) != len(want) {
				t.Fatalf("got %d messages, want %d", len(msgs), len(want))
			}
			for i, m := range msgs {
				if m.Pos != (Position{Stream: path, Offset: want[i].line}) || string(m.Value) != want[i].val {
					t.Errorf("message %d: %v %q, want line %d %q", i, m.Pos, m.Value, want[i].line, want[i].val)
				}
			}
			if _, err := s.Fetch(context.Background()); !errors.Is(err, io.EOF) {
				t.Errorf("fetch after the end: %v, want io.EOF", err)
			}
		})
	}
}

func TestFileSourceLongLines(t *testing.T) {
	big := strings.Repeat("x", 5<<20) // beyond the read buffer, within the cap
	huge := strings.Repeat("y", 3000) // beyond a 2000-byte cap
	data := big + "\n" + huge + "\r\nshort\n" + huge
	path := writeTemp(t, "long.ndjson", []byte(data))

	s, err := NewFileSource(path, FileSourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	msgs := drain(t, s)
	s.Close()
	if len(msgs) != 4 || string(msgs[0].Value) != big || string(msgs[1].Value) != huge || string(msgs[3].Value) != huge {
		t.Fatalf("long lines not returned whole: %d messages", len(msgs))
	}

	s, err = NewFileSource(path, FileSourceConfig{MaxLineBytes: 2000})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs = drain(t, s)
	want := []string{big[:2000], huge[:2000], "short", huge[:2000]}
	if len(msgs) != len(want) {
		t.Fatalf("got %d messages, want %d", len(msgs), len(want))
	}
	for i, m := range msgs {
		if string(m.Value) != want[i] || m.Pos.Offset != int64(i+1) {
			t.Errorf("message %d: line %d, %d bytes; want line %d, %d bytes", i, m.Pos.Offset, len(m.Value), i+1, len(want[i]))
		}
	}
	if n := s.TruncatedLines(); n != 3 {
		t.Errorf("TruncatedLines %d, want 3", n)
	}
}

func TestFileSourceErrors(t *testing.T) {
	if _, err := NewFileSource(filepath.Join(t.TempDir(), "missing"), FileSourceConfig{}); err == nil {
		t.Error("missing file opened")
	}
	corrupt := gzipped(t, []byte("{\"a\":1}\n"))
	corrupt = corrupt[:len(corrupt)-6] // cut the trailer
	s, err := NewFileSource(writeTemp(t, "c.gz", corrupt), FileSourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last error
	for range 3 {
		if _, last = s.Fetch(context.Background()); last != nil {
			break
		}
	}
	if last == nil || errors.Is(last, io.EOF) {
		t.Errorf("corrupt gzip: %v, want a read error", last)
	}
}

func TestFileSourceStdin(t *testing.T) {
	pr, pw := io.Pipe()
	s, err := NewFileSource("-", FileSourceConfig{Stdin: pr})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := s.Fetch(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("fetch from a silent pipe: %v, want the context's error", err)
	}
	go func() {
		pw.Write([]byte("{\"a\":1}\n"))
		pw.Close()
	}()
	m, err := s.Fetch(context.Background())
	if err != nil || string(m.Value) != `{"a":1}` || m.Pos.String() != "stdin:1" {
		t.Fatalf("got %v %q %v", m.Pos, m.Value, err)
	}
	if _, err := s.Fetch(context.Background()); !errors.Is(err, io.EOF) {
		t.Fatalf("after the writer closed: %v, want io.EOF", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestFileSourceCloseStopsReader(t *testing.T) {
	pr, pw := io.Pipe()
	s, err := NewFileSource("-", FileSourceConfig{Stdin: pr})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	pw.Write([]byte("{}\n")) // the reader reads one more line, then sees the stop
	select {
	case _, ok := <-s.lines:
		if ok {
			t.Fatal("a line was handed out after Close")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("reader goroutine still running after Close")
	}
}

func TestFileSourceCommit(t *testing.T) {
	path := writeTemp(t, "a.ndjson", []byte("{}\n"))
	s, err := NewFileSource(path, FileSourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Committed() != (Position{}) {
		t.Fatal("committed before any commit")
	}
	p := Position{Stream: path, Offset: 7}
	if err := s.Commit(context.Background(), []Position{{Stream: "other", Offset: 9}, p, {Stream: path, Offset: 3}}); err != nil {
		t.Fatal(err)
	}
	if got := s.Committed(); got != p {
		t.Errorf("Committed %v, want %v", got, p)
	}
}

// Released lines' slabs are reused for later lines; a line not released
// keeps its bytes however many slabs are recycled after it, and every
// line reads as written whatever was released before it.
func TestFileSourceRecyclesReleasedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lines.ndjson")
	var want []string
	var buf bytes.Buffer
	for i := range 20_000 { // ~2.5 MB: several slabs
		line := fmt.Sprintf(`{"n":%d,"pad":%q}`, i, strings.Repeat(string(rune('a'+i%26)), i%200))
		if i%1000 == 7 {
			line = strings.Repeat("L", slabOwnAbove+1) // its own allocation
		}
		want = append(want, line)
		buf.WriteString(line + "\n")
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := NewFileSource(path, FileSourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var kept []Message // every 97th line is never released
	for i := 0; ; i++ {
		m, err := src.Fetch(context.Background())
		if errors.Is(err, io.EOF) {
			if i != len(want) {
				t.Fatalf("%d lines, want %d", i, len(want))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Value) != want[i] {
			t.Fatalf("line %d reads %.40q, want %.40q", i+1, m.Value, want[i])
		}
		if i%97 == 0 {
			kept = append(kept, m)
			continue
		}
		m.Release()
		m.Release() // the message forgets its slab: a second call is a no-op
	}
	for _, m := range kept {
		if got := string(m.Value); got != want[m.Pos.Offset-1] {
			t.Fatalf("kept line %d changed to %.40q after later lines were released", m.Pos.Offset, got)
		}
	}
}

func TestLineSlabOverRelease(t *testing.T) {
	sl := newLineSlab()
	sl.add([]byte("x"))
	sl.release()
	sl.release() // the line's and the source's reference
	defer func() {
		if recover() == nil {
			t.Fatal("a third release did not panic")
		}
	}()
	sl.release()
}
