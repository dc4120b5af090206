package pipeline

// ringBlock is how many elements one block of a ring holds.
const ringBlock = 1024

// ring is a FIFO queue in fixed-size blocks: push and pop are O(1)
// amortised and never copy elements, unlike re-slicing a slice from its
// front (which keeps the whole backing array) or copying it down. It holds
// what it holds plus at most two blocks, where a buffer that doubles
// holds up to twice its high-water mark for good: at a window of 600,000
// entries of 96 bytes that is 57 MB against up to 100 MB. The zero value
// is an empty ring. Not safe for concurrent use.
type ring[T any] struct {
	blocks [][]T // each ringBlock long; the first holds the front
	head   int   // index of the front in blocks[0]
	n      int
	spare  []T // an emptied block, kept for the next push
}

func (r *ring[T]) len() int { return r.n }

// front returns the oldest element; the ring must not be empty.
func (r *ring[T]) front() T { return r.blocks[0][r.head] }

// at returns the i-th oldest element; i must be below len.
func (r *ring[T]) at(i int) *T {
	i += r.head
	return &r.blocks[i/ringBlock][i%ringBlock]
}

func (r *ring[T]) push(v T) {
	i := r.head + r.n
	if i == len(r.blocks)*ringBlock {
		b := r.spare
		r.spare = nil
		if b == nil {
			b = make([]T, ringBlock)
		}
		r.blocks = append(r.blocks, b)
	}
	r.blocks[i/ringBlock][i%ringBlock] = v
	r.n++
}

// pop removes and returns the oldest element; the ring must not be empty.
func (r *ring[T]) pop() T {
	var zero T
	b := r.blocks[0]
	v := b[r.head]
	b[r.head] = zero // let the garbage collector have what it held
	r.head++
	r.n--
	switch {
	case r.n == 0:
		r.head = 0 // empty: the one block starts over
	case r.head == ringBlock:
		// The front block is done with: keep it as the spare and shift
		// the block list down (a copy of block pointers, once per
		// ringBlock pops).
		r.head = 0
		r.spare = b
		n := copy(r.blocks, r.blocks[1:])
		r.blocks[n] = nil
		r.blocks = r.blocks[:n]
	}
	return v
}
