package schema

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// The token is the documented format (so a batch retried across versions
// keeps its token), whatever the parts a stream is given in and however
// many buffers its lines fill; Token starts over.
func TestBatchTokener(t *testing.T) {
	want := func(lines string) string {
		sum := sha256.Sum256([]byte(lines))
		return hex.EncodeToString(sum[:16])
	}
	var tk BatchTokener
	tk.Add(42, "kafka:mcp/0")
	tk.Add(7, "released\x00", "kafka:mcp/1", "\x00", "ev-1")
	tk.Add(0, "exchange\x00", "x-1")
	small := "kafka:mcp/0\x0042\nreleased\x00kafka:mcp/1\x00ev-1\x007\nexchange\x00x-1\x000\n"
	if got := tk.Token(); got != want(small) {
		t.Fatalf("token %s, want %s", got, want(small))
	}
	// Many pairs: several buffers' worth, and the tokener reused.
	var all strings.Builder
	for i := range 5000 {
		stream := fmt.Sprintf("file:/var/log/mcp-%d.jsonl", i%3)
		tk.Add(int64(i)*1000, stream)
		fmt.Fprintf(&all, "%s\x00%d\n", stream, int64(i)*1000)
	}
	if all.Len() < 3*tokenBuf {
		t.Fatalf("the test's lines fill %d bytes, fewer than three buffers", all.Len())
	}
	if got := tk.Token(); got != want(all.String()) {
		t.Fatalf("token of 5,000 pairs %s, want %s", got, want(all.String()))
	}
	// Started over: the first pairs give their token again, and pairs that
	// differ in one offset do not.
	tk.Add(42, "kafka:mcp/0")
	tk.Add(7, "released\x00", "kafka:mcp/1", "\x00", "ev-1")
	tk.Add(0, "exchange\x00", "x-1")
	if got := tk.Token(); got != want(small) {
		t.Fatalf("after Token: %s, want %s", got, want(small))
	}
	tk.Add(43, "kafka:mcp/0")
	if got := tk.Token(); got == want(small) || got != want("kafka:mcp/0\x0043\n") {
		t.Fatalf("another offset: %s", got)
	}
}

func BenchmarkBatchTokener(b *testing.B) {
	var tk BatchTokener
	b.ReportAllocs()
	for b.Loop() {
		for i := range 10_000 {
			tk.Add(int64(i)*2900, "kafka:mcp-events/3")
		}
		for range 6000 {
			tk.Add(0, "exchange\x00", "0f8fad5b-d9cb-469f-a165-70867728950e")
		}
		_ = tk.Token()
	}
}
