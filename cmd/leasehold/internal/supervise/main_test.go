//go:build unix

package supervise

import (
	"os"
	"testing"
	"time"
)

// testGrace is the grace of the tests' supervisors: leasehold's default with a lease duration
// of 2s and a renew interval of 500ms.
const testGrace = 675 * time.Millisecond

func TestMain(m *testing.M) {
	// The keeper of a supervisor run within the tests: it runs this test binary
	// (/proc/self/exe on Linux, os.Executable elsewhere).
	if len(os.Args) > 1 && os.Args[1] == KeeperArg {
		os.Exit(KeeperMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}
