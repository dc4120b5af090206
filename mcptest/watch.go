package mcptest

import (
	"context"
	"fmt"
	"net/http"
	"sync"
)

// watch is the outermost middleware of a test server. It counts the
// JSON-RPC methods the server received and the requests still in flight,
// so that a scenario can wait for messages the SDK client sends in the
// background and for the recorder to have written every exchange before
// the client cancels anything.
type watch struct {
	next http.Handler

	mu       sync.Mutex
	counts   map[string]int // per JSON-RPC method
	inflight int            // requests other than GET streams
	total    int            // every request received
	changed  chan struct{}  // closed and replaced on every change
}

func newWatch(next http.Handler) *watch {
	return &watch{next: next, counts: map[string]int{}, changed: make(chan struct{})}
}

func (wt *watch) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		wt.update(func() { wt.total++ })
		wt.next.ServeHTTP(w, r)
		return
	}
	head, err := readHead(r)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	wt.update(func() {
		wt.total++
		wt.inflight++
		if head.Method != "" {
			wt.counts[head.Method]++
		}
	})
	defer wt.update(func() { wt.inflight-- })
	wt.next.ServeHTTP(w, r)
}

func (wt *watch) update(fn func()) {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	fn()
	close(wt.changed)
	wt.changed = make(chan struct{})
}

// wait waits until cond holds or ctx ends; cond runs under the lock.
func (wt *watch) wait(ctx context.Context, what string, cond func() bool) error {
	for {
		wt.mu.Lock()
		ok, ch := cond(), wt.changed
		wt.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", what, ctx.Err())
		case <-ch:
		}
	}
}

// count is how many requests of method the server received so far.
func (wt *watch) count(method string) int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.counts[method]
}

// requests is how many HTTP requests the server received so far.
func (wt *watch) requests() int {
	wt.mu.Lock()
	defer wt.mu.Unlock()
	return wt.total
}

// waitCount waits until the server received at least n requests of method.
func (wt *watch) waitCount(ctx context.Context, method string, n int) error {
	return wt.wait(ctx, fmt.Sprintf("%d %q requests", n, method), func() bool { return wt.counts[method] >= n })
}

// settle waits until no request other than a GET stream is in flight, and
// so every finished exchange has been recorded.
func (wt *watch) settle(ctx context.Context) error {
	return wt.wait(ctx, "in-flight requests", func() bool { return wt.inflight == 0 })
}
