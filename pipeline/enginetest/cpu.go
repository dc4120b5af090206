package enginetest

import (
	"syscall"
	"time"
)

// ProcessCPU is the process's user and system CPU time so far: what a
// benchmark's ingester spent, apart from a broker or server sharing the
// machine, for figures per CPU second. 0 if the kernel does not say.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
