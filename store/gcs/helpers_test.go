package gcs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"google.golang.org/api/option"

	"github.com/leasehold/leasehold/internal/cloudemu"
)

// emulator starts fake-gcs-server for t (stopped when t ends).
func emulator(t testing.TB) *cloudemu.Emulator {
	t.Helper()
	return cloudemu.StartT(t, cloudemu.GCS)
}

// adminClient returns a client of the emulator at endpoint, closed when t ends: the tests'
// own, to create buckets and look at objects behind the store's back.
func adminClient(t testing.TB, endpoint string) *storage.Client {
	t.Helper()
	c, err := storage.NewClient(context.Background(), option.WithEndpoint(endpoint+"/storage/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// newBucket creates a bucket of a random name in the emulator at endpoint.
func newBucket(t testing.TB, endpoint string) string {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	name := "leasehold-test-" + hex.EncodeToString(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := adminClient(t, endpoint).Bucket(name).Create(ctx, "test-project", nil); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	return name
}

// storeURL returns the URL of a store on bucket, under prefix, in the emulator at endpoint.
func storeURL(endpoint, bucket, prefix string, kv ...string) string {
	u := url.URL{Scheme: "gs", Host: bucket, Path: "/" + prefix}
	q := url.Values{"endpoint": {endpoint}}
	for i := 0; i+1 < len(kv); i += 2 {
		q.Set(kv[i], kv[i+1])
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// testStore is a store on a fresh bucket of a fresh emulator.
type testStore struct {
	*Store
	emu    *cloudemu.Emulator
	admin  *storage.Client
	bucket string
	url    string
}

// openTest opens a store on a fresh bucket of its own emulator, closed when t ends.
func openTest(t testing.TB) *testStore {
	t.Helper()
	e := emulator(t)
	bucket := newBucket(t, e.Endpoint)
	raw := storeURL(startShim(t, e.Endpoint), bucket, "leases")
	s := mustOpen(t, raw)
	return &testStore{Store: s, emu: e, admin: adminClient(t, e.Endpoint), bucket: bucket, url: raw}
}

// mustOpen opens raw, and closes the store when t ends.
func mustOpen(t testing.TB, raw string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
