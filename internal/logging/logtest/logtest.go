// Package logtest checks what a command wrote to stderr: zerolog's JSON
// lines and nothing else.
package logtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
)

// CheckLines fails t for every line of stderr that is not one JSON object
// with a level, a time, a message and the component (a key may appear
// only once: zerolog does not merge repeated keys) and returns the
// entries it read, so that a test can look for the one it provoked.
func CheckLines(t testing.TB, what string, stderr []byte, component string) []map[string]any {
	t.Helper()
	var entries []map[string]any
	for i, line := range bytes.Split(bytes.TrimRight(stderr, "\n"), []byte("\n")) {
		if len(line) == 0 && len(stderr) == 0 {
			break
		}
		e, err := entry(line)
		if err == nil {
			for _, k := range []string{"level", "time", "message", "component"} {
				if s, ok := e[k].(string); !ok || s == "" {
					err = fmt.Errorf("no %q", k)
					break
				}
			}
		}
		if err == nil && e["component"] != component {
			err = fmt.Errorf("component %v, want %s", e["component"], component)
		}
		if err != nil {
			t.Errorf("%s: stderr line %d is not a zerolog entry (%v): %q", what, i+1, err, line)
			continue
		}
		entries = append(entries, e)
	}
	return entries
}

// entry decodes one JSON object, refusing trailing data and repeated keys.
func entry(line []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	e := map[string]any{}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			return nil, err
		}
		k := tok.(string)
		var v any
		if err := d.Decode(&v); err != nil {
			return nil, err
		}
		if _, dup := e[k]; dup {
			return nil, fmt.Errorf("key %q twice", k)
		}
		e[k] = v
	}
	if _, err := d.Token(); err != nil {
		return nil, err
	}
	if d.More() {
		return nil, fmt.Errorf("data after the object")
	}
	return e, nil
}

// Find returns the first entry whose message contains substr (or whose
// error does), or nil.
func Find(entries []map[string]any, substr string) map[string]any {
	for _, e := range entries {
		for _, k := range []string{"message", "error"} {
			if s, ok := e[k].(string); ok && strings.Contains(s, substr) {
				return e
			}
		}
	}
	return nil
}

// Buffer is a log sink safe for concurrent writes (a logger shared by
// goroutines, a command's stderr), read whole with String or Bytes.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bytes returns a copy of everything written so far.
func (s *Buffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}
