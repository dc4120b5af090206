package chstore

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/mcplens/mcplens/schema"
	"github.com/mcplens/mcplens/store/chstore/clickhousetest"
)

// freezer is a TCP proxy to the real server that can stop reading from
// its clients without closing anything: a server process that hangs. Armed
// with freezeAfter(n), it forwards n more bytes from the client (the INSERT
// and its first blocks get through) and then freezes both directions.
type freezer struct {
	ln     net.Listener
	target string
	budget atomic.Int64 // bytes from clients still forwarded once armed
	armed  atomic.Bool
	frozen chan struct{}
	once   sync.Once
}

func newFreezer(t *testing.T, target string) *freezer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &freezer{ln: ln, target: target, frozen: make(chan struct{})}
	t.Cleanup(func() { _ = ln.Close() })
	go f.serve(t)
	return f
}

func (f *freezer) serve(t *testing.T) {
	for {
		c, err := f.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", f.target)
		if err != nil {
			t.Errorf("proxy dial %s: %v", f.target, err)
			_ = c.Close()
			continue
		}
		t.Cleanup(func() { _ = c.Close(); _ = s.Close() })
		go f.pipe(s, c, true)
		go f.pipe(c, s, false)
	}
}

// pipe copies until frozen, then neither reads nor closes.
func (f *freezer) pipe(dst io.Writer, src io.Reader, fromClient bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if fromClient && f.armed.Load() && f.budget.Add(-int64(n)) < 0 {
			f.once.Do(func() { close(f.frozen) })
		}
		select {
		case <-f.frozen:
			<-make(chan struct{}) // hang; the test's cleanup closes the sockets
		default:
		}
		if n > 0 {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// freezeAfter freezes the proxy once n more bytes came from clients.
func (f *freezer) freezeAfter(n int64) {
	f.budget.Store(n)
	f.armed.Store(true)
}

// incompressibleBatch is about 48 MiB of random base64 bodies in
// 1,500 rows: more than the kernel's socket buffers and the proxy hold,
// even after LZ4, so a write to a frozen server blocks.
func incompressibleBatch(token string) *schema.Batch {
	rng := rand.New(rand.NewPCG(7, 7))
	b := &schema.Batch{Token: token, Exchanges: benchRows(1500)}
	raw := make([]byte, 16<<10)
	for i := range b.Exchanges {
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		b.Exchanges[i].ExchangeID += "-" + token
		b.Bodies = append(b.Bodies, schema.Body{
			ExchangeID: b.Exchanges[i].ExchangeID, TS: b.Exchanges[i].TS,
			RequestBody: base64.StdEncoding.EncodeToString(raw), ResponseBody: base64.StdEncoding.EncodeToString(raw[:len(raw)/2]),
		})
	}
	return b
}

// openFrozen migrates a fresh database on the real server and opens a
// second store on it through a freezer.
func openFrozen(t *testing.T, cfg Config) (*Store, *freezer) {
	t.Helper()
	dsn := clickhousetest.DSN(t)
	_, db := openFresh(t, dsn)
	u, err := url.Parse(clickhousetest.WithDatabase(t, dsn, db))
	if err != nil {
		t.Fatal(err)
	}
	f := newFreezer(t, u.Host)
	u.Host = f.ln.Addr().String()
	s, err := Open(t.Context(), u.String(), cfg, zerolog.Nop(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, f
}

// writeOrHang runs Write and fails the test if it has not returned after
// the liveness bound (not a speed check: the write either ends or hangs).
func writeOrHang(t *testing.T, ctx context.Context, s *Store, b *schema.Batch) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Write(ctx, b) }()
	select {
	case err := <-done:
		return err
	case <-time.After(3 * time.Minute):
		t.Fatal("the write to a frozen server is still blocked after 3 minutes")
		return nil
	}
}

// TestServerFrozenWriteTimesOut: a server that stops reading and answering
// in the middle of an INSERT fails the attempt after
// --clickhouse-insert-timeout, where before it waited for the driver's
// read timeout (5 minutes an attempt, 5 attempts) or, in batch.Flush,
// which has no context watchdog, until the kernel gave up.
func TestServerFrozenWriteTimesOut(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InsertTimeout, cfg.RetryAttempts = 2*time.Second, 1
	s, f := openFrozen(t, cfg)
	if err := s.Write(t.Context(), &schema.Batch{Token: "before", Exchanges: benchRows(10)}); err != nil {
		t.Fatalf("write through the proxy before it freezes: %v", err)
	}
	f.freezeAfter(2 << 20) // in the middle of the blocks of the first INSERT
	err := writeOrHang(t, t.Context(), s, incompressibleBatch("frozen"))
	if !errors.Is(err, errInsertTimeout) {
		t.Fatalf("write to a frozen server: %v, want the insert timeout", err)
	}
}

// TestServerFrozenWriteStopsOnCancel: a stop (the context cancelled) ends
// an insert blocked in a write to a frozen server at once, long before
// the write timeout.
func TestServerFrozenWriteStopsOnCancel(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InsertTimeout, cfg.RetryAttempts = time.Hour, 1
	s, f := openFrozen(t, cfg)
	if err := s.Write(t.Context(), &schema.Batch{Token: "before", Exchanges: benchRows(10)}); err != nil {
		t.Fatalf("write through the proxy before it freezes: %v", err)
	}
	f.freezeAfter(2 << 20) // in the middle of the blocks of the first INSERT
	ctx, cancel := context.WithCancel(t.Context())
	// Cancel once the write is under way (or, on a slow machine, before:
	// then the insert sees the cancel between blocks; the outcome is the
	// same).
	time.AfterFunc(2*time.Second, cancel)
	err := writeOrHang(t, ctx, s, incompressibleBatch("cancelled"))
	if err == nil {
		t.Fatal("a cancelled write to a frozen server succeeded")
	}
	if ctx.Err() == nil {
		t.Fatalf("the write ended before the cancel: %v", err)
	}
}

// TestDialerTLS: with TLS configured the store's dialer does the handshake
// itself (the driver does not once DialContext is set), naming the server
// by the address's host, and the connection it returns is a deadlineConn.
func TestDialerTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }))
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	var cs conns
	dial := cs.dialer(time.Second, time.Second, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	addr := srv.Listener.Addr().String() // 127.0.0.1, which the certificate names
	c, err := dial(t.Context(), addr)
	if err != nil {
		t.Fatalf("dial %s with TLS: %v", addr, err)
	}
	defer c.Close()
	dc, ok := c.(*deadlineConn)
	if !ok {
		t.Fatalf("the dialer returned a %T, want a *deadlineConn", c)
	}
	if _, ok := dc.Conn.(*tls.Conn); !ok {
		t.Fatalf("the connection under it is a %T, want a *tls.Conn", dc.Conn)
	}
	if _, err := io.WriteString(c, "GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := io.ReadAll(c)
	if err != nil || !strings.HasSuffix(string(resp), "ok") {
		t.Fatalf("response over the TLS connection: %q, %v", resp, err)
	}
	if len(cs.set) != 1 {
		t.Errorf("%d connections tracked, want 1", len(cs.set))
	}
}
