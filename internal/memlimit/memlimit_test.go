package memlimit

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"": 0, "off": 0, "256MiB": 256 << 20, "1GiB": 1 << 30, "1.5GiB": 3 << 29, "500MB": 500e6,
		"33554432": 32 << 20, "64 MiB": 64 << 20, "20000KiB": 20000 << 10,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"lots", "-1GiB", "0", "12", "1MiB", "1TB", "NaNGiB", "InfGiB", "1e30GiB"} {
		if got, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, got)
		}
	}
}

func TestApply(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(before)
	if got := Apply(0); got != before {
		t.Errorf("Apply(0) = %d, want the limit left as it was (%d)", got, before)
	}
	if got := Apply(300 << 20); got != 300<<20 {
		t.Errorf("Apply(300MiB) = %d", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
}
