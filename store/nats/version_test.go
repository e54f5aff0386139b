package nats

import (
	"errors"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// TestCheckReplicas: a bucket with more than one replica is refused on a server before 2.9.21,
// whose compare-and-swap on it can let two writers win; one replica, or a later server, is
// accepted.
func TestCheckReplicas(t *testing.T) {
	for _, c := range []struct {
		replicas int
		version  string
		refused  bool
	}{
		{3, "2.9.10", true},
		{3, "2.9.20", true},
		{2, "2.8.4", true},
		{3, "2.10.0-beta.1", false}, // a pre-release part is not compared
		{3, "2.9.21", false},
		{3, "2.10.0", false},
		{3, "2.15.2", false},
		{3, "3.0.0", false},
		{1, "2.9.10", false},
		{3, "", false}, // no version announced: nothing to go by
		{3, "unknown", false},
	} {
		err := checkReplicas("b", c.replicas, c.version)
		if (err != nil) != c.refused {
			t.Errorf("%d replicas on %q: err = %v, refused = %v", c.replicas, c.version, err, c.refused)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, store.ErrConfig) {
			t.Errorf("%d replicas on %q: %v is not a configuration error", c.replicas, c.version, err)
		}
		if !strings.Contains(err.Error(), "upgrade every server to 2.9.21 or later") || !strings.Contains(err.Error(), c.version) {
			t.Errorf("%d replicas on %q: %v", c.replicas, c.version, err)
		}
	}
}
