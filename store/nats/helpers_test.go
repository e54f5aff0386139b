package nats

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/leasehold/leasehold/internal/testenv"
)

// serverURL returns the test server's URL with a bucket no other test uses, kept in memory.
func serverURL(t testing.TB) (string, string) {
	t.Helper()
	b := make([]byte, 6)
	rand.Read(b)
	bucket := "leasehold_test_" + hex.EncodeToString(b)
	u, err := url.Parse(testenv.NATS.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("bucket", bucket)
	q.Set("storage", "memory")
	u.RawQuery = q.Encode()
	return u.String(), bucket
}

// openTest opens a store on a fresh bucket of the test server, and deletes the bucket when the
// test ends.
func openTest(t testing.TB) *Store {
	t.Helper()
	raw, bucket := serverURL(t)
	return openCleaned(t, raw, bucket)
}

// openCleaned opens the store of raw, whose bucket is bucket, and when the test ends deletes it and
// closes the store: the one cleanup of openTest, TestFailover and TestLinearizable.
func openCleaned(t testing.TB, raw, bucket string) *Store {
	t.Helper()
	s, err := Open(t.Context(), raw)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.JetStream().DeleteKeyValue(ctx, bucket); err != nil {
			t.Errorf("deleting bucket %s: %v", bucket, err)
		}
		s.Close()
	})
	return s
}

// startServer starts an embedded NATS server on a free loopback port, stopped when the test
// ends.
func startServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	opts.Host = "127.0.0.1"
	opts.Port = -1
	opts.NoLog = true
	opts.NoSigs = true
	if opts.JetStream {
		opts.StoreDir = t.TempDir()
	}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() {
		s.Shutdown()
		s.WaitForShutdown()
	})
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("the embedded NATS server did not start")
	}
	return s
}
