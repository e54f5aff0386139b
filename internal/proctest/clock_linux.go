//go:build linux

package proctest

import (
	"syscall"
	"unsafe"
)

const clockMonotonic = 1 // CLOCK_MONOTONIC in <linux/time.h>

// Now returns the host's CLOCK_MONOTONIC in nanoseconds, read with a raw clock_gettime system
// call. Every process on one host reads the same clock, so timestamps from different workers
// and from the driver compare directly. The monotonic reading inside a time.Time cannot serve:
// the runtime counts it from its own process's start. The wall clock could jump (NTP), and
// the checks compare instants a few milliseconds apart.
func Now() int64 {
	var ts syscall.Timespec
	_, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockMonotonic, uintptr(unsafe.Pointer(&ts)), 0)
	if errno != 0 {
		panic("proctest: clock_gettime(CLOCK_MONOTONIC): " + errno.Error())
	}
	return ts.Nano()
}
