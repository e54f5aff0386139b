package holders

import (
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/faultstore"
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

// at sleeps until d after the world began (fake time inside a bubble) and waits for every
// goroutine of the bubble to block.
func (w *world) at(d time.Duration) {
	w.t.Helper()
	if wait := w.start.Add(d).Sub(time.Now()); wait > 0 {
		time.Sleep(wait)
	}
	synctest.Wait()
}

// rel returns t as a duration since the world began.
func (w *world) rel(t time.Time) time.Duration { return t.Sub(w.start) }

func sec(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// stamp returns the renewal time an Elector writes on prev at now: at the precision every
// Lock keeps (microseconds), and strictly after prev's (E9, M2), as the engine's own.
func stamp(now time.Time, prev cluster.Record) time.Time {
	t := now.Round(0).UTC().Truncate(time.Microsecond)
	if p := prev.RenewedAt.UTC().Truncate(time.Microsecond); !t.After(p) {
		t = p.Add(time.Microsecond)
	}
	return t
}
