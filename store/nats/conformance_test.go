package nats

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

// TestConformance runs the store suite (T1–T5) against the machine's NATS with JetStream.
func TestConformance(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	storetest.Run(t, func(*testing.T) store.Store { return s })
}

// TestOpenByURL checks that importing the package registers the nats scheme (T4), and that the
// bucket is created when missing.
func TestOpenByURL(t *testing.T) {
	t.Parallel()
	if !slices.Contains(store.Schemes(), "nats") {
		t.Fatalf("scheme nats is not registered: %v", store.Schemes())
	}
	raw, bucket := serverURL(t)
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close(s)
	ns, ok := s.(*Store)
	if !ok {
		t.Fatalf("store.Open(%q) returned a %T", raw, s)
	}
	defer ns.js.DeleteKeyValue(t.Context(), bucket)
	if ns.kv.Bucket() != bucket {
		t.Errorf("bucket = %q, want %q", ns.kv.Bucket(), bucket)
	}
	// Opening again finds the bucket instead of creating it.
	s2, err := Open(t.Context(), raw+"&create_bucket=false")
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

// TestMissingBucket checks that create_bucket=false makes a missing bucket an error naming it.
func TestMissingBucket(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	_, err := Open(t.Context(), raw+"&create_bucket=false")
	if err == nil || !strings.Contains(err.Error(), bucket) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open with a missing bucket and create_bucket=false: %v", err)
	}
}

// TestStoredUnderEncodedKey checks where a document lands: under the encoded key, in the
// configured bucket.
func TestStoredUnderEncodedKey(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if err := s.Create(t.Context(), "cluster:leader", map[string]any{"holder": "a"}); err != nil {
		t.Fatal(err)
	}
	e, err := s.kv.Get(t.Context(), "cluster=3Aleader")
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value()) != `{"holder":"a"}` {
		t.Errorf("stored value = %s", e.Value())
	}
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
	err = s.Delete(ctx, "k", &store.Condition{Field: "holder", Value: "someone else"})
	if !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), `"holder" is not "someone else"`) {
		t.Errorf("Delete on a mismatched condition: %v", err)
	}
	err = s.Delete(ctx, "k", &store.Condition{Field: "nosuchfield", Value: "me"})
	if !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), `no field "nosuchfield"`) {
		t.Errorf("Delete on a missing field: %v", err)
	}
}
