// Package leakcheck finds the goroutines a test started and left running. The test runs the code
// that starts them under a pprof label of its own (Tracker.Do); goroutines inherit the labels of
// the goroutine that starts them, so every goroutine started from there, directly or not, carries
// it, and other tests running in parallel do not.
package leakcheck

import (
	"bytes"
	"context"
	"fmt"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const labelKey = "leasehold_leakcheck"

var seq atomic.Uint64

// Tracker labels the goroutines started under Do.
type Tracker struct {
	value string
}

// New returns a Tracker with a label no other Tracker of the process has.
func New() *Tracker {
	return &Tracker{value: fmt.Sprintf("t%d", seq.Add(1))}
}

// Do runs f on the calling goroutine with the Tracker's label; the goroutines f starts, and
// those they start, carry it.
func (tr *Tracker) Do(f func()) {
	pprof.Do(context.Background(), pprof.Labels(labelKey, tr.value), func(context.Context) { f() })
}

// Running returns the stacks of the labelled goroutines still running, one string each.
func (tr *Tracker) Running() []string {
	var buf bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&buf, 1); err != nil {
		return []string{"leakcheck: goroutine profile: " + err.Error()}
	}
	want := fmt.Sprintf("%q:%q", labelKey, tr.value)
	var out []string
	for _, rec := range strings.Split(buf.String(), "\n\n") {
		for _, line := range strings.Split(rec, "\n") {
			if strings.HasPrefix(line, "# labels:") && strings.Contains(line, want) {
				out = append(out, rec)
				break
			}
		}
	}
	return out
}

// Check fails t if a labelled goroutine is still running after within. A goroutine that has
// done its last work takes a moment to exit, and nothing signals its exit: Check looks again
// every 10ms until none is left or within has passed.
func (tr *Tracker) Check(t testing.TB, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		left := tr.Running()
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d groups of goroutines still running %v after the end:\n%s", len(left), within, strings.Join(left, "\n\n"))
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}
