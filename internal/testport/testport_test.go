package testport

import (
	"fmt"
	"net"
	"testing"
)

func TestRestartableIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	for range 50 {
		p := Restartable(t, 2)
		if p < lowest || p+1 >= ephemeralLow() {
			t.Fatalf("port %d outside %d-%d", p, lowest, ephemeralLow())
		}
		for i := range 2 {
			l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", fmt.Sprintf("127.0.0.1:%d", p+i))
			if err != nil {
				t.Fatalf("port %d not free: %v", p+i, err)
			}
			l.Close()
		}
	}
}

func TestFreeSeesATakenPort(t *testing.T) {
	p := Restartable(t, 1)
	l, err := (&net.ListenConfig{}).Listen(t.Context(), "tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if free(p, 1) {
		t.Fatalf("port %d is held but free says it is free", p)
	}
	if free(p-1, 2) {
		t.Fatalf("ports %d-%d include a held one but free says they are free", p-1, p)
	}
}
