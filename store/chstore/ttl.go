package chstore

import (
	"context"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// ttlTables are the tables whose TTL (schema.Options TTL and BodyTTL) can
// delete rows a batch stores.
var ttlTables = []string{"exchanges", "exchange_bodies", "quarantine"}

// ttlExpr matches the TTL schema.Apply writes, as system.tables shows it:
// "TTL toDateTime(ts) + toIntervalSecond(2592000)".
var ttlExpr = regexp.MustCompile(`\bTTL toDateTime\(ts\) \+ toIntervalSecond\((\d+)\)`)

// ttls caches the TTL of each table, read from system.tables once (again
// after Migrate). Safe for concurrent use.
type ttls struct {
	mu     sync.Mutex
	loaded bool
	of     map[string]time.Duration
}

func (c *ttls) reset() {
	c.mu.Lock()
	c.loaded = false
	c.mu.Unlock()
}

// tableTTLs returns each table's TTL (absent: none). A failed lookup is
// logged and tried again at the next batch; it never fails a write.
func (s *Store) tableTTLs(ctx context.Context) map[string]time.Duration {
	s.ttl.mu.Lock()
	defer s.ttl.mu.Unlock()
	if s.ttl.loaded || s.conn == nil {
		return s.ttl.of
	}
	rows, err := s.conn.Query(ctx, "SELECT name, engine_full FROM system.tables WHERE database = ? AND name IN (?, ?, ?, ?, ?, ?)",
		s.db, ttlTables[0], ttlTables[1], ttlTables[2], ttlTables[0]+"_local", ttlTables[1]+"_local", ttlTables[2]+"_local")
	if err != nil {
		s.log.Debug().Err(err).Msg("read the tables' TTL from system.tables")
		return s.ttl.of
	}
	defer rows.Close()
	of := map[string]time.Duration{}
	for rows.Next() {
		var name, engine string
		if err := rows.Scan(&name, &engine); err != nil {
			s.log.Debug().Err(err).Msg("read the tables' TTL from system.tables")
			return s.ttl.of
		}
		if m := ttlExpr.FindStringSubmatch(engine); m != nil {
			if sec, err := strconv.ParseInt(m[1], 10, 64); err == nil {
				of[trimLocal(name)] = time.Duration(sec) * time.Second
			}
		}
	}
	if rows.Err() != nil {
		return s.ttl.of
	}
	s.ttl.of, s.ttl.loaded = of, true
	return of
}

func trimLocal(name string) string {
	if n := len(name) - len("_local"); n > 0 && name[n:] == "_local" {
		return name[:n]
	}
	return name
}

// warnExpired counts the rows of a table older than its TTL, which
// ClickHouse deletes at its next merges (within hours, often seconds),
// and says so: a warning with the counts, the oldest row and the way to
// replay old logs, and mcplens_clickhouse_expired_rows_total.
func (s *Store) warnExpired(ctx context.Context, table string, ts func(i int) time.Time, n int) {
	ttl, ok := s.tableTTLs(ctx)[table]
	if !ok || ttl <= 0 || n == 0 {
		return
	}
	cutoff := s.now().Add(-ttl)
	expired := 0
	oldest := time.Time{}
	for i := range n {
		t := ts(i)
		if !t.After(cutoff) {
			expired++
			if oldest.IsZero() || t.Before(oldest) {
				oldest = t
			}
		}
	}
	if expired == 0 {
		return
	}
	s.m.expired.WithLabelValues(table).Add(float64(expired))
	s.log.Warn().Str("table", table).Int("expired", expired).Int("rows", n).
		Time("oldest", oldest).Dur("ttl", ttl).Time("cutoff", cutoff).
		Msg("rows older than the table's TTL: ClickHouse deletes them at its next merges; to replay old logs migrate a separate database with a longer --clickhouse-ttl (README: backfills)")
}
