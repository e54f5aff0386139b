package nats

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

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
		if _, err := s.Bucket().Put(t.Context(), EncodeKey(key), []byte(raw)); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, raw, ErrNotJSON)
		e, err := s.Bucket().Get(t.Context(), EncodeKey(key))
		if err != nil || string(e.Value()) != raw {
			t.Errorf("%q holding %q changed: %v", key, raw, err)
		}
	}
}

// TestNoJetStream checks that a server without JetStream is refused at Open with an error that
// says so.
func TestNoJetStream(t *testing.T) {
	t.Parallel()
	srv := startServer(t, &server.Options{JetStream: false})
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := store.Open(ctx, srv.ClientURL()+"?bucket=b")
	t.Logf("error: %v", err)
	if !errors.Is(err, ErrNoJetStream) || !strings.Contains(err.Error(), "JetStream is not enabled") {
		t.Errorf("Open on a server without JetStream: %v, want ErrNoJetStream", err)
	}
}

// TestUnreachable checks that Open fails promptly on a closed port, naming the URL without its
// password or token (T4).
func TestUnreachable(t *testing.T) {
	t.Parallel()
	addr := testenv.ClosedPort(t)
	start := time.Now()
	_, err := store.Open(t.Context(), "nats://user:hunter2secret@"+addr)
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
		t.Errorf("Open on a closed port took %v", d)
	}
	if !store.NotReady(err) {
		t.Errorf("C7: a server that cannot be reached is a configuration error: %v", err)
	}
	// A token is a credential too; store.Open's own prefix is the store package's business.
	_, err = Open(t.Context(), "nats://tokenhunter2secret@"+addr)
	if err == nil || strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("T4: Open with a token: %v", err)
	}
}

// TestCredentialsNotShown opens a server that requires a password with a wrong one, and a token
// server with a wrong token: the errors must not show them (T4).
func TestCredentialsNotShown(t *testing.T) {
	t.Parallel()
	pw := startServer(t, &server.Options{Username: "app", Password: "right-password"})
	tok := startServer(t, &server.Options{Authorization: "right-token"})
	for _, raw := range []string{
		"nats://app:hunter2secret@" + pw.Addr().String(),
		"nats://hunter2secret@" + tok.Addr().String(),
	} {
		_, err := Open(t.Context(), raw)
		if err == nil {
			t.Fatalf("Open with wrong credentials succeeded")
		}
		t.Logf("error: %v", err)
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("T4: the error shows the credential: %v", err)
		}
		if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
			t.Errorf("the error does not say what went wrong: %v", err)
		}
		if !errors.Is(err, store.ErrConfig) {
			t.Errorf("C7: refused credentials are not a configuration error (store.ErrConfig): %v", err)
		}
	}
}

// TestBadURL checks the errors for malformed URLs and bad parameters: they name the problem and
// never the password.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"nats://u:hunter2secret@127.0.0.1:4222?bogus=1":               "bogus",
		"nats://u:hunter2secret@127.0.0.1:4222/some/path":             "path",
		"nats://u:hunter2secret@127.0.0.1:4222?bucket=a.b":            "bucket",
		"nats://u:hunter2secret@127.0.0.1:4222?dial_timeout=soon":     "dial_timeout",
		"nats://u:hunter2secret@127.0.0.1:4222?storage=tape":          "storage",
		"nats://u:hunter2secret@127.0.0.1:4222?replicas=0":            "replicas",
		"nats://u:hunter2secret@127.0.0.1:4222?create_bucket=perhaps": "create_bucket",
		"nats://u:hunter2secret@,127.0.0.1:4222":                      "empty server",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}
