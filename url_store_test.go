package leasehold

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

const fakeURLSecret = "pw-7c1e9"

// fakeURLOpens counts the stores opened by test/FakeURLStore.
var fakeURLOpens atomic.Int32

// fakeDown makes test/FakeURLStore's opens of a URL with the parameter down fail as a server
// that cannot be reached.
var fakeDown atomic.Bool

func init() {
	store.Register(store.Backend{
		Schemes:     []string{"fake", "fakes"},
		ServiceType: "test/FakeURLStore",
		Example:     "fake://host/db",
		Params:      []string{"prefix"},
		Open: func(_ context.Context, u *url.URL) (store.Store, error) {
			if u.Query().Has("fail") {
				// A driver quoting what it was given: the password must not get through. A
				// refused login is a configuration error: waiting does not cure it.
				return nil, store.ConfigError(fmt.Errorf("cannot log in as %s", u.User))
			}
			if u.Query().Has("down") && fakeDown.Load() {
				return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
			}
			fakeURLOpens.Add(1)
			return &fakeURLStore{Store: memory.New(), url: u}, nil
		},
	})
}

// newFake returns a test/FakeURLStore service with the parameters params (JSON).
func newFake(t *testing.T, params string) *URLStore {
	t.Helper()
	svc, err := NewURLStore("test/FakeURLStore")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(params), svc); err != nil {
		t.Fatal(err)
	}
	return svc
}

// fakeOf returns the service's opened store; nil before Init and after Stop.
func fakeOf(svc *URLStore) *fakeURLStore {
	st, _ := svc.Store().(*fakeURLStore)
	return st
}

// TestURLStoreLifecycle: before Init and after Stop the store methods fail with an error naming
// the service type and the key; in between they reach the opened store; a second Init closes
// the first store; Stop closes once, and again does nothing.
func TestURLStoreLifecycle(t *testing.T) {
	svc := newFake(t, `{}`) // as a user of the library builds one
	var s store.Store = svc
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

	if err := json.Unmarshal([]byte(`{"url": "fake://u@host/db?prefix=url", "prefix": "param"}`), svc); err != nil {
		t.Fatal(err)
	}
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	first := fakeOf(svc)
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
	second := fakeOf(svc)
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
		{"", `parameter "url" is required, or "urlFile" or "urlEnv" instead (fake://host/db)`},
		{"://u:" + fakeURLSecret + "@host", `parameter "url"`},
		{"redis://u:" + fakeURLSecret + "@host/0", `scheme "redis" is not fake or fakes`},
		{"fake://u:" + fakeURLSecret + "@host/db?fail=1", `parameter "url" (fake://u:xxxxx@host/db?fail=1)`},
	} {
		svc := newFake(t, `{}`)
		svc.URL = c.url
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
	svc := newFake(t, `{"url": "FAKES://host/db"}`)
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
	fs, ok := svc.(*URLStore)
	if !ok {
		t.Fatalf("Registry is a %T, want *URLStore", svc)
	}
	st := fakeOf(fs)
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

// TestURLStoreDecoding: the backend's parameters decode beside url, a string each, null
// leaving one unset; another parameter, or a value that is not a string, is an error naming the
// parameter, from the application's decoding (A2) as from encoding/json.
func TestURLStoreDecoding(t *testing.T) {
	svc := newFake(t, `{"url": "fake://h/d", "prefix": null}`)
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := fakeOf(svc).url.Query(); got.Has("prefix") {
		t.Errorf("a null prefix reached the opener as %q", got.Get("prefix"))
	}
	svc.Stop(t.Context())
	svc = newFake(t, `{"url": "fake://h/d?prefix=u", "prefix": ""}`)
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := fakeOf(svc).url.Query().Get("prefix"); got != "" {
		t.Errorf("an empty prefix reached the opener as %q, want it empty over the URL's", got)
	}
	svc.Stop(t.Context())
	for params, want := range map[string]string{
		`{"url": "fake://h/d", "tabel": "t"}`:  `unknown parameter "tabel"`,
		`{"url": "fake://h/d", "Prefix": "p"}`: `did you mean "prefix"`,
		`{"url": 1}`:                           `parameter "url": want a string, got number`,
		`{"url": "fake://h/d", "prefix": []}`:  `parameter "prefix": want a string, got array`,
	} {
		cfg, err := ParseConfig([]byte(`{"services": {"Registry": {"type": "test/FakeURLStore", ` + params[1:] + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(cfg)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `service "Registry"`) {
			t.Errorf("New with %s: %v, want an error naming the service and saying %s", params, err, want)
		}
		svc, _ := NewURLStore("test/FakeURLStore")
		if err := json.Unmarshal([]byte(params), svc); err == nil || !strings.Contains(err.Error(), strings.Split(want, ":")[0]) {
			t.Errorf("json.Unmarshal of %s: %v, want an error naming the parameter", params, err)
		}
	}
}

// TestURLStoreTypes: the backends' service types are service types, found with or without
// their namespace; a zero URLStore and an unknown type are errors, not panics.
func TestURLStoreTypes(t *testing.T) {
	if !slices.Contains(ServiceTypes(), "Webda/test/FakeURLStore") {
		t.Errorf("ServiceTypes() = %v, without the fake backend's type", ServiceTypes())
	}
	if _, ok := lookupType("Webda/test/FakeURLStore"); !ok {
		t.Error("the fake backend's type is not found with the namespace")
	}
	if _, err := NewURLStore("test/NoSuchStore"); err == nil || !strings.Contains(err.Error(), "test/FakeURLStore") {
		t.Errorf("NewURLStore of an unknown type: %v, want an error listing the known types", err)
	}
	if err := new(URLStore).Init(t.Context(), nil); err == nil || !strings.Contains(err.Error(), "NewURLStore") {
		t.Errorf("Init of a zero URLStore: %v", err)
	}
}

// TestURLStoreFromFileOrEnv: the URL can come from a file (urlFile, its white space around
// ignored) or an environment variable (urlEnv) instead of url, read by each Init; exactly one
// of the three is required. Every error names the service type and the parameter, and the file
// or the variable when one is read, and none quotes the URL's password.
func TestURLStoreFromFileOrEnv(t *testing.T) {
	dir := t.TempDir()
	secretURL := "fake://u:" + fakeURLSecret + "@host/db?prefix=from-file"
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	urlFile := write("url", "\n  "+secretURL+"\n")
	const env = "LEASEHOLD_TEST_URLSTORE_URL"
	t.Setenv(env, "fake://u:"+fakeURLSecret+"@host/db?prefix=from-env")
	t.Setenv("LEASEHOLD_TEST_URLSTORE_EMPTY", "  \n")
	quote := func(s string) string { b, _ := json.Marshal(s); return string(b) }

	for params, wantPrefix := range map[string]string{
		`{"urlFile": ` + quote(urlFile) + `}`:              "from-file",
		`{"urlEnv": "` + env + `"}`:                        "from-env",
		`{"urlEnv": "` + env + `", "prefix": "param"}`:     "param",
		`{"urlFile": ` + quote(urlFile) + `, "url": null}`: "from-file",
	} {
		svc := newFake(t, params)
		if err := svc.Init(t.Context(), nil); err != nil {
			t.Fatalf("Init with %s: %v", params, err)
		}
		st := fakeOf(svc)
		if st.url.User.String() != "u:"+fakeURLSecret || st.url.Query().Get("prefix") != wantPrefix {
			t.Errorf("Init with %s opened %s, want the password and prefix %q", params, store.Redact(st.url), wantPrefix)
		}
		svc.Stop(t.Context())
	}

	// Each Init reads the file again: a rotated Secret is used by the next Init.
	svc := newFake(t, `{"urlFile": `+quote(urlFile)+`}`)
	write("url", "fake://host/rotated")
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if got := fakeOf(svc).url.Path; got != "/rotated" {
		t.Errorf("Init after the file changed opened path %q, want /rotated", got)
	}
	svc.Stop(t.Context())
	write("url", "\n  "+secretURL+"\n")

	opens := fakeURLOpens.Load()
	missing := filepath.Join(dir, "missing")
	for _, c := range []struct {
		params string
		wants  []string
	}{
		{`{}`, []string{`parameter "url" is required, or "urlFile" or "urlEnv" instead`}},
		{`{"url": "", "urlFile": "", "urlEnv": ""}`, []string{`parameter "url" is required, or "urlFile" or "urlEnv" instead`}},
		{`{"url": ` + quote(secretURL) + `, "urlFile": ` + quote(urlFile) + `}`,
			[]string{`parameters "url" and "urlFile" are given`, `exactly one of "url", "urlFile" and "urlEnv"`}},
		{`{"urlFile": ` + quote(urlFile) + `, "urlEnv": "` + env + `"}`, []string{`parameters "urlEnv" and "urlFile" are given`}},
		{`{"url": "fake://h/d", "urlFile": ` + quote(urlFile) + `, "urlEnv": "` + env + `"}`,
			[]string{`parameters "url", "urlEnv" and "urlFile" are given`}},
		{`{"urlFile": ` + quote(missing) + `}`, []string{`parameter "urlFile"`, missing, "no such file"}},
		{`{"urlFile": ` + quote(dir) + `}`, []string{`parameter "urlFile"`, dir}},
		{`{"urlFile": ` + quote(write("empty", " \n\t\n")) + `}`, []string{`parameter "urlFile" (file ` + filepath.Join(dir, "empty") + `)`, "empty"}},
		{`{"urlEnv": "LEASEHOLD_TEST_URLSTORE_UNSET"}`, []string{`parameter "urlEnv" (variable LEASEHOLD_TEST_URLSTORE_UNSET)`, "not set"}},
		{`{"urlEnv": "LEASEHOLD_TEST_URLSTORE_EMPTY"}`, []string{`parameter "urlEnv" (variable LEASEHOLD_TEST_URLSTORE_EMPTY)`, "empty"}},
		// What the file holds is checked as url is, and its errors name the file.
		{`{"urlFile": ` + quote(write("bad-scheme", "redis://u:"+fakeURLSecret+"@host/0")) + `}`,
			[]string{`parameter "urlFile" (file ` + filepath.Join(dir, "bad-scheme") + `)`, `scheme "redis" is not fake or fakes`, "u:xxxxx@"}},
		{`{"urlFile": ` + quote(write("unparsable", "://u:"+fakeURLSecret+"@host")) + `}`,
			[]string{`parameter "urlFile" (file ` + filepath.Join(dir, "unparsable") + `)`, "invalid URL"}},
		{`{"urlFile": ` + quote(write("fails", "fake://u:"+fakeURLSecret+"@host/db?fail=1")) + `}`,
			[]string{`parameter "urlFile" (file ` + filepath.Join(dir, "fails") + `) (fake://u:xxxxx@host/db?fail=1)`, "cannot log in"}},
	} {
		svc := newFake(t, c.params)
		err := svc.Init(t.Context(), nil)
		if err == nil {
			t.Errorf("Init with %s succeeded", c.params)
			svc.Stop(t.Context())
			continue
		}
		msg := err.Error()
		t.Log(msg)
		if !strings.HasPrefix(msg, "test/FakeURLStore: ") {
			t.Errorf("Init with %s: %q does not name the service type", c.params, msg)
		}
		for _, w := range c.wants {
			if !strings.Contains(msg, w) {
				t.Errorf("Init with %s: %q, want it to contain %q", c.params, msg, w)
			}
		}
		if strings.Contains(msg, fakeURLSecret) {
			t.Errorf("Init with %s: the error reveals the password: %q", c.params, msg)
		}
		if svc.Store() != nil {
			t.Errorf("Init with %s: a failed Init left a store", c.params)
		}
	}
	if n := fakeURLOpens.Load() - opens; n != 0 {
		t.Errorf("failed Inits opened %d stores", n)
	}

	// Through an application, the error names the service too; decoding is as strict as for
	// url.
	cfg, err := ParseConfig([]byte(`{"services": {"Registry": {"type": "test/FakeURLStore", "urlFile": ` + quote(missing) + `}}}`))
	if err != nil {
		t.Fatal(err)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(t.Context()); err == nil || !strings.Contains(err.Error(), `service "Registry"`) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Start with a missing urlFile: %v, want an error naming the service and the file", err)
	}
	app.Stop(t.Context())
	for params, want := range map[string]string{
		`{"urlFile": 1}`:              `parameter "urlFile": want a string, got number`,
		`{"urlEnv": true}`:            `parameter "urlEnv": want a string, got bool`,
		`{"urlfile": "/run/secret"}`:  `did you mean "urlFile"`,
		`{"url_env": "REGISTRY_URL"}`: `unknown parameter "url_env"`,
	} {
		cfg, err := ParseConfig([]byte(`{"services": {"Registry": {"type": "test/FakeURLStore", ` + params[1:] + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `service "Registry"`) {
			t.Errorf("New with %s: %v, want an error naming the service and saying %s", params, err, want)
		}
	}
}

// C7 in the library: a Registry whose server cannot be reached at Start does not fail the
// application's Start; until the store opens, the store methods fail with ErrNotInitialized and
// the last failure, and the cluster service over it follows; once the server answers, the store
// opens in the background and the instance leads through the election.
func TestURLStoreNotReadyAtStart(t *testing.T) {
	fakeDown.Store(true)
	defer fakeDown.Store(false)
	cfg, err := ParseConfig([]byte(`{"services": {
		"Registry": {"type": "test/FakeURLStore", "url": "fake://h/d?down=1"},
		"cluster": {"type": "StoreClusterService", "leaseDuration": 400, "renewInterval": 100}}}`))
	if err != nil {
		t.Fatal(err)
	}
	app, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	app.SetLogger(slog.New(slog.DiscardHandler))
	if err := app.Start(t.Context()); err != nil {
		t.Fatalf("Start with a Registry not reachable yet: %v", err)
	}
	defer app.Stop(context.Background())
	_, err = app.Registry().Get(t.Context(), "k")
	if !errors.Is(err, ErrNotInitialized) || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("Get before the store opens: %v, want ErrNotInitialized and the last failure", err)
	}
	led := make(chan struct{})
	var once sync.Once
	app.WhenLeader(func(ctx context.Context) error {
		once.Do(func() { close(led) })
		<-ctx.Done()
		return nil
	}, nil)
	select {
	case <-led:
		t.Fatal("led over a store that cannot be opened")
	case <-time.After(500 * time.Millisecond):
	}
	fakeDown.Store(false)
	select {
	case <-led:
	case <-time.After(10 * time.Second):
		t.Fatal("did not lead within 10s of the store answering")
	}
	if _, err := app.Registry().Get(t.Context(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get once open: %v, want ErrNotFound", err)
	}
}
