package nats

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

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
	defer ns.JetStream().DeleteKeyValue(t.Context(), bucket)
	if ns.Bucket().Bucket() != bucket {
		t.Errorf("bucket = %q, want %q", ns.Bucket().Bucket(), bucket)
	}
	// Opening again finds the bucket instead of creating it.
	s2, err := Open(t.Context(), raw+"&create_bucket=false")
	if err != nil {
		t.Fatal(err)
	}
	s2.Close()
}

// TestMissingBucket checks that create_bucket=false makes a missing bucket an error naming it:
// an answer, which Open does not try again until its context ends.
func TestMissingBucket(t *testing.T) {
	t.Parallel()
	raw, bucket := serverURL(t)
	_, err := Open(t.Context(), raw+"&create_bucket=false")
	if !errors.Is(err, jetstream.ErrBucketNotFound) || !strings.Contains(err.Error(), bucket) || !strings.Contains(err.Error(), "does not exist") {
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
	e, err := s.Bucket().Get(t.Context(), "cluster=3Aleader")
	if err != nil {
		t.Fatal(err)
	}
	if string(e.Value()) != `{"holder":"a"}` {
		t.Errorf("stored value = %s", e.Value())
	}
}

// TestRetryWhileConditionHolds: conditional patches whose condition holds succeed however
// often other writers move the key's revision, none lost (T2); see
// storetest.RetryWhileConditionHolds.
func TestRetryWhileConditionHolds(t *testing.T) {
	t.Parallel()
	storetest.RetryWhileConditionHolds(t, openTest(t))
}
