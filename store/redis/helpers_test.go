package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"

	"github.com/leasehold/leasehold/internal/testenv"
)

// serverURL returns the test server's URL with a key prefix no other test uses.
func serverURL(t testing.TB) (string, string) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	prefix := "leasehold-test:" + hex.EncodeToString(b) + ":"
	u, err := url.Parse(testenv.Redis.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("prefix", prefix)
	u.RawQuery = q.Encode()
	return u.String(), prefix
}

// openTest opens a store on the test server with a fresh prefix, and removes every key under
// that prefix when the test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	raw, prefix := serverURL(t)
	return openCleaned(t, raw, prefix)
}

// openCleaned opens the store of raw, whose prefix is prefix, and when the test ends removes every key under it and
// closes the store: the one cleanup of openTest, TestFailover and TestLinearizable.
func openCleaned(t testing.TB, raw, prefix string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		iter := s.Client().Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			s.Client().Del(ctx, iter.Val())
		}
		if err := iter.Err(); err != nil {
			t.Errorf("cleaning up %s*: %v", prefix, err)
		}
		s.Close()
	})
	return s
}
