package holders

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/bubble"
	"github.com/leasehold/leasehold/internal/faultstore"
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

// world is the store the instances of a test share, and the fake time it began at, with the
// test's own helpers.
type world struct{ *bubble.World }

func newWorld(t *testing.T) *world { return &world{bubble.New(t)} }

var sec = bubble.Sec

var quietLogger = bubble.QuietLogger

// stamp returns the renewal time an Elector writes on prev at now: at the precision every
// Lock keeps (microseconds), and strictly after prev's (E9, M2), as the engine's own.
func stamp(now time.Time, prev cluster.Record) time.Time {
	t := now.Round(0).UTC().Truncate(time.Microsecond)
	if p := prev.RenewedAt.UTC().Truncate(time.Microsecond); !t.After(p) {
		t = p.Add(time.Microsecond)
	}
	return t
}
