package pipeline

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcplens/mcplens/schema"
)

// FileSink appends exchange records to an NDJSON file (and quarantined
// lines to PATH.quarantine) and makes each batch durable with fsync before
// acknowledging it. It is idempotent across restarts: on open it reads the
// ids already in the file (dropping a line torn by a crash), and a record
// whose exchange id is already there is not written again. That turns the
// pipeline's at-least-once replay after a crash into exactly-once output.
// Not safe for concurrent use.
type FileSink struct {
	f, qf  *os.File
	ids    map[string]bool
	quarID map[string]bool
	w, qw  *bufio.Writer
}

// ParseFileSinkURL returns the path of a "file:PATH" sink URL.
func ParseFileSinkURL(raw string) (string, error) {
	path, ok := strings.CutPrefix(raw, "file:")
	if !ok || path == "" || path == "-" {
		return "", fmt.Errorf("file sink %q: want file:PATH", raw)
	}
	return path, nil
}

// OpenFileSink opens (or creates) the output file and its quarantine file.
func OpenFileSink(path string) (*FileSink, error) {
	s := &FileSink{ids: map[string]bool{}, quarID: map[string]bool{}}
	var err error
	if s.f, err = openRecovered(path, "exchange_id", s.ids); err != nil {
		return nil, err
	}
	if s.qf, err = openRecovered(path+".quarantine", "position", s.quarID); err != nil {
		s.f.Close()
		return nil, err
	}
	s.w, s.qw = bufio.NewWriterSize(s.f, 256<<10), bufio.NewWriterSize(s.qf, 64<<10)
	return s, nil
}

// openRecovered opens path for appending after reading the key of every
// complete line into seen and cutting off an incomplete last line.
func openRecovered(path, key string, seen map[string]bool) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open sink file %q: %w", path, err)
	}
	r := bufio.NewReaderSize(f, 1<<20)
	var good int64
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			break // a last line without newline was torn by a crash
		}
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("read sink file %q: %w", path, err)
		}
		good += int64(len(line))
		var rec map[string]json.RawMessage
		if json.Unmarshal(bytes.TrimSpace(line), &rec) == nil {
			var id string
			if json.Unmarshal(rec[key], &id) == nil {
				seen[id] = true
			}
		}
	}
	if err := f.Truncate(good); err != nil {
		f.Close()
		return nil, fmt.Errorf("truncate torn line of %q: %w", path, err)
	}
	if _, err := f.Seek(good, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("seek %q: %w", path, err)
	}
	return f, nil
}

// Write appends the batch's new exchanges and quarantined lines and syncs.
func (s *FileSink) Write(ctx context.Context, b *schema.Batch) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	size, err := s.f.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("sink file position: %w", err)
	}
	qsize, err := s.qf.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("sink file position: %w", err)
	}
	var fresh []string
	for i := range b.Exchanges {
		id := b.Exchanges[i].ExchangeID
		if s.ids[id] {
			continue
		}
		line, err := json.Marshal(&b.Exchanges[i])
		if err != nil {
			return fmt.Errorf("encode exchange %s: %w", id, err)
		}
		s.w.Write(line)
		s.w.WriteByte('\n')
		fresh = append(fresh, id)
	}
	var freshQ []string
	for _, q := range b.Quarantine {
		if s.quarID[q.Position] {
			continue
		}
		line, err := json.Marshal(struct {
			Position string `json:"position"`
			Reason   string `json:"reason"`
			Raw      string `json:"raw"`
			TS       string `json:"ts"`
		}{q.Position, q.Reason, string(q.Raw), q.TS.UTC().Format("2006-01-02T15:04:05.000Z07:00")})
		if err != nil {
			return fmt.Errorf("encode quarantine row %s: %w", q.Position, err)
		}
		s.qw.Write(line)
		s.qw.WriteByte('\n')
		freshQ = append(freshQ, q.Position)
	}
	for _, step := range []func() error{s.w.Flush, s.qw.Flush, s.f.Sync, s.qf.Sync} {
		if err := step(); err != nil {
			// Cut back what this batch wrote, so the retry does not double it.
			s.w.Reset(s.f)
			s.qw.Reset(s.qf)
			return errors.Join(fmt.Errorf("write sink file: %w", err), rewind(s.f, size), rewind(s.qf, qsize))
		}
	}
	for _, id := range fresh {
		s.ids[id] = true
	}
	for _, p := range freshQ {
		s.quarID[p] = true
	}
	return nil
}

func rewind(f *os.File, size int64) error {
	if err := f.Truncate(size); err != nil {
		return fmt.Errorf("rewind %s: %w", f.Name(), err)
	}
	_, err := f.Seek(size, io.SeekStart)
	return err
}

// Close flushes and closes both files.
// CopiesBatches marks FileSink a [Copier]: Write encodes the batch.
func (s *FileSink) CopiesBatches() {}

func (s *FileSink) Close() error {
	return errors.Join(s.w.Flush(), s.qw.Flush(), s.f.Close(), s.qf.Close())
}
