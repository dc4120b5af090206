package classify

import (
	"strings"
	"testing"
)

// TestTruncateBytes holds truncateBytes to truncate(string(b)) with
// multi-byte runes and invalid bytes at every offset around the cut.
func TestTruncateBytes(t *testing.T) {
	for _, r := range []string{"é", "€", "😀", "\xff", "\xe2\x82", "a"} {
		for pre := maxMessage - 8; pre <= maxMessage+8; pre++ {
			for _, tail := range []string{"", "b", strings.Repeat(r, 20), strings.Repeat("z", 5000)} {
				b := []byte(strings.Repeat("a", pre) + r + tail)
				if got, want := truncateBytes(b), truncate(string(b)); got != want {
					t.Fatalf("rune %q after %d bytes, tail %d: truncateBytes gives %d bytes, truncate %d", r, pre, len(tail), len(got), len(want))
				}
			}
		}
	}
}
