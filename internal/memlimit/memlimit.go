// Package memlimit sets the Go runtime's soft memory limit from a flag:
// the garbage collector then works harder as the heap nears the limit,
// instead of letting it grow to twice what is live. The ingester's windows
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
