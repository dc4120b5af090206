package classify

import (
	"bytes"
	"testing"
)

// splitLineByByte is splitLine's definition, one byte at a time.
func splitLineByByte(b []byte) (line, rest []byte) {
	for i, c := range b {
		switch c {
		case '\n':
			return b[:i], b[i+1:]
		case '\r':
			if i+1 < len(b) && b[i+1] == '\n' {
				return b[:i], b[i+2:]
			}
			return b[:i], b[i+1:]
		}
	}
	return b, nil
}

// TestSplitLine holds splitLine to its definition on every string of up
// to seven bytes over "a", CR and LF (each line end at each place, CRLF,
// LFCR, CR at the very end), and on long data lines.
func TestSplitLine(t *testing.T) {
	check := func(b []byte) {
		t.Helper()
		line, rest := splitLine(b)
		wantLine, wantRest := splitLineByByte(b)
		if !bytes.Equal(line, wantLine) || !bytes.Equal(rest, wantRest) || (rest == nil) != (wantRest == nil) {
			t.Fatalf("splitLine(%q) = %q, %q; want %q, %q", b, line, rest, wantLine, wantRest)
		}
	}
	alphabet := []byte("a\r\n")
	var walk func(b []byte)
	walk = func(b []byte) {
		check(b)
		if len(b) == 7 {
			return
		}
		for _, c := range alphabet {
			walk(append(b[:len(b):len(b)], c))
		}
	}
	walk(nil)
	long := bytes.Repeat([]byte(`data: {"jsonrpc":"2.0","id":7}`), 40)
	for _, end := range []string{"", "\n", "\r", "\r\n", "\n\r", "\r\r\n"} {
		check(append(append([]byte(nil), long...), end+"data: x\n"...))
	}
}
