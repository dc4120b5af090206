// Package memlimit sets the Go runtime's soft memory limit and GOGC from
// flags. With a limit, the garbage collector works harder as the heap
// nears it, instead of letting the heap grow to twice what is live. The ingester's windows
// hold what they must (retry chains, dedupe ids, waiting halves); the limit
// bounds what the runtime keeps around them.
package memlimit

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// Parse reads a size: bytes, or a number with one of the suffixes KB, MB,
// GB (powers of 1000) or KiB, MiB, GiB (powers of 1024). "" and "off" mean
// no limit of ours (0): the runtime keeps GOMEMLIMIT's, if set.
func Parse(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "off" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}}
	num, mult := s, 1.0
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || f*mult > math.MaxInt64 {
		return 0, fmt.Errorf("memory limit %q: want a positive size such as 256MiB or 1GiB, or off", s)
	}
	n := int64(f * mult)
	if n < 16<<20 {
		return 0, fmt.Errorf("memory limit %q: under 16MiB, the runtime could do nothing but collect", s)
	}
	return n, nil
}

// Apply sets the limit n (bytes) if n > 0 and returns the limit in force.
func Apply(n int64) int64 {
	if n > 0 {
		debug.SetMemoryLimit(n)
	}
	return debug.SetMemoryLimit(-1)
}

// DefaultGCPercent is the ingester's GOGC when neither its flag nor the
// GOGC environment variable sets one: the heap grows half of what is live
// before a collection, not all of it. Most of what the ingester holds
// live is its windows' tables and rings, which hold no pointers, so a
// collection costs little beyond what else is live; over 1,000,000 events
// at the default bounds 50 instead of 100 took peak RSS from 325-348 to
// 278-281 MB for 0-5% more CPU (BenchmarkIngestRSS).
const DefaultGCPercent = 50

// ParseGCPercent reads a GOGC setting: a percentage of at least 10, or
// "off" (-1: collect only at the memory limit). "" means the default:
// env (the GOGC environment variable) when set, which the runtime already
// applied (set false), else DefaultGCPercent.
func ParseGCPercent(s, env string) (pct int, set bool, err error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" && env != "":
		return 0, false, nil
	case s == "":
		return DefaultGCPercent, true, nil
	case s == "off":
		return -1, true, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 10 {
		return 0, false, fmt.Errorf("GOGC %q: want a percentage of at least 10 (50 is the default, 100 Go's), or off", s)
	}
	return n, true, nil
}

// ApplyGCPercent sets pct when set and returns the percentage in force.
func ApplyGCPercent(pct int, set bool) int {
	if set {
		debug.SetGCPercent(pct)
	}
	cur := debug.SetGCPercent(100)
	debug.SetGCPercent(cur)
	return cur
}
