package locker

import (
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/internal/faultstore"
	"github.com/leasehold/leasehold/internal/logcapture"
	"github.com/leasehold/leasehold/store/memory"
)

const (
	testL = 15 * time.Second
	testR = 5 * time.Second
)

// faultStore is one process's connection to the store, with faults.
type faultStore = faultstore.Store

var (
	newFaultStore = faultstore.New
	errInjected   = faultstore.ErrInjected
)

// world is the store the processes of a test share, and the fake time it began at.
type world struct {
	t     *testing.T
	mem   *memory.Store
	start time.Time
}

func newWorld(t *testing.T) *world {
	return &world{t: t, mem: memory.New(), start: time.Now()}
}

// since returns the fake time elapsed since the world began.
func (w *world) since() time.Duration { return time.Since(w.start) }

// at sleeps until d after the world began (fake time inside a bubble) and waits for every
// goroutine of the bubble to block.
func (w *world) at(d time.Duration) {
	w.t.Helper()
	if wait := w.start.Add(d).Sub(time.Now()); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// logCapture collects JSON log records for assertions.
type logCapture = logcapture.Capture
