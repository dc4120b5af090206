package pipeline

import (
	"maps"
	"sync"
	"sync/atomic"

	"github.com/mcplens/mcplens/classify"
)

// Stats is what an Engine has done since it started: the totals a progress
// report or the end-of-run summary prints.
type Stats struct {
	// Events counts lines read from the source: Accepted + Duplicates +
	// Quarantined.
	Events      int64
	Accepted    int64
	Duplicates  int64 // dropped by dedupe (redelivered or repeated event ids)
	Quarantined int64 // undecodable lines, stored with position and reason
	// Evicted counts halves emitted alone because pending state was full.
	Evicted int64
	// Reread counts events before a resumed stream's mark read again
	// because the mark held them (Config.StateHold); they are in Events.
	Reread int64
	// Exchanges counts emitted exchange records by outcome; Stored counts
	// those the sink has acknowledged.
	Exchanges map[classify.Outcome]int64
	Stored    int64
}

// TotalExchanges sums Exchanges.
func (s Stats) TotalExchanges() int64 {
	var n int64
	for _, c := range s.Exchanges {
		n += c
	}
	return n
}

// counters are an Engine's Stats as they grow: written by the engine's
// loop, read by Stats from any goroutine.
type counters struct {
	accepted, duplicates, quarantined, evicted, stored, reread atomic.Int64

	mu        sync.Mutex
	exchanges map[classify.Outcome]int64
}

func (c *counters) exchange(o classify.Outcome) {
	c.mu.Lock()
	if c.exchanges == nil {
		c.exchanges = map[classify.Outcome]int64{}
	}
	c.exchanges[o]++
	c.mu.Unlock()
}

// Stats returns a snapshot of the engine's totals. Safe for concurrent use
// with Run.
func (e *Engine) Stats() Stats {
	c := &e.counts
	s := Stats{
		Accepted:    c.accepted.Load(),
		Duplicates:  c.duplicates.Load(),
		Quarantined: c.quarantined.Load(),
		Evicted:     c.evicted.Load(),
		Reread:      c.reread.Load(),
		Stored:      c.stored.Load(),
	}
	s.Events = s.Accepted + s.Duplicates + s.Quarantined
	c.mu.Lock()
	s.Exchanges = maps.Clone(c.exchanges)
	c.mu.Unlock()
	if s.Exchanges == nil {
		s.Exchanges = map[classify.Outcome]int64{}
	}
	return s
}
