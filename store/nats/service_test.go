package nats

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/cuttest"
	"github.com/leasehold/leasehold/servicetest"
)

// TestServiceType: Webda/NatsStore is registered, decodes its parameters strictly (A2), opens the
// store in Init without an application, works as a store.Store under the bucket its parameter
// names, closes it in Stop, refuses bad parameters naming them and never the password, and
// works as an application's Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *Store, string)) {
			raw, bucket := serverURL(t)
			u, _ := url.Parse(raw)
			u.RawQuery = "storage=memory" // the bucket comes from the parameter
			return map[string]any{"url": u.String(), "bucket": bucket}, func(t *testing.T, st *Store, key string) {
				t.Cleanup(func() { deleteBucket(t, raw, bucket) })
				if _, err := st.Bucket().Get(t.Context(), EncodeKey(key)); err != nil || st.Bucket().Bucket() != bucket {
					t.Errorf("document not in the configured bucket %q: %v", bucket, err)
				}
			}
		},
		Unknown: "prefix",
		Secret:  "secretpw1",
		Bad: map[string]string{
			`{}`:                          `"url" is required`,
			`{"url": "postgres://x@y/z"}`: `"url"`,
			`{"url": "not a url at all"}`: `"url"`,
			`{"url": "nats://127.0.0.1:4222?nonsense=1"}`:               `nonsense`,
			`{"url": "nats://u:secretpw1@127.0.0.1:1?dial_timeout=1s"}`: `"url"`,
			`{"url": "nats://secretpw1@127.0.0.1:1?dial_timeout=1s"}`:   `"url"`,
			`{"url": "nats://127.0.0.1:4222", "bucket": "a.b"}`:         `"bucket"`,
		},
	})
}

// TestCutConnection: when the network to the server goes silent, an operation fails by its
// context's deadline, well before the client's pings would notice (E3), and the store recovers once the
// network heals; see storetest.CutConnection.
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	cuttest.URL(t, raw, openStore, "ping_interval", "1m")
}

// deleteBucket deletes the bucket of the store at raw, through a connection of its own (the
// service's is closed by then).
func deleteBucket(t *testing.T, raw, bucket string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := Open(ctx, raw)
	if err != nil {
		t.Errorf("deleting bucket %s: %v", bucket, err)
		return
	}
	defer s.Close()
	if err := s.JetStream().DeleteKeyValue(ctx, bucket); err != nil {
		t.Errorf("deleting bucket %s: %v", bucket, err)
	}
}
