//go:build unix

package cloudemu

import (
	"context"
	"errors"
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
)

// StartT starts an emulator of kind for test t and stops it when t ends. An emulator that is
// not installed skips t, or fails it when servers are required (LEASEHOLD_REQUIRE_SERVERS=1).
func StartT(t testing.TB, kind Kind) *Emulator {
	t.Helper()
	e, err := Start(context.Background(), kind, t.TempDir())
	if errors.Is(err, ErrUnavailable) {
		testenv.Unavailable(t, err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("stop %s: %v", kind, err)
		}
	})
	return e
}
