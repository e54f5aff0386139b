package memory_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

func open(t *testing.T, url string) store.Store {
	t.Helper()
	s, err := store.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("Open(%q): %v", url, err)
	}
	if _, ok := s.(*memory.Store); !ok {
		t.Fatalf("Open(%q) = %T, want *memory.Store", url, s)
	}
	return s
}

// shares reports whether a document created through a is visible through b.
func shares(t *testing.T, a, b store.Store) bool {
	t.Helper()
	key := fmt.Sprintf("probe-%x", rand.Uint64())
	if err := a.Create(t.Context(), key, map[string]any{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Get(t.Context(), key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// T4: the mem scheme is registered by importing the package.
func TestOpenerRegistered(t *testing.T) {
	if !slices.Contains(store.Schemes(), "mem") {
		t.Fatalf("Schemes() = %v, want mem among them", store.Schemes())
	}
}

func TestURLs(t *testing.T) {
	n := fmt.Sprintf("%x", rand.Uint64()) // names are process-wide: keep them unique to this run
	for _, c := range []struct {
		name   string
		a, b   string
		shared bool
	}{
		{"anonymous stores are new each time", "mem://", "mem://", false},
		{"anonymous with a slash", "mem:///", "mem://", false},
		{"same name, same store", "mem://same-" + n, "mem://same-" + n, true},
		{"different names, different stores", "mem://one-" + n, "mem://two-" + n, false},
		{"named vs anonymous", "mem://named-" + n, "mem://", false},
		{"path form names the same store", "mem://p-" + n, "mem:///p-" + n, true},
		{"opaque form names the same store", "mem:o-" + n, "mem://o-" + n, true},
		{"trailing slash names the same store", "mem://t-" + n + "/", "mem://t-" + n, true},
		{"upper-case scheme", "MEM://u-" + n, "mem://u-" + n, true},
		{"nested names", "mem://x-" + n + "/y", "mem://x-" + n + "/y", true},
		// Regression: the slash was dropped, so these two named the same store.
		{"slash is part of the name", "mem://x-" + n + "/y", "mem://x-" + n + "y", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, b := open(t, c.a), open(t, c.b)
			if got := shares(t, a, b); got != c.shared {
				t.Errorf("%s and %s share documents: %v, want %v", c.a, c.b, got, c.shared)
			}
		})
	}
}

// The store opened by URL passes the conformance suite too.
func TestConformanceByURL(t *testing.T) {
	s := open(t, fmt.Sprintf("mem://conformance-%x", rand.Uint64()))
	storetestRun(t, s)
}
