package sqlite_test

import (
	"os"
	"path/filepath"
	"runtime"
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
	if testing.Short() {
		t.Skip("starts processes and runs for seconds")
	}
	if runtime.GOOS == "windows" {
		t.Skip("signals SIGKILL and SIGTERM to worker processes")
	}
	url := "sqlite://" + filepath.ToSlash(filepath.Join(t.TempDir(), "registry.db"))
	const rounds = 3
	if tks := proctest.Run(t, proctest.Options{URL: url, Rounds: rounds}); len(tks) != 2*rounds {
		t.Errorf("%d takeovers measured, want %d", len(tks), 2*rounds)
	}
}
