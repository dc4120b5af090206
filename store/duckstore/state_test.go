package duckstore

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mcplens/mcplens/pipeline"
	"github.com/mcplens/mcplens/pipeline/statetest"
	"github.com/mcplens/mcplens/schema"
)

var _ pipeline.StateSink = (*Store)(nil)

// stateStore opens one DuckDB file again for every run.
func stateStore(t *testing.T) statetest.Store {
	path := filepath.Join(t.TempDir(), "state.duckdb")
	return statetest.Store{
		Open: func(t *testing.T) pipeline.StateSink {
			s, err := Open(context.Background(), path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			return s
		},
		Rows: func(t *testing.T, s pipeline.StateSink) []schema.Exchange { return storedRows(t, s.(*Store)) },
	}
}

func storedRows(t *testing.T, s *Store) []schema.Exchange {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(),
		`SELECT exchange_id, request_event_id, response_event_id, outcome FROM exchanges ORDER BY ts, exchange_id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []schema.Exchange
	for rows.Next() {
		var x schema.Exchange
		if err := rows.Scan(&x.ExchangeID, &x.RequestEventID, &x.ResponseEventID, &x.Outcome); err != nil {
			t.Fatal(err)
		}
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRestartsResumeFromState(t *testing.T) { statetest.RestartsResumeFromState(t, stateStore(t)) }

func TestStateReleasesOneEventOfAMessage(t *testing.T) {
	statetest.ReleasesOneEventOfAMessage(t, stateStore(t))
}

func TestStateKeepsHeldOffsets(t *testing.T) { statetest.KeepsHeldOffsets(t, stateStore(t)) }
