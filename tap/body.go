package tap

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"unicode/utf8"
)

// capBuffer keeps the first max bytes written to it and remembers whether
// anything was dropped.
type capBuffer struct {
	buf       []byte
	max       int
	truncated bool
}

func (b *capBuffer) write(p []byte) {
	room := b.max - len(b.buf)
	if len(p) > room {
		p = p[:max(room, 0)]
		b.truncated = true
	}
	b.buf = append(b.buf, p...)
}

// String returns the kept prefix. When the body was cut, a trailing partial
// UTF-8 sequence is dropped so that the cut does not invent a bad rune.
func (b *capBuffer) String() string {
	if b.truncated {
		return string(trimPartialRune(b.buf))
	}
	return string(b.buf)
}

// trimPartialRune drops an incomplete UTF-8 sequence at the end of p.
func trimPartialRune(p []byte) []byte {
	// A rune is at most utf8.UTFMax bytes: look back no further.
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		c := p[len(p)-i]
		if utf8.RuneStart(c) {
			if !utf8.FullRune(p[len(p)-i:]) {
				return p[:len(p)-i]
			}
			return p
		}
	}
	return p
}

// captureRequest reads up to limit bytes of the request body up front, so
// that the event holds the body even when the upstream never reads it (a
// fault injector, an auth check, a proxy that fails to connect). r.Body is
// replaced by a reader that replays those bytes and then continues with the
// rest of the original body, which is forwarded but not recorded. A body
// read to its end here is replayed alone: the transport's last read, which
// checks for the end, must not reach the original body, which net/http
// closes once the response is being written (an upstream that answers at
// once raced that read, the transport failed writing the request, tore the
// upstream connection down and cut the answer mid-body: "use of closed
// network connection", golang/go#40747).
func captureRequest(r *http.Request, limit int) (body string, truncated bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return "", false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	rest := io.Reader(r.Body)
	switch {
	case err != nil:
		// Let the upstream see the same failure after the bytes we got.
		rest = errReader{fmt.Errorf("read request body: %w", err)}
	case len(head) <= limit:
		rest = eofReader{}
	}
	r.Body = replayBody{Reader: io.MultiReader(bytes.NewReader(head), rest), Closer: r.Body}
	if len(head) > limit {
		b := capBuffer{max: limit}
		b.write(head)
		return b.String(), true
	}
	return string(head), false
}

// replayBody is a request body that reads from Reader and closes Closer.
type replayBody struct {
	io.Reader
	io.Closer
}

// eofReader is the end of a body already read whole.
type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
