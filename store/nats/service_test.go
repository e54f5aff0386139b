package nats

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/servicetest"
	"github.com/leasehold/leasehold/store"
)

// TestServiceType: Webda/NatsStore is registered, decodes its parameters strictly (A2), opens the
// store in Init without an application, works as a store.Store under the bucket its parameter
// names, closes it in Stop, refuses bad parameters naming them and never the password, and
// works as an application's Registry (A4); see package servicetest.
func TestServiceType(t *testing.T) {
	t.Parallel()
	servicetest.Run(t, servicetest.Case[*Store]{
		Type: ServiceType,
		New:  func() servicetest.Service[*Store] { return new(Service) },
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

// TestCutConnection checks that when the network to the server goes silent, an operation fails
// by its context's deadline, well before the client's pings would notice (as the elector needs: an
// attempt has no answer within L − R is a failure).
func TestCutConnection(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	u, _ := url.Parse(raw)
	p := startProxy(t, u.Host)
	u.Host = p.Addr()
	q := u.Query()
	q.Set("ping_interval", "1m")
	u.RawQuery = q.Encode()
	s, err := Open(t.Context(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Create(t.Context(), "k", map[string]any{"rev": 1}); err != nil {
		t.Fatal(err)
	}
	p.Cut()
	const deadline = 300 * time.Millisecond
	for _, op := range []string{"get", "patch"} {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		start := time.Now()
		if op == "get" {
			_, err = s.Get(ctx, "k")
		} else {
			err = s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}
		elapsed := time.Since(start)
		cancel()
		if err == nil {
			t.Fatalf("%s through a cut connection succeeded", op)
		}
		if elapsed > deadline+2*time.Second {
			t.Errorf("%s through a cut connection took %v with a %v deadline", op, elapsed, deadline)
		}
		t.Logf("%s failed after %v: %v", op, elapsed, err)
		if !strings.Contains(err.Error(), `"k"`) {
			t.Errorf("%s error does not name the key: %v", op, err)
		}
	}
	// Once the partition heals, the same store works again, and the writes that failed during it
	// did not happen.
	p.Heal()
	t.Logf("recovered %v after the partition healed", waitRecovered(t, s, "k"))
	if err := s.Patch(t.Context(), "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1}); err != nil {
		t.Errorf("Patch after the partition healed: %v", err)
	}
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
	if err := s.js.DeleteKeyValue(ctx, bucket); err != nil {
		t.Errorf("deleting bucket %s: %v", bucket, err)
	}
}
