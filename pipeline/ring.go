package pipeline

// ring is a FIFO queue in a growable circular buffer: push and pop are
// O(1) amortised and never copy the queue, unlike re-slicing a slice
// from its front (which keeps the whole backing array) or copying it down.
// The zero value is an empty ring. Not safe for concurrent use.
type ring[T any] struct {
	buf  []T
	head int
	n    int
}

func (r *ring[T]) len() int { return r.n }

// front returns the oldest element; the ring must not be empty.
func (r *ring[T]) front() T { return r.buf[r.head] }

func (r *ring[T]) push(v T) {
	if r.n == len(r.buf) {
		r.grow()
	}
	i := r.head + r.n
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	r.buf[i] = v
	r.n++
}

// pop removes and returns the oldest element; the ring must not be empty.
func (r *ring[T]) pop() T {
	var zero T
	v := r.buf[r.head]
	r.buf[r.head] = zero // let the garbage collector have what it held
	r.head++
	if r.head == len(r.buf) {
		r.head = 0
	}
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	return v
}

// grow doubles the buffer, unwrapping it so the head is at 0. A ring
// keeps its high-water size.
func (r *ring[T]) grow() {
	buf := make([]T, max(64, 2*len(r.buf)))
	k := copy(buf, r.buf[r.head:])
	copy(buf[k:], r.buf[:r.head])
	r.buf, r.head = buf, 0
}
