package leaktest

import (
	"strings"
	"testing"
	"time"
)

//go:noinline
func parked(started chan<- struct{}, stop <-chan struct{}) {
	close(started)
	<-stop
}

func TestWait(t *testing.T) {
	started, stop := make(chan struct{}), make(chan struct{})
	go parked(started, stop)
	<-started
	err := Wait(100*time.Millisecond, "leaktest.parked")
	if err == nil || !strings.Contains(err.Error(), "leaktest.parked") {
		t.Errorf("a parked goroutine: %v", err)
	}
	close(stop)
	if err := Wait(5*time.Second, "leaktest.parked"); err != nil {
		t.Errorf("after it ended: %v", err)
	}
	if err := Wait(5*time.Second, "leaktest.TestWait"); err != nil {
		t.Errorf("the test's own goroutine is not a leak of the check: %v", err)
	}
}
