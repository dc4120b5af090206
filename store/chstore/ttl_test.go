package chstore

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/queries"
	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// TestServerTTLWarnsAndBackfill replays the conformance corpus (weeks
// old) into a database with the default 30-day TTL and 7-day body TTL:
// the rows vanish on the real server, and the store says so per table
// with counts and a metric. The backfill recipe of the README (a separate
// database migrated with --clickhouse-ttl 0) keeps and answers them.
func TestServerTTLWarnsAndBackfill(t *testing.T) {
	dsn := clickhousetest.DSN(t)
	ctx := t.Context()
	corpus := loadCorpusBatch(t)
	newest := corpus.Exchanges[0].TS
	for _, e := range corpus.Exchanges {
		if e.TS.After(newest) {
			newest = e.TS
		}
	}
	// The newest row 20 days old: every body is past the 7-day body TTL,
	// the exchanges of the corpus' older days past the 30-day TTL; 40
	// days: everything.
	for _, tc := range []struct {
		name                 string
		age                  time.Duration
		minExchanges, bodies int
	}{
		{"bodies_expired", 20 * 24 * time.Hour, 1, len(corpus.Bodies)},
		{"all_expired", 40 * 24 * time.Hour, len(corpus.Exchanges), len(corpus.Bodies)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dbDSN, _ := clickhousetest.NewDatabase(t, dsn)
			var logs bytes.Buffer
			reg := prometheus.NewRegistry()
			s, err := Open(ctx, dbDSN, DefaultConfig(), zerolog.New(&logs), reg)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Migrate(ctx, schema.DefaultOptions()); err != nil {
				t.Fatal(err)
			}
			// The server's clock decides what expires: move the
			// rows so that the newest is tc.age old.
			shift := time.Since(newest) - tc.age
			b := *corpus
			b.Exchanges = append([]schema.Exchange(nil), corpus.Exchanges...)
			b.Bodies = append([]schema.Body(nil), corpus.Bodies...)
			for i := range b.Exchanges {
				b.Exchanges[i].TS = b.Exchanges[i].TS.Add(shift)
				b.Exchanges[i].EndTS = b.Exchanges[i].EndTS.Add(shift)
			}
			for i := range b.Bodies {
				b.Bodies[i].TS = b.Bodies[i].TS.Add(shift)
			}
			b.Token = "ttl"
			if err := s.Write(ctx, &b); err != nil {
				t.Fatal(err)
			}
			warned := map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
				var l struct {
					Level, Table, Message string
					Expired, Rows         int
				}
				if json.Unmarshal([]byte(line), &l) == nil && l.Level == "warn" && strings.Contains(l.Message, "--clickhouse-ttl") {
					warned[l.Table] = l.Expired
				}
			}
			// What the warning says is what the server does: the rows it
			// counts are the rows the server deletes.
			for table, stored := range map[string]int{"exchanges": len(b.Exchanges), "exchange_bodies": len(b.Bodies)} {
				// The background TTL merges run when they are due;
				// OPTIMIZE FINAL runs them now.
				if err := s.conn.Exec(ctx, "OPTIMIZE TABLE "+table+" FINAL"); err != nil {
					t.Fatal(err)
				}
				visible := int(count(t, s, "SELECT count() FROM "+table))
				metric := int(counter(s.m.expired.WithLabelValues(table)))
				if warned[table] != stored-visible || metric != stored-visible {
					t.Errorf("%s: warned %d, metric %d, but the server shows %d of %d stored", table, warned[table], metric, visible, stored)
				}
			}
			if warned["exchanges"] < tc.minExchanges || warned["exchange_bodies"] != tc.bodies {
				t.Errorf("warnings %v, want exchanges >= %d, exchange_bodies = %d", warned, tc.minExchanges, tc.bodies)
			}
		})
	}

	t.Run("backfill_database", func(t *testing.T) {
		// README: replay an old incident into its own database with no TTL.
		var logs bytes.Buffer
		dbDSN, _ := clickhousetest.NewDatabase(t, dsn)
		s, err := Open(ctx, dbDSN, DefaultConfig(), zerolog.New(&logs), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		opts := schema.DefaultOptions()
		opts.TTL, opts.BodyTTL = 0, 0
		if err := s.Migrate(ctx, opts); err != nil {
			t.Fatal(err)
		}
		corpus.Token = "backfill"
		if err := s.Write(ctx, corpus); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(logs.String(), "--clickhouse-ttl") {
			t.Errorf("a database without TTL warned: %s", logs.String())
		}
		if n := count(t, s, "SELECT count() FROM exchanges"); int(n) != len(corpus.Exchanges) {
			t.Errorf("backfill database holds %d exchanges, want %d", n, len(corpus.Exchanges))
		}
		got, err := s.UnknownSideEffectRetries(ctx, queries.RetriesParams{Filter: queries.Filter{From: newest.Add(-24 * time.Hour), To: newest.Add(time.Hour), Limit: 100}})
		if err != nil || len(got) == 0 {
			t.Errorf("the backfilled incident answers %d retries (%v)", len(got), err)
		}
	})
}
