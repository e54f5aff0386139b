package leasehold

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/memory"
)

// fakeURLStore is the store of the test service type test/FakeURLStore: a memory store that
// remembers the URL it was opened with and counts its closes.
type fakeURLStore struct {
	*memory.Store
	url    *url.URL
	closed atomic.Int32
}

func (f *fakeURLStore) Close() error {
	f.closed.Add(1)
	return nil
}

// fakeURLService is the service type test/FakeURLStore, built as the backends' are: the
// shared base plus one overriding parameter.
type fakeURLService struct {
	URLStore[*fakeURLStore]
	Prefix string `json:"prefix,omitempty"`
}

func (s *fakeURLService) Init(ctx context.Context, _ *Application) error {
	var q url.Values
	if s.Prefix != "" {
		q = url.Values{"prefix": {s.Prefix}}
	}
	return s.OpenURL(ctx, q)
}

const fakeURLSecret = "pw-7c1e9"

// fakeURLOpens counts the stores opened by test/FakeURLStore.
var fakeURLOpens atomic.Int32

func init() {
	RegisterURLStoreType(URLStoreKind[*fakeURLStore]{
		Type:    "test/FakeURLStore",
		Schemes: []string{"fake", "fakes"},
		Example: "fake://host/db",
		Open: func(_ context.Context, u *url.URL) (*fakeURLStore, error) {
			if u.Query().Has("fail") {
				// A driver quoting what it was given: the password must not get through.
				return nil, fmt.Errorf("cannot log in as %s", u.User)
			}
			fakeURLOpens.Add(1)
			return &fakeURLStore{Store: memory.New(), url: u}, nil
		},
	}, func() Service { return new(fakeURLService) })
}

// TestURLStoreLifecycle: before Init and after Stop the store methods fail with an error naming
// the service type and the key; in between they reach the opened store; a second Init closes
// the first store; Stop closes once, and again does nothing.
func TestURLStoreLifecycle(t *testing.T) {
	var svc fakeURLService // a zero service, as a user of the library builds one
	var s store.Store = &svc
	ops := map[string]func() error{
		"get":    func() error { _, err := s.Get(t.Context(), "k1"); return err },
		"create": func() error { return s.Create(t.Context(), "k1", map[string]any{"a": 1}) },
		"patch":  func() error { return s.Patch(t.Context(), "k1", map[string]any{"a": 2}, nil) },
		"delete": func() error { return s.Delete(t.Context(), "k1", nil) },
	}
	checkNotInitialized := func(when string) {
		t.Helper()
		for op, do := range ops {
			err := do()
			var ke *store.KeyError
			if !errors.Is(err, ErrNotInitialized) || !errors.As(err, &ke) || ke.Op != op || ke.Key != "k1" {
				t.Errorf("%s %s: %v, want a KeyError for %s \"k1\" wrapping ErrNotInitialized", op, when, err, op)
			} else if !strings.Contains(err.Error(), "test/FakeURLStore") {
				t.Errorf("%s %s: %v does not name the service type", op, when, err)
			}
		}
		if svc.Store() != nil {
			t.Errorf("Store() %s = %v, want nil", when, svc.Store())
		}
	}
	checkNotInitialized("before Init")
	if err := svc.Stop(t.Context()); err != nil {
		t.Errorf("Stop before Init: %v", err)
	}

	svc.URL = "fake://u@host/db?prefix=url"
	svc.Prefix = "param"
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	first := svc.Store()
	if got := first.url.Query().Get("prefix"); got != "param" {
		t.Errorf("the opener saw prefix %q, want the parameter's %q over the URL's", got, "param")
	}
	if err := s.Create(t.Context(), "k1", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch(t.Context(), "k1", map[string]any{"a": 2}, &store.Condition{Field: "a", Value: 1}); err != nil {
		t.Fatal(err)
	}
	if doc, err := first.Get(t.Context(), "k1"); err != nil || doc["a"] != 2.0 {
		t.Errorf("the opened store holds %v, %v; want a = 2 written through the service", doc, err)
	}
	if err := s.Delete(t.Context(), "k1", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), "k1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}

	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if first.closed.Load() != 1 {
		t.Errorf("the first store was closed %d times by a second Init, want 1", first.closed.Load())
	}
	second := svc.Store()
	if second == first {
		t.Fatal("a second Init kept the first store")
	}
	for range 2 {
		if err := svc.Stop(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if n := second.closed.Load(); n != 1 {
		t.Errorf("two Stops closed the store %d times, want 1", n)
	}
	checkNotInitialized("after Stop")
}

// TestURLStoreParams: a missing, unparsable, wrongly-schemed or unopenable url fails Init with
// an error naming the service type and the parameter, never the password; an unknown
// parameter fails the application's decoding (A2).
func TestURLStoreParams(t *testing.T) {
	opens := fakeURLOpens.Load()
	for _, c := range []struct{ url, want string }{
		{"", `parameter "url" is required (fake://host/db)`},
		{"://u:" + fakeURLSecret + "@host", `parameter "url"`},
		{"redis://u:" + fakeURLSecret + "@host/0", `scheme "redis" is not fake or fakes`},
		{"fake://u:" + fakeURLSecret + "@host/db?fail=1", `parameter "url" (fake://u:xxxxx@host/db?fail=1)`},
	} {
		svc := &fakeURLService{URLStore: URLStore[*fakeURLStore]{URL: c.url}}
		err := svc.Init(t.Context(), nil)
		if err == nil {
			t.Errorf("Init with url %q succeeded", store.RedactString(c.url))
			continue
		}
		t.Log(err)
		if msg := err.Error(); !strings.HasPrefix(msg, "test/FakeURLStore: ") || !strings.Contains(msg, c.want) {
			t.Errorf("Init with url %q: %q, want the service type and %s", store.RedactString(c.url), msg, c.want)
		}
		if strings.Contains(err.Error(), fakeURLSecret) {
			t.Errorf("Init: the error reveals the password: %v", err)
		}
		if svc.Store() != nil {
			t.Errorf("a failed Init left a store")
		}
	}
	if n := fakeURLOpens.Load() - opens; n != 0 {
		t.Errorf("failed Inits opened %d stores", n)
	}
	// Upper-case schemes are schemes too.
	svc := &fakeURLService{URLStore: URLStore[*fakeURLStore]{URL: "FAKES://host/db"}}
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Errorf("Init with an upper-case scheme: %v", err)
	}
	svc.Stop(t.Context())

	cfg, err := ParseConfig([]byte(`{"services": {"Registry": {"type": "test/FakeURLStore", "url": "fake://h/d", "tabel": "t"}}}`))
	if err == nil {
		var app *Application
		if app, err = New(cfg); err == nil {
			err = app.Start(t.Context())
			app.Stop(t.Context())
		}
	}
	if err == nil || !strings.Contains(err.Error(), "tabel") || !strings.Contains(err.Error(), "url") {
		t.Errorf("unknown parameter: %v, want an error naming tabel and listing url among the known ones", err)
	}
}

// TestURLStoreInApplication: a type built on URLStore is the application's Registry when
// configured under that name (A4), with its parameters decoded from the JSON beside "type"
// (A1), and the application's Stop closes its store (A3).
func TestURLStoreInApplication(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"services": {"Registry": {"type": "test/FakeURLStore", "url": "fake://h/d", "prefix": "p"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	svc, _ := app.Service("Registry")
	fs, ok := svc.(*fakeURLService)
	if !ok {
		t.Fatalf("Registry is a %T, want *fakeURLService", svc)
	}
	st := fs.Store()
	if got := st.url.Query().Get("prefix"); got != "p" {
		t.Errorf("prefix parameter reached the opener as %q, want p", got)
	}
	if err := app.Registry().Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(t.Context(), "k"); err != nil {
		t.Errorf("the Registry's document is not in the service's store: %v", err)
	}
	if err := app.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if st.closed.Load() != 1 {
		t.Errorf("the application's Stop closed the store %d times, want 1", st.closed.Load())
	}
}

// TestRegisterURLStoreTypePanics: registering a second kind for one store type, or a kind
// without a name or a scheme, is a programming error.
func TestRegisterURLStoreTypePanics(t *testing.T) {
	open := func(context.Context, *url.URL) (*fakeURLStore, error) { return nil, nil }
	factory := func() Service { return new(fakeURLService) }
	for name, kind := range map[string]URLStoreKind[*fakeURLStore]{
		"second kind": {Type: "test/FakeURLStore2", Schemes: []string{"fake2"}, Open: open},
		"no name":     {Schemes: []string{"fake3"}, Open: open},
		"no scheme":   {Type: "test/FakeURLStore3", Open: open},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: RegisterURLStoreType did not panic", name)
				}
			}()
			RegisterURLStoreType(kind, factory)
		}()
	}
}
