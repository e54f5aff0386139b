package proctest_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/leasehold/leasehold/internal/proctest"
	_ "github.com/leasehold/leasehold/store/file" // the file:// opener, for the workers
)

func TestMain(m *testing.M) {
	proctest.MaybeWorker()
	os.Exit(m.Run())
}

// TestFailoverFileStore: three processes elect a leader over one file store (T6) with L=600ms,
// R=200ms. A SIGKILLed leader is replaced within L+R of its last renewal plus the slack (E6); a
// SIGTERMed one releases the lease and another leads within R plus the slack (E7); two
// processes never lead at once (E2, E5, W7) and the term grows with each leader (W8).
func TestFailoverFileStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and runs for seconds")
	}
	if runtime.GOOS == "windows" {
		t.Skip("signals SIGKILL and SIGTERM to worker processes")
	}
	url := "file://" + filepath.ToSlash(filepath.Join(t.TempDir(), "registry.json"))
	const rounds = 3
	if tks := proctest.Run(t, proctest.Options{URL: url, Rounds: rounds}); len(tks) != 2*rounds {
		t.Errorf("%d takeovers measured, want %d", len(tks), 2*rounds)
	}
}
