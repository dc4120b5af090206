// Package testport hands tests loopback ports for servers they stop and
// start again on the same port (a Kafka broker, a ClickHouse server).
//
// A port the kernel hands out for ":0" lies in its ephemeral range, the
// same range it picks the local ports of outgoing connections from. While
// such a server is down, any connection of the other tests running in
// parallel can take its port, and the restart fails with "address already
// in use" (CI failed that way). Ports below the ephemeral range are never
// taken implicitly, so a restart finds them free unless another test chose
// the same one, which a random pick with a bind check makes unlikely.
package testport

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowest is the bottom of the range ports are picked from; below it lie
// the well-known and many fixed development ports.
const lowest = 10000

// Restartable returns a port p such that p, p+1, ..., p+n-1 are free on
// 127.0.0.1 now and lie below the kernel's ephemeral port range.
func Restartable(t interface {
	Helper()
	Fatalf(string, ...any)
}, n int) int {
	t.Helper()
	hi := ephemeralLow() - n
	if hi <= lowest {
		t.Fatalf("testport: no room below the ephemeral range (starts at %d)", ephemeralLow())
	}
	for range 1000 {
		p := lowest + rand.IntN(hi-lowest)
		if free(p, n) {
			return p
		}
	}
	t.Fatalf("testport: no %d free consecutive ports in %d-%d", n, lowest, hi)
	return 0
}

func free(p, n int) bool {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for i := range n {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
		if err != nil {
			return false
		}
		held = append(held, l)
	}
	return true
}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux
// default 32768 where the setting cannot be read).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil {
				return lo
			}
		}
	}
	return 32768
}
