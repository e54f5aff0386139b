package redis

import (
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store suite (T1–T5) against the machine's Redis.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestOpenByURL checks that importing the package registers its schemes (T4).
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	for _, scheme := range []string{"redis", "rediss", "redis+sentinel", "rediss+sentinel", "redis+cluster", "rediss+cluster"} {
		found := false
		for _, s := range store.Schemes() {
			found = found || s == scheme
		}
		if !found {
			t.Errorf("scheme %q is not registered: %v", scheme, store.Schemes())
		}
	}
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	if _, ok := s.(*Store); !ok {
		t.Fatalf("store.Open(%q) returned a %T", raw, s)
	}
}
