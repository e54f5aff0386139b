package servicetest_test

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/leasehold/leasehold/servicetest"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
	"github.com/leasehold/leasehold/store/memory"
)

const (
	fakeType = "Webda/ServicetestFake"
	secret   = "pw-servicetest-1"
	childEnv = "LEASEHOLD_SERVICETEST_DEFECT"
)

// defect is the defect the fake service type has: none, or the one a child process checks.
var defect = os.Getenv(childEnv)

// fakeStore is a memory store that fails once closed, keeping its documents under a prefix.
type fakeStore struct {
	mem    *memory.Store
	prefix string
	closed atomic.Bool
}

func (f *fakeStore) check(op, key string) error {
	if f.closed.Load() {
		return driver.WrapKey(op, key, errors.New("fake: closed"))
	}
	return nil
}

func (f *fakeStore) Get(ctx context.Context, key string) (map[string]any, error) {
	if err := f.check("get", key); err != nil {
		return nil, err
	}
	return f.mem.Get(ctx, f.prefix+key)
}

func (f *fakeStore) Create(ctx context.Context, key string, doc map[string]any) error {
	if err := f.check("create", key); err != nil {
		return err
	}
	return f.mem.Create(ctx, f.prefix+key, doc)
}

func (f *fakeStore) Patch(ctx context.Context, key string, fields map[string]any, cond *store.Condition) error {
	if err := f.check("patch", key); err != nil {
		return err
	}
	return f.mem.Patch(ctx, f.prefix+key, fields, cond)
}

func (f *fakeStore) Delete(ctx context.Context, key string, cond *store.Condition) error {
	if err := f.check("delete", key); err != nil {
		return err
	}
	return f.mem.Delete(ctx, f.prefix+key, cond)
}

func (f *fakeStore) Close() error {
	if defect != "StopLeavesOpen" {
		f.closed.Store(true)
	}
	return nil
}

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"fake"},
		ServiceType: fakeType,
		Example:     "fake://host",
		Params:      []string{"prefix"},
		Open: func(_ context.Context, u *url.URL) (store.Store, error) {
			if u.Port() == "1" && defect != "OpensAnything" {
				return nil, errors.New("connection refused")
			}
			prefix := u.Query().Get("prefix")
			if defect == "IgnoresPrefix" {
				prefix = ""
			}
			return &fakeStore{mem: memory.New(), prefix: prefix}, nil
		},
	})
}

// fakeCase is the Case for Webda/ServicetestFake: the check reads the document under the
// prefix, from the store's memory.
func fakeCase() servicetest.Case[*fakeStore] {
	return servicetest.Case[*fakeStore]{
		Type: fakeType,
		Setup: func(t *testing.T) (map[string]any, func(*testing.T, *fakeStore, string)) {
			prefix := strings.ReplaceAll(t.Name(), "/", ":") + ":"
			return map[string]any{"url": "fake://host", "prefix": prefix}, func(t *testing.T, st *fakeStore, key string) {
				if _, err := st.mem.Get(t.Context(), prefix+key); err != nil {
					t.Errorf("document not under the prefix %q: %v", prefix, err)
				}
			}
		},
		Unknown: "tabel",
		Secret:  secret,
		Bad: map[string]string{
			`{}`:                                     `parameter "url" is required`,
			`{"url": "redis://h"}`:                   `scheme "redis"`,
			`{"url": "fake://u:` + secret + `@h:1"}`: `parameter "url"`,
		},
	}
}

// TestRun: the checks pass on a service type built as they expect.
func TestRun(t *testing.T) {
	if defect != "" {
		t.Skip("a child process of TestRunCatchesDefects")
	}
	servicetest.Run(t, fakeCase())
}

// TestBroken runs the checks on a defective type; only TestRunCatchesDefects runs it, in a
// child process, since it is meant to fail.
func TestBroken(t *testing.T) {
	if defect == "" {
		t.Skip("run by TestRunCatchesDefects")
	}
	servicetest.Run(t, fakeCase())
}

// TestRunCatchesDefects: a backend whose store stays open after Stop, that ignores the
// service's overriding parameter, or that opens a URL it should refuse fails the checks, with a
// message saying what is wrong. (A backend cannot make the service quote its URL's password:
// the service hides the URL's secrets from every error, see url_store_test.go.)
func TestRunCatchesDefects(t *testing.T) {
	if defect != "" {
		t.Skip("a child process")
	}
	for defect, want := range map[string]string{
		"StopLeavesOpen": "Stop did not close it",
		"IgnoresPrefix":  "document not under the prefix",
		"OpensAnything":  "succeeded",
	} {
		t.Run(defect, func(t *testing.T) {
			t.Parallel()
			cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestBroken$", "-test.count=1")
			cmd.Env = append(os.Environ(), childEnv+"="+defect)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the checks passed on a service with defect %s:\n%s", defect, out)
			}
			if !strings.Contains(string(out), want) {
				t.Errorf("defect %s: the output does not say %q:\n%s", defect, want, out)
			}
			if strings.Contains(string(out), secret) {
				t.Errorf("defect %s: the checks' own messages quote the secret:\n%s", defect, out)
			}
		})
	}
}
