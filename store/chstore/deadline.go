package chstore

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"time"
)

// The driver bounds reads (its ReadTimeout) and watches the context while
// it sends the last block of an INSERT, but a write to a server that
// stopped reading (a frozen process, a host gone without a reset) blocks
// until the kernel gives up, which can be a quarter of an hour; and
// batch.Flush, which sends the blocks before the last, does not watch the
// context at all. So a partition could stall in a write past every
// shutdown. Each connection the store dials is a deadlineConn: an insert
// attempt that is cancelled or runs past --clickhouse-insert-timeout
// interrupts the writes in flight, and every Write must finish within
// that timeout (or the driver's own deadline, if sooner) in any case: a
// write that began just after the interrupt, or the driver's cancel
// packet to a server that no longer reads.

// conns holds the live connections of one store.
type conns struct {
	mu  sync.Mutex
	set map[*deadlineConn]struct{}
}

// dialer returns the driver's DialContext: TCP, or TLS when tlsConf is
// set, each connection wrapped so its writes have a deadline.
func (cs *conns) dialer(timeout, writeTimeout time.Duration, tlsConf *tls.Config) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		var c net.Conn
		var err error
		if tlsConf != nil {
			c, err = (&tls.Dialer{NetDialer: d, Config: tlsConf}).DialContext(ctx, "tcp", addr)
		} else {
			c, err = d.DialContext(ctx, "tcp", addr)
		}
		if err != nil {
			return nil, err
		}
		dc := &deadlineConn{Conn: c, timeout: writeTimeout, owner: cs}
		cs.mu.Lock()
		if cs.set == nil {
			cs.set = make(map[*deadlineConn]struct{})
		}
		cs.set[dc] = struct{}{}
		cs.mu.Unlock()
		return dc, nil
	}
}

// interrupt makes the writes in flight on every connection fail now (the
// driver does not say which connection an insert holds); a write that
// starts later gets its own deadline again. Inserts of other partitions
// that are interrupted fail with a timeout and are retried under the same
// deduplication token.
func (cs *conns) interrupt() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for c := range cs.set {
		c.interrupt()
	}
}

// deadlineConn is a net.Conn whose every Write has a deadline.
type deadlineConn struct {
	net.Conn
	timeout time.Duration
	owner   *conns

	mu     sync.Mutex
	driver time.Time // the write deadline the driver set, zero for none
}

func (c *deadlineConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	dl := time.Now().Add(c.timeout)
	if !c.driver.IsZero() && c.driver.Before(dl) {
		dl = c.driver
	}
	err := c.Conn.SetWriteDeadline(dl)
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// interrupt ends a write in flight with a timeout error; the next Write
// sets its own deadline again, so an idle connection is not harmed.
func (c *deadlineConn) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	_ = c.Conn.SetWriteDeadline(time.Unix(1, 0))
}

func (c *deadlineConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.driver = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *deadlineConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.driver = t
	c.mu.Unlock()
	return c.Conn.SetWriteDeadline(t)
}

func (c *deadlineConn) Close() error {
	c.owner.mu.Lock()
	delete(c.owner.set, c)
	c.owner.mu.Unlock()
	return c.Conn.Close()
}
