package sqlite_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/internal/proctest"
	_ "github.com/leasehold/leasehold/store/sqlite" // the sqlite:// opener, for the workers
)

// TestMain lets this test binary serve as the worker processes of TestFailoverProcesses;
// otherwise it runs the tests as usual.
func TestMain(m *testing.M) {
	proctest.MaybeWorker()
	os.Exit(m.Run())
}

// TestFailoverProcesses is the election's multi-process failover test over one SQLite file:
// three processes with L=600ms, R=200ms. A SIGKILLed leader is replaced within L+R of its
// last renewal plus the slack (E6); a SIGTERMed one releases the lease and another leads
// within R plus the slack (E7); two processes never lead at once (E2, E5, W7) and the term
// grows with each leader (W8).
func TestFailoverProcesses(t *testing.T) {
	proctest.Failover(t, "sqlite://"+filepath.ToSlash(filepath.Join(t.TempDir(), "registry.db")))
}
