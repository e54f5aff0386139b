package etcd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/internal/testenv"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestNotJSON checks that a key holding something this store did not write is an error naming
// the key, for every operation, and is left as it is.
func TestNotJSON(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	for i, raw := range []string{"not json", "[1,2]", "null", `"text"`, `{"a":1} trailing`, "42", ""} {
		key := fmt.Sprintf("bad:%d", i)
		if _, err := s.Client().Put(t.Context(), s.Prefix()+key, raw); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, raw, ErrNotJSON)
		resp, err := s.Client().Get(t.Context(), s.Prefix()+key)
		if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != raw {
			t.Errorf("%q holding %q changed: %v (%v)", key, raw, resp, err)
		}
	}
}

// TestUnreachable checks that Open fails by its deadline on a closed port, naming the URL
// without its password (T4).
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err := store.Open(ctx, "etcd://user:hunter2secret@"+testenv.ClosedPort(t))
	if err == nil {
		t.Fatal("Open on a closed port succeeded")
	}
	t.Logf("error after %v: %v", time.Since(start), err)
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("T4: the error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "xxxxx@127.0.0.1") {
		t.Errorf("the error does not name the server: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Open on a closed port took %v with a 2s deadline", d)
	}
}

// TestCredentialsNotShown opens the real server, which has authentication off, with a user and
// password: whatever the outcome, no error may show the password (T4).
func TestCredentialsNotShown(t *testing.T) {
	t.Parallel()
	raw, _ := serverURL(t)
	raw = strings.Replace(raw, "etcd://", "etcd://someone:hunter2secret@", 1)
	s, err := store.Open(t.Context(), raw)
	if err != nil {
		t.Logf("Open: %v", err)
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("T4: the error shows the password: %v", err)
		}
		return
	}
	defer store.Close(s)
	_, err = s.Get(t.Context(), "k")
	if !errors.Is(err, store.ErrNotFound) || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("Get with credentials: %v", err)
	}
}

// TestBadURL checks the errors for malformed URLs and unknown parameters: they name the problem
// and never the password.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"etcd://u:hunter2secret@127.0.0.1:2379?bogus=1":           "bogus",
		"etcd://u:hunter2secret@127.0.0.1:2379/some/path":         "path",
		"etcd://u:hunter2secret@127.0.0.1:2379?dial_timeout=soon": "dial_timeout",
		"etcd://u:hunter2secret@127.0.0.1:2379?tls=maybe":         "tls",
		"etcd://u:hunter2secret@,127.0.0.1:2379?prefix=x":         "empty server",
		"etcd:///nohost": "no server",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}
