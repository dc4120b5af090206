package pipeline

// textBlock is how many bytes one block of a textRing holds; a longer
// string gets a block of its own.
const textBlock = 32 << 10

// textRing keeps the strings a FIFO window holds back to back in blocks,
// so that the window's entries hold no pointers (the garbage collector
// does not scan them) and a string costs its bytes, not an allocation.
// Strings are added in the window's order and released from its front:
// release drops the blocks before the one the window's oldest string is
// in. It holds what the window holds plus at most two blocks, and one
// string's block when that string is over textBlock. Not safe for
// concurrent use.
type textRing struct {
	blocks ring[[]byte] // the front's number is first (mod 2³²)
	first  uint32
	spare  []byte // an emptied block, kept for the next add
}

// textRef names a string in a textRing: its block's number, where it
// starts and its length. Block numbers are kept mod 2³² (the ring holds
// fewer blocks than that, so they name one).
type textRef struct {
	block, off, n uint32
}

// add keeps s and returns its ref. A string is never split over blocks.
func (r *textRing) add(s string) textRef {
	last := r.blocks.len() - 1
	if last < 0 || len(*r.blocks.at(last))+len(s) > cap(*r.blocks.at(last)) {
		var b []byte
		switch {
		case len(s) > textBlock:
			b = make([]byte, 0, len(s))
		case r.spare != nil:
			b, r.spare = r.spare[:0], nil
		default:
			b = make([]byte, 0, textBlock)
		}
		r.blocks.push(b)
		last++
	}
	b := r.blocks.at(last)
	//nolint:gosec // G115: fewer than 2³² blocks and bytes in one
	ref := textRef{block: r.first + uint32(last), off: uint32(len(*b)), n: uint32(len(s))}
	*b = append(*b, s...)
	return ref
}

// bytes returns the bytes of ref, which must not be released; they are
// valid until then.
func (r *textRing) bytes(ref textRef) []byte {
	b := *r.blocks.at(int(ref.block - r.first))
	return b[ref.off : ref.off+ref.n]
}

// string returns a copy of ref's string.
func (r *textRing) string(ref textRef) string { return string(r.bytes(ref)) }

// release forgets the blocks before the one ref is in.
func (r *textRing) release(ref textRef) {
	for n := ref.block - r.first; n > 0 && r.blocks.len() > 1; n-- {
		r.drop()
	}
}

// releaseAll forgets every string.
func (r *textRing) releaseAll() {
	for r.blocks.len() > 0 {
		r.drop()
	}
}

func (r *textRing) drop() {
	if b := r.blocks.pop(); cap(b) == textBlock {
		r.spare = b
	}
	r.first++
}
