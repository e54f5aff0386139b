package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
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
	for i, raw := range []string{"not json", "[1,2]", "null", `"text"`, `{"a":1} trailing`, `{"a":}`, "42"} {
		key := fmt.Sprintf("bad:%d", i)
		if err := s.Client().Set(t.Context(), s.Prefix()+key, raw, 0).Err(); err != nil {
			t.Fatal(err)
		}
		foreigndoc.Value(t, s, key, raw, ErrNotJSON)
		if got, err := s.Client().Get(t.Context(), s.Prefix()+key).Result(); err != nil || got != raw {
			t.Errorf("%q holding %q now holds %q (%v)", key, raw, got, err)
		}
	}
}

// TestWrongType checks that a key holding another Redis type is an error, not a crash.
func TestWrongType(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if err := s.Client().HSet(t.Context(), s.Prefix()+"h", "a", "1").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "h"); err == nil || !strings.Contains(err.Error(), `"h"`) {
		t.Errorf("Get of a hash: %v", err)
	}
	if err := s.Patch(t.Context(), "h", map[string]any{"a": 2}, nil); err == nil || !strings.Contains(err.Error(), `"h"`) {
		t.Errorf("Patch of a hash: %v", err)
	}
}

// TestUnreachable checks that Open fails promptly on a closed port, naming the URL without its
// password (T4).
func TestUnreachable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := store.Open(ctx, "redis://user:hunter2secret@"+testenv.ClosedPort(t)+"/0")
	if err == nil {
		t.Fatal("Open on a closed port succeeded")
	}
	if strings.Contains(err.Error(), "hunter2secret") {
		t.Errorf("T4: the error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "xxxxx@127.0.0.1") {
		t.Errorf("the error does not name the server: %v", err)
	}
	if d := time.Since(start); d > 8*time.Second {
		t.Errorf("Open on a closed port took %v", d)
	}
}

// TestCredentialsNotShown opens the real server with a user it does not know (its default user
// takes any password, so the user must be unknown for the handshake to fail): the error must not
// show the password, nor may anything go-redis logs (T4).
func TestCredentialsNotShown(t *testing.T) {
	logs := captureLogs(t)
	u, err := url.Parse(testenv.Redis.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, protocol := range []string{"2", "3"} {
		u.User = url.UserPassword("nosuchuser", "pw-hunter2secret")
		u.RawQuery = "protocol=" + protocol
		_, err := store.Open(t.Context(), u.String())
		if err == nil {
			t.Fatalf("Open with credentials the server does not know succeeded")
		}
		if strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("T4: the error shows the password: %v", err)
		}
		if !errors.Is(err, store.ErrConfig) {
			t.Errorf("C7: refused credentials are not a configuration error (store.ErrConfig): %v", err)
		}
		t.Logf("error: %v", err)
		svc, err := leasehold.NewURLStore(ServiceType)
		if err != nil {
			t.Fatal(err)
		}
		svc.URL = u.String()
		if err := svc.Init(t.Context(), nil); err == nil || strings.Contains(err.Error(), "hunter2secret") {
			t.Errorf("T4: the service's Init: %v", err)
		}
	}
	if strings.Contains(logs.String(), "hunter2secret") {
		t.Errorf("T4: go-redis logged the password: %s", logs.String())
	}
}

// TestBadURL checks the errors for malformed URLs and unknown parameters: they name the problem
// and never the password.
func TestBadURL(t *testing.T) {
	t.Parallel()
	storetest.BadURLs(t, "hunter2secret", map[string]string{
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?bogus=1":           `unknown URL parameter "bogus" (known: prefix, `,
		"redis://:pw-hunter2secret@127.0.0.1:6379/notanumber":          "database",
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?dial_timeout=soon": "dial_timeout",
		"redis://:pw-hunter2secret@127.0.0.1:6379/0?max_retries=3":     "max_retries",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// Every parameter this package leaves to go-redis is one go-redis takes: the list that names the
// known parameters in errors stays true of the go-redis version in go.mod.
func TestGoRedisParamsKnownToGoRedis(t *testing.T) {
	for _, p := range goRedisParams {
		ok := false
		for _, scheme := range []string{"redis", "rediss"} { // skip_verify goes with rediss
			for _, v := range []string{"1", "1s", "true", "x"} {
				if _, _, err := parseOptions(&url.URL{Scheme: scheme, Host: "127.0.0.1:6379", Path: "/0", RawQuery: p + "=" + v}); err == nil {
					ok = true
				}
			}
		}
		if !ok {
			t.Errorf("go-redis refuses the parameter %q with every value tried", p)
		}
	}
}
