package etcd

import (
	"slices"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestConformance runs the store suite (T1–T5) against a real etcd.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestOpenByURL checks that importing the package registers the etcd scheme (T4), with one or
// several endpoints.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	if !slices.Contains(store.Schemes(), "etcd") {
		t.Fatalf("scheme etcd is not registered: %v", store.Schemes())
	}
	raw, _ := serverURL(t)
	// A second endpoint that is down: the client uses the one that answers.
	raw = strings.Replace(raw, etcdAddr, etcdAddr+","+testenv.ClosedPort(t), 1)
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	es, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open(%q) returned a %T", raw, s)
	}
	if eps := es.Client().Endpoints(); len(eps) != 2 {
		t.Errorf("endpoints = %v, want two", eps)
	}
	if err := s.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	s.Delete(t.Context(), "k", nil)
}

// TestRetryWhileConditionHolds: conditional patches whose condition holds succeed however
// often other writers move the key's revision, none lost (T2); see
// storetest.RetryWhileConditionHolds.
func TestRetryWhileConditionHolds(t *testing.T) {
	t.Parallel()
	storetest.RetryWhileConditionHolds(t, openTest(t))
}
