package duckstore

import (
	"context"
	_ "embed"
	"fmt"
	"slices"

	"github.com/mcplens/mcplens/schema"
)

//go:embed load_state.sql
var loadStateSQL string

// LoadState returns the ingest state the batches stored (pipeline.StateSink):
// the marks of streams (nil: every stream) and their waiting events in
// offset order. A DuckDB file has one writer, so the one ingester that
// writes it owns every stream's state, and the tables are small: they are
// read whole and filtered here.
func (s *Store) LoadState(ctx context.Context, streams []string) ([]schema.StreamState, error) {
	out, err := s.loadState(ctx)
	if err != nil || streams == nil {
		return out, err
	}
	return slices.DeleteFunc(out, func(st schema.StreamState) bool { return !slices.Contains(streams, st.Mark.Stream) }), nil
}

func (s *Store) loadState(ctx context.Context) ([]schema.StreamState, error) {
	stmts := schema.SplitStatements(loadStateSQL)
	rows, err := s.db.QueryContext(ctx, stmts[0])
	if err != nil {
		return nil, fmt.Errorf("load ingest streams of %q: %w", s.path, err)
	}
	defer rows.Close()
	var out []schema.StreamState
	at := map[string]int{}
	for rows.Next() {
		var m schema.StreamMark
		var part int32
		var maxNS, lagNS, lagAtNS int64
		var held []any
		if err := rows.Scan(&m.Stream, &m.Topic, &part, &m.Next, &maxNS, &held, &lagNS, &lagAtNS); err != nil {
			return nil, fmt.Errorf("load ingest streams of %q: %w", s.path, err)
		}
		m.Partition = int(part)
		for _, h := range held {
			off, ok := h.(int64)
			if !ok {
				return nil, fmt.Errorf("load ingest streams of %q: held offset %v of stream %q is %T", s.path, h, m.Stream, h)
			}
			m.Held = append(m.Held, off)
		}
		m.MaxTS = schema.FromUnixNano(maxNS)
		m.MergeLag, m.MergeLagAt = schema.MergeLagOf(lagNS, lagAtNS)
		at[m.Stream] = len(out)
		out = append(out, schema.StreamState{Mark: m})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load ingest streams of %q: %w", s.path, err)
	}
	waiting, err := s.db.QueryContext(ctx, stmts[1])
	if err != nil {
		return nil, fmt.Errorf("load waiting events of %q: %w", s.path, err)
	}
	defer waiting.Close()
	for waiting.Next() {
		var sv schema.SavedEvent
		if err := waiting.Scan(&sv.Stream, &sv.Offset, &sv.EventID, &sv.TS, &sv.Data); err != nil {
			return nil, fmt.Errorf("load waiting events of %q: %w", s.path, err)
		}
		i, ok := at[sv.Stream]
		if !ok { // a mark is written with every saved event; keep it anyway
			i = len(out)
			at[sv.Stream] = i
			out = append(out, schema.StreamState{Mark: schema.StreamMark{Stream: sv.Stream}})
		}
		out[i].Saved = append(out[i].Saved, sv)
	}
	if err := waiting.Err(); err != nil {
		return nil, fmt.Errorf("load waiting events of %q: %w", s.path, err)
	}
	return out, nil
}

// Ping reports whether the store can be written (pipeline.Pinger): when it
// can and a batch was still refused, the pipeline isolates the rows the
// store refuses.
func (s *Store) Ping(ctx context.Context) error {
	if s.readOnly {
		return fmt.Errorf("store %q opened read-only", s.path)
	}
	var one int
	if err := s.db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("ping %q: %w", s.path, err)
	}
	return nil
}
