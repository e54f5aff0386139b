package campaign

import (
	"os"
	"testing"
)

// TestMain makes the test binary double as the worker program: Run re-executes it.
func TestMain(m *testing.M) {
	MaybeWorker()
	os.Exit(m.Run())
}
