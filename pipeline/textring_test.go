package pipeline

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// The ring gives back every string it holds, whole, through blocks
// filled to the edge, strings longer than a block, releases from the
// front and block numbers that wrap at 2³², and holds what it holds plus
// at most two blocks and the long strings' own.
func TestTextRing(t *testing.T) {
	for _, first := range []uint32{0, math.MaxUint32 - 3} {
		rng := rand.New(rand.NewPCG(7, uint64(first)))
		r := textRing{first: first}
		type kept struct {
			ref textRef
			s   string
		}
		var window []kept
		for step := range 30_000 {
			n := rng.IntN(40)
			switch rng.IntN(500) {
			case 0:
				n = textBlock + rng.IntN(3*textBlock) // its own block
			case 1:
				n = textBlock - len(window)%7 // near a whole block
			}
			s := strings.Repeat(string(rune('a'+step%26)), n) + string(rune('A'+step%26))
			window = append(window, kept{r.add(s), s})
			if step%3 == 0 && len(window) > 0 { // the window moves on
				drop := rng.IntN(min(len(window), 8))
				window = window[drop:]
				if len(window) == 0 {
					r.releaseAll()
				} else {
					r.release(window[0].ref)
				}
			}
			if step%101 != 0 {
				continue
			}
			long := 0
			for _, k := range window {
				if got := r.string(k.ref); got != k.s {
					t.Fatalf("first %d, step %d: got %d bytes %.10q, want %d %.10q", first, step, len(got), got, len(k.s), k.s)
				}
				if len(k.s) > textBlock {
					long += len(k.s)
				}
			}
			held := 0
			for _, k := range window {
				held += len(k.s)
			}
			if r.held() > held+long+2*textBlock+textBlock {
				t.Fatalf("step %d: %d bytes in blocks for %d bytes of strings", step, r.held(), held)
			}
		}
	}
}

// Only what the ring was given comes back: an emptied ring starts over
// and a new string after it is found.
func TestTextRingEmpty(t *testing.T) {
	var r textRing
	a := r.add("first")
	r.releaseAll()
	if r.blocks.len() != 0 {
		t.Fatalf("%d blocks after releaseAll", r.blocks.len())
	}
	b := r.add("second")
	if got := r.string(b); got != "second" {
		t.Fatalf("got %q", got)
	}
	if a.block == b.block {
		t.Errorf("a released block's number was used again: %d", a.block)
	}
}

// held returns the bytes the ring's blocks hold.
func (r *textRing) held() int {
	n := 0
	for i := range r.blocks.len() {
		n += cap(*r.blocks.at(i))
	}
	return n
}
