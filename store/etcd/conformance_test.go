package etcd

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

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
	raw = strings.Replace(raw, etcdAddr, etcdAddr+","+closedPort(t), 1)
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	es, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open(%q) returned a %T", raw, s)
	}
	if eps := es.client.Endpoints(); len(eps) != 2 {
		t.Errorf("endpoints = %v, want two", eps)
	}
	if err := s.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	s.Delete(t.Context(), "k", nil)
}

// TestRetryWhileConditionHolds checks the retry of a conditional Patch: writers that change
// other fields move the key's revision, and every conditional patch whose condition still holds
// must succeed anyway, none lost (T2).
func TestRetryWhileConditionHolds(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	ctx := t.Context()
	if err := s.Create(ctx, "k", map[string]any{"holder": "me"}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, 2*n)
	for i := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			errs <- s.Patch(ctx, "k", map[string]any{fmt.Sprintf("other%d", i): i}, nil)
		}()
		go func() {
			defer wg.Done()
			errs <- s.Patch(ctx, "k", map[string]any{fmt.Sprintf("mine%d", i): i}, &store.Condition{Field: "holder", Value: "me"})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	doc, err := s.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		for _, f := range []string{"other", "mine"} {
			if doc[fmt.Sprintf("%s%d", f, i)] != float64(i) {
				t.Errorf("T2: lost update %s%d: %v", f, i, doc)
			}
		}
	}
	// A condition that stops holding while the writer retries makes it fail, not overwrite.
	err = s.Delete(ctx, "k", &store.Condition{Field: "holder", Value: "someone else"})
	if !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), `"holder" is not "someone else"`) {
		t.Errorf("Delete on a mismatched condition: %v", err)
	}
	err = s.Delete(ctx, "k", &store.Condition{Field: "nosuchfield", Value: "me"})
	if !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), `no field "nosuchfield"`) {
		t.Errorf("Delete on a missing field: %v", err)
	}
}
