package pipeline

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

// DefaultMaxLineBytes is the longest line a [FileSource] returns whole.
const DefaultMaxLineBytes = 16 << 20

// FileSourceConfig configures a [FileSource]. The zero value means the
// defaults.
type FileSourceConfig struct {
	// MaxLineBytes is the longest line returned whole; a longer one is
	// returned cut to this length (so it fails to decode and is quarantined,
	// never dropped) and counted in TruncatedLines. Default 16 MiB.
	MaxLineBytes int
	// Stdin is read for the path "-". Default os.Stdin.
	Stdin io.Reader
}

// FileSource is a [Source] of NDJSON lines from a file, or from standard
// input for the path "-", gunzipped when the input starts with the gzip
// magic bytes (whatever its name). Positions are the path ("stdin" for "-")
// and the 1-based line number; blank lines are skipped but counted. Fetch
// returns io.EOF at the end of the input. Each message's Value is its own
// memory, safe to keep after the next Fetch and until the message's
// [Message.Release] (never called, the memory is the garbage collector's).
//
// A regular file is read in the calling goroutine. Standard input and other
// non-regular files (pipes, FIFOs) are read by a goroutine of the source, so
// that Fetch returns when its context ends even while the writer is silent;
// that goroutine ends at the end of input, on a read error, or at the first
// line it reads after Close.
//
// Fetch and Close are for one goroutine at a time (see [Source]); Committed
// and TruncatedLines are safe for concurrent use.
type FileSource struct {
	stream  string
	raw     io.Reader
	file    *os.File // closed by Close; nil for standard input
	br      *bufio.Reader
	maxLine int
	line    int64
	slab    *lineSlab // lines are copied into slabs, recycled once all their lines are released

	lines     chan fetched // nil when read synchronously
	stop      chan struct{}
	closeOnce sync.Once

	truncated atomic.Int64
	read      atomic.Int64 // bytes read from the file (compressed, if gzip)
	size      int64        // the file's size; 0 when unknown (stdin, pipes)
	mu        sync.Mutex
	committed Position
}

type fetched struct {
	m   Message
	err error
}

// ParseFileURL returns the path of a "file:PATH" source ("file:-" for
// standard input; "file:///abs" is accepted too).
func ParseFileURL(u string) (string, error) {
	path, ok := strings.CutPrefix(u, "file:")
	if !ok {
		return "", fmt.Errorf("parse file source %q: want file:PATH", u)
	}
	if rest, ok := strings.CutPrefix(path, "//"); ok {
		if !strings.HasPrefix(rest, "/") {
			return "", fmt.Errorf("parse file source %q: want file:PATH or file:///PATH", u)
		}
		path = rest
	}
	if path == "" {
		return "", fmt.Errorf("parse file source %q: empty path", u)
	}
	return path, nil
}

// NewFileSource opens path ("-" for standard input).
func NewFileSource(path string, cfg FileSourceConfig) (*FileSource, error) {
	s := &FileSource{stream: path, maxLine: cfg.MaxLineBytes, stop: make(chan struct{})}
	if s.maxLine <= 0 {
		s.maxLine = DefaultMaxLineBytes
	}
	async := true
	if path == "-" {
		s.stream, s.raw = "stdin", cfg.Stdin
		if s.raw == nil {
			s.raw = os.Stdin
		}
	} else {
		f, err := os.Open(path) //nolint:gosec // G304: the path is the operator's own --from argument
		if err != nil {
			return nil, fmt.Errorf("open file source: %w", err)
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("open file source: %w", err)
		}
		s.raw, s.file, async = f, f, !st.Mode().IsRegular()
		if !async {
			s.size = st.Size()
		}
	}
	s.raw = countingReader{r: s.raw, n: &s.read}
	if async {
		s.lines = make(chan fetched)
		go s.pump()
	}
	return s, nil
}

// Fetch returns the next non-blank line, io.EOF at the end, or ctx.Err().
func (s *FileSource) Fetch(ctx context.Context) (Message, error) {
	if err := ctx.Err(); err != nil {
		return Message{}, err
	}
	if s.lines == nil {
		return s.next()
	}
	select {
	case f, ok := <-s.lines:
		if !ok {
			return Message{}, io.EOF
		}
		return f.m, f.err
	case <-ctx.Done():
		return Message{}, ctx.Err()
	}
}

// pump reads for Fetch when reads may block indefinitely.
func (s *FileSource) pump() {
	defer close(s.lines)
	for {
		m, err := s.next()
		select {
		case <-s.stop: // closed while reading: never hand out another line
			return
		default:
		}
		select {
		case s.lines <- fetched{m, err}:
		case <-s.stop:
			return
		}
		if err != nil {
			return
		}
	}
}

// next reads the next non-blank line.
func (s *FileSource) next() (Message, error) {
	if s.br == nil {
		if err := s.open(); err != nil {
			return Message{}, err
		}
	}
	for {
		line, slab, err := s.readLine()
		if err != nil {
			return Message{}, err
		}
		s.line++
		if len(bytes.TrimSpace(line)) == 0 {
			slab.release()
			continue
		}
		return Message{Value: line, Pos: Position{Stream: s.stream, Offset: s.line}, slab: slab}, nil
	}
}

// open sets up the reader, gunzipping on the gzip magic bytes. It runs at
// the first read, so that NewFileSource never blocks on a silent pipe.
func (s *FileSource) open() error {
	s.br = bufio.NewReaderSize(s.raw, 64<<10)
	magic, err := s.br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read %s: %w", s.stream, err)
	}
	if bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(s.br)
		if err != nil {
			return fmt.Errorf("read %s: gzip: %w", s.stream, err)
		}
		s.br = bufio.NewReaderSize(zr, 64<<10)
	}
	return nil
}

// readLine returns the next line without its line ending, in memory of its
// own: cut to maxLine bytes when longer. The last line needs no newline.
func (s *FileSource) readLine() ([]byte, *lineSlab, error) {
	frag, err := s.br.ReadSlice('\n')
	if err == nil || (errors.Is(err, io.EOF) && len(frag) > 0) {
		line, slab := s.keep(trimEOL(frag))
		return line, slab, nil
	}
	if !errors.Is(err, bufio.ErrBufferFull) {
		return nil, nil, s.readErr(err)
	}
	long := append([]byte(nil), frag[:min(len(frag), s.maxLine)]...)
	cut := len(frag) > s.maxLine
	for errors.Is(err, bufio.ErrBufferFull) {
		frag, err = s.br.ReadSlice('\n')
		if err == nil {
			frag = trimEOL(frag)
		}
		if room := max(s.maxLine-len(long), 0); len(frag) > room {
			frag, cut = frag[:room], true
		}
		long = append(long, frag...)
	}
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, s.readErr(err)
	}
	if cut {
		s.truncated.Add(1)
	}
	return trimEOL(long), nil, nil
}

func (s *FileSource) readErr(err error) error {
	if errors.Is(err, io.EOF) {
		return io.EOF
	}
	return fmt.Errorf("read %s after line %d: %w", s.stream, s.line, err)
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

// keep copies a line out of the read buffer: short lines into the current
// slab, long ones into their own allocation; cut to maxLine. The slab
// counts the line until its message is released.
func (s *FileSource) keep(b []byte) ([]byte, *lineSlab) {
	if len(b) > s.maxLine {
		b = b[:s.maxLine]
		s.truncated.Add(1)
	}
	if len(b) > slabOwnAbove {
		return bytes.Clone(b), nil
	}
	if s.slab == nil || len(b) > cap(s.slab.buf)-len(s.slab.buf) {
		s.slab.release() // the source's own reference: the slab is full
		s.slab = newLineSlab()
	}
	return s.slab.add(b), s.slab
}

// Commit records the last committed position of this file; files need no
// offsets stored elsewhere.
func (s *FileSource) Commit(_ context.Context, next []Position) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range next {
		if p.Stream == s.stream && p.Offset > s.committed.Offset {
			s.committed = p
		}
	}
	return nil
}

// Committed is the last position passed to Commit (zero before any).
func (s *FileSource) Committed() Position {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed
}

// BytesRead is how many bytes of the input have been read so far (of the
// compressed file, for gzip) and the file's size, 0 when it is not known
// (standard input, pipes). Safe for concurrent use; progress reports use it.
func (s *FileSource) BytesRead() (read, size int64) { return s.read.Load(), s.size }

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// TruncatedLines counts lines longer than MaxLineBytes, returned cut.
func (s *FileSource) TruncatedLines() int64 { return s.truncated.Load() }

// Close stops the reading goroutine, if any, and closes the file (not
// standard input).
func (s *FileSource) Close() error {
	var err error
	s.closeOnce.Do(func() {
		close(s.stop)
		if s.file != nil {
			err = s.file.Close()
		}
	})
	return err
}

const (
	slabSize     = 256 << 10 // bytes of one slab of lines
	slabOwnAbove = 16 << 10  // longer lines get an allocation of their own
)

// lineSlab holds many short lines in one allocation. It counts the
// messages that still use it, plus one for the source while it fills the
// slab; the last release returns it to slabs for the next lines. Reading a
// file so never allocates for its short lines once the slabs in use
// suffice (the engine releases each message when it has handled it, see
// [Message.Release]), where a fresh slab per 256 KiB had the allocator
// zero as many bytes as the file held and the garbage collector run once
// per so many bytes more.
type lineSlab struct {
	buf  []byte
	refs atomic.Int32
}

var slabs = sync.Pool{New: func() any { return &lineSlab{buf: make([]byte, 0, slabSize)} }}

func newLineSlab() *lineSlab {
	sl := slabs.Get().(*lineSlab)
	sl.buf = sl.buf[:0]
	sl.refs.Store(1)
	return sl
}

// add copies b into the slab, which must have room, and counts it.
func (sl *lineSlab) add(b []byte) []byte {
	sl.refs.Add(1)
	n := len(sl.buf)
	sl.buf = append(sl.buf, b...)
	return sl.buf[n:len(sl.buf):len(sl.buf)]
}

// release drops one reference; nil is a no-op.
func (sl *lineSlab) release() {
	if sl == nil {
		return
	}
	switch n := sl.refs.Add(-1); {
	case n == 0:
		slabs.Put(sl)
	case n < 0:
		panic("pipeline: a line slab released more often than used")
	}
}
