package proctest_test

import (
	"os"
	"path/filepath"
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
	proctest.Failover(t, "file://"+filepath.ToSlash(filepath.Join(t.TempDir(), "registry.json")))
}
