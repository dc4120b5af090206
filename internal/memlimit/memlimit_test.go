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

func TestParseGCPercent(t *testing.T) {
	for _, c := range []struct {
		flag, env string
		pct       int
		set       bool
	}{
		{"", "", DefaultGCPercent, true},
		{"", "200", 0, false}, // the runtime read GOGC already
		{"80", "200", 80, true},
		{"off", "", -1, true},
		{" 10 ", "", 10, true},
	} {
		pct, set, err := ParseGCPercent(c.flag, c.env)
		if err != nil || pct != c.pct || set != c.set {
			t.Errorf("ParseGCPercent(%q, %q) = %d %v %v; want %d %v", c.flag, c.env, pct, set, err, c.pct, c.set)
		}
	}
	for _, in := range []string{"9", "-5", "lots", "50%", "1e3"} {
		if _, _, err := ParseGCPercent(in, ""); err == nil {
			t.Errorf("ParseGCPercent(%q) took it", in)
		}
	}
}

func TestApplyGCPercent(t *testing.T) {
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	if got := ApplyGCPercent(70, true); got != 70 {
		t.Errorf("ApplyGCPercent(70) = %d", got)
	}
	if got := ApplyGCPercent(0, false); got != 70 {
		t.Errorf("ApplyGCPercent unset = %d, want the 70 in force left alone", got)
	}
}
