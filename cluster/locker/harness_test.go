package locker

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/bubble"
	"github.com/leasehold/leasehold/internal/faultstore"
	"github.com/leasehold/leasehold/internal/logcapture"
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

var quietLogger = bubble.QuietLogger

// logCapture collects JSON log records for assertions.
type logCapture = logcapture.Capture
