package tap

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/mcplens/mcplens/schema"
)

// errSpillFull is the reason for a drop once the spill files hold
// MaxSpillBytes.
var errSpillFull = errors.New("spill files full")

// spill is a directory of NDJSON segment files (spill-SEQ.ndjson): events
// are appended to the newest segment; the delivery goroutine takes the
// oldest whole segment, delivers it and removes it. A segment is removed
// only after every event in it was delivered, so a stop in between
// delivers it again next time (the ingester dedupes by event_id).
type spill struct {
	dir string
	max int64

	mu     sync.Mutex
	cur    *os.File
	curSeg *spillReader // the segment being appended to
	ready  []*spillReader
	total  int64
	seq    int64
}

// spillReader is one segment taken for delivery.
type spillReader struct {
	path  string
	bytes int64
	f     *os.File
	r     *bufio.Reader
	eof   bool
}

func openSpill(dir string, limit int64) (*spill, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spill dir %q: %w", dir, err)
	}
	names, err := filepath.Glob(filepath.Join(dir, "spill-*.ndjson"))
	if err != nil {
		return nil, fmt.Errorf("spill dir %q: %w", dir, err)
	}
	s := &spill{dir: dir, max: limit}
	slices.Sort(names)
	for _, name := range names {
		fi, err := os.Stat(name)
		if err != nil {
			return nil, fmt.Errorf("spill file: %w", err)
		}
		seq, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(name), "spill-"), ".ndjson"), 10, 64)
		s.seq = max(s.seq, seq)
		s.ready = append(s.ready, &spillReader{path: name, bytes: fi.Size()})
		s.total += fi.Size()
	}
	return s, nil
}

func (s *spill) size() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

// add appends one NDJSON line to the newest segment.
func (s *spill) add(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total+int64(len(line)) > s.max {
		return errSpillFull
	}
	if s.cur == nil {
		s.seq++
		path := filepath.Join(s.dir, fmt.Sprintf("spill-%016d.ndjson", s.seq))
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return fmt.Errorf("create spill file: %w", err)
		}
		s.cur, s.curSeg = f, &spillReader{path: path}
	}
	n, err := s.cur.Write(line)
	s.curSeg.bytes += int64(n)
	s.total += int64(n)
	if err != nil {
		return fmt.Errorf("write spill file: %w", err)
	}
	return nil
}

// take returns the oldest segment for delivery, closing the one being
// appended to when no other is left; nil when the spill is empty.
func (s *spill) take() *spillReader {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ready) == 0 && s.cur != nil && s.curSeg.bytes > 0 {
		_ = s.cur.Close()
		s.ready = append(s.ready, s.curSeg)
		s.cur, s.curSeg = nil, nil
	}
	if len(s.ready) == 0 {
		return nil
	}
	rd := s.ready[0]
	s.ready = s.ready[1:]
	return rd
}

// done removes a delivered segment.
func (s *spill) done(rd *spillReader) {
	if rd.f != nil {
		_ = rd.f.Close()
	}
	_ = os.Remove(rd.path)
	s.mu.Lock()
	s.total -= rd.bytes
	s.mu.Unlock()
}

func (s *spill) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil
	}
	err := s.cur.Close()
	s.ready = append(s.ready, s.curSeg)
	s.cur, s.curSeg = nil, nil
	return err
}

// read appends up to n events of the segment to batch and counts lines
// that do not decode; eof is set at the end of the file (or when it cannot
// be read).
func (rd *spillReader) read(batch []schema.Event, n int) ([]schema.Event, int) {
	bad := 0
	if rd.f == nil {
		f, err := os.Open(rd.path)
		if err != nil {
			rd.eof = true
			return batch, 1
		}
		rd.f, rd.r = f, bufio.NewReaderSize(f, 64<<10)
	}
	for len(batch) < n {
		line, err := rd.r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var ev schema.Event
			if json.Unmarshal(line, &ev) == nil {
				batch = append(batch, ev)
			} else {
				bad++
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				bad++
			}
			rd.eof = true
			break
		}
	}
	return batch, bad
}
