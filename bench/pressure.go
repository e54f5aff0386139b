package main

import (
	"bytes"
	"os"
	"strconv"
	"time"
)

// cpuWaited returns the machine's total CPU pressure stall so far: the time during which at
// least one runnable task waited for a CPU (Linux PSI, the "some" line of /proc/pressure/cpu).
// Its growth during a trial says how long the machine had less CPU than its tasks wanted: a
// slow trial during which it grew as much was slowed by the machine, not by the election.
// It reports false where the kernel does not expose it.
func cpuWaited() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/pressure/cpu")
	if err != nil {
		return 0, false
	}
	return parsePressure(b)
}

// parsePressure reads the "some" line's total (microseconds) of a PSI file.
func parsePressure(b []byte) (time.Duration, bool) {
	for line := range bytes.Lines(b) {
		fields := bytes.Fields(line)
		if len(fields) == 0 || string(fields[0]) != "some" {
			continue
		}
		for _, f := range fields[1:] {
			if v, ok := bytes.CutPrefix(f, []byte("total=")); ok {
				us, err := strconv.ParseInt(string(v), 10, 64)
				if err != nil {
					return 0, false
				}
				return time.Duration(us) * time.Microsecond, true
			}
		}
	}
	return 0, false
}
