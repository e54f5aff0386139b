package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// RetryWhileConditionHolds checks the retry of a conditional Patch in a store that writes by
// compare-and-swap on a revision (built on driver.ReadCheckWrite): writers that change other
// fields move the key's revision, and every conditional patch whose condition still holds must
// succeed anyway, none lost (T2); a failed condition says whether the field is missing or holds
// another value (driver.ConditionError). s may hold other documents; the test uses key "k".
func RetryWhileConditionHolds(t *testing.T, s store.Store) {
	t.Helper()
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
