// Package servicetest checks the store service type of a backend ([leasehold.URLStore] for the
// backend's service type: Webda/PostgresStore, Webda/RedisStore, ...) the same way for every
// backend: a backend's tests call [Run] with what differs (its parameters, where its documents
// land, which bad parameters it refuses).
//
// What it checks:
//
//   - Registered: the type is among leasehold.ServiceTypes.
//   - Lifecycle: the parameters decode strictly, as the application decodes them (A2); before
//     Init the store methods fail with an error naming the service type and saying it is not
//     initialized; Init opens the store without an application; the service works as a
//     store.Store (Create, conditional Patch, Get, Delete) and its documents land where the
//     parameters say; Stop closes the store, after which the store fails and the service says
//     it is not initialized again.
//   - Params: an unknown parameter fails decoding, naming it (A2); each bad parameter set fails
//     Init with an error naming what is at fault, and no error holds the test's secret.
//   - InApplication: configured by JSON as an application's Registry (A1, A4), the service is
//     the Registry, and the application's documents are in its store.
package servicetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/store"
)

// Case describes a service type to check; S is the type of the backend's stores.
type Case[S store.Store] struct {
	// Type is the name the backend registers its service type under, "Webda/PostgresStore".
	Type string
	// Setup returns working parameters (url and the type's own) for a store no other test
	// uses, and check, called once the service has written a document under key: it checks
	// that the document is where the parameters say (the table, prefix or bucket they name).
	// Either may register cleanups with t; they run after the service has stopped.
	Setup func(t *testing.T) (params map[string]any, check func(t *testing.T, st S, key string))
	// Unknown is the name of a parameter the type does not have.
	Unknown string
	// Bad maps parameter sets, as JSON, that Init must refuse to a text its error must hold
	// (naming what is at fault); for a server that does not answer, which Init waits for
	// (A8), the error is URLStore.NotOpen's.
	Bad map[string]string
	// Secret is text (a password in Bad's URLs) that no error may hold.
	Secret string
}

// Run checks the service type described by c, in parallel subtests.
func Run[S store.Store](t *testing.T, c Case[S]) {
	t.Run("Registered", func(t *testing.T) {
		t.Parallel()
		// ServiceTypes lists the names with their namespace.
		if name := "Webda/" + strings.TrimPrefix(c.Type, "Webda/"); !slices.Contains(leasehold.ServiceTypes(), name) {
			t.Fatalf("%s is not among the service types %v", c.Type, leasehold.ServiceTypes())
		}
	})
	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()
		lifecycle(t, c)
	})
	t.Run("Params", func(t *testing.T) {
		t.Parallel()
		params(t, c)
	})
	t.Run("InApplication", func(t *testing.T) {
		t.Parallel()
		inApplication(t, c)
	})
}

// decode makes a service of the type and decodes its parameters strictly (A2).
func decode[S store.Store](t *testing.T, c Case[S], params []byte) (*leasehold.URLStore, error) {
	t.Helper()
	svc, err := leasehold.NewURLStore(c.Type)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(params))
	dec.DisallowUnknownFields()
	return svc, dec.Decode(svc)
}

// opened returns the service's store as an S.
func opened[S store.Store](t *testing.T, svc *leasehold.URLStore) S {
	t.Helper()
	st, ok := svc.Store().(S)
	if !ok {
		t.Fatalf("Store() is %T, not the backend's store type %T", svc.Store(), st)
	}
	return st
}

func lifecycle[S store.Store](t *testing.T, c Case[S]) {
	params, check := c.Setup(t)
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := decode(t, c, raw)
	if err != nil {
		t.Fatal(err)
	}
	checkNotInitialized(t, c, svc, "before Init")
	if err := svc.Init(t.Context(), nil); err != nil {
		t.Fatal(err)
	}
	if svc.Store() == nil {
		t.Fatal("Store() is nil after Init")
	}
	st := opened[S](t, svc)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			svc.Stop(context.Background())
		}
	})
	const key = "cluster:leader"
	var s store.Store = svc
	if err := s.Create(t.Context(), key, map[string]any{"holder": "a", "rev": 1}); err != nil {
		t.Fatal(err)
	}
	check(t, st, key)
	if err := s.Patch(t.Context(), key, map[string]any{"holder": "b", "rev": 2}, &store.Condition{Field: "rev", Value: 1}); err != nil {
		t.Fatal(err)
	}
	if doc, err := s.Get(t.Context(), key); err != nil || doc["holder"] != "b" || doc["rev"] != 2.0 {
		t.Errorf("Get = %v, %v; want holder b, rev 2", doc, err)
	}
	if err := s.Delete(t.Context(), key, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(t.Context(), key); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get after Delete: %v, want ErrNotFound", err)
	}
	stopped = true
	if err := svc.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	// The document was deleted: an open store would answer ErrNotFound, a closed one fails.
	if _, err := st.Get(ctx, key); err == nil || errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get on the store after the service stopped: %v; Stop did not close it", err)
	}
	checkNotInitialized(t, c, svc, "after Stop")
}

// checkNotInitialized checks that svc's store methods fail, naming the type and the key.
func checkNotInitialized[S store.Store](t *testing.T, c Case[S], svc *leasehold.URLStore, when string) {
	t.Helper()
	_, err := svc.Get(t.Context(), "k")
	if !errors.Is(err, leasehold.ErrNotInitialized) || !strings.Contains(err.Error(), "not initialized") ||
		!strings.Contains(err.Error(), c.Type) || !strings.Contains(err.Error(), `"k"`) {
		t.Errorf("Get %s: %v, want an error naming %s and the key, saying it is not initialized", when, err, c.Type)
	}
	if err := svc.Create(t.Context(), "k", map[string]any{"a": 1}); !errors.Is(err, leasehold.ErrNotInitialized) {
		t.Errorf("Create %s: %v, want ErrNotInitialized", when, err)
	}
	if st := svc.Store(); st != nil {
		t.Errorf("Store() %s = %v, want nil", when, st)
	}
}

func params[S store.Store](t *testing.T, c Case[S]) {
	raw, _ := json.Marshal(map[string]any{"url": "x://y", c.Unknown: "z"})
	if _, err := decode(t, c, raw); err == nil || !strings.Contains(err.Error(), c.Unknown) {
		t.Errorf("unknown parameter %q: %v, want an error naming it", c.Unknown, err)
	}
	for _, params := range slices.Sorted(maps.Keys(c.Bad)) {
		want := c.Bad[params]
		svc, err := decode(t, c, []byte(params))
		if err != nil {
			t.Fatalf("decode %s: %v", store.RedactString(params), err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		err = svc.Init(ctx, nil)
		cancel()
		if err == nil {
			// A server that does not answer is waited for (A8): the failure of the store's
			// opening is checked as Init's would be.
			err = svc.NotOpen()
			svc.Stop(t.Context())
			if err == nil {
				t.Errorf("Init with %s succeeded", redactSecret(params, c.Secret))
				continue
			}
		}
		t.Log(redactSecret(err.Error(), c.Secret))
		if c.Secret != "" && strings.Contains(err.Error(), c.Secret) {
			t.Errorf("Init with %s: the error reveals the secret: %v", redactSecret(params, c.Secret), redactSecret(err.Error(), c.Secret))
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Init with %s: %v, want an error holding %s", redactSecret(params, c.Secret), redactSecret(err.Error(), c.Secret), want)
		}
		if !strings.Contains(err.Error(), c.Type) {
			t.Errorf("Init with %s: %v does not name %s", redactSecret(params, c.Secret), redactSecret(err.Error(), c.Secret), c.Type)
		}
	}
}

// redactSecret keeps the test's secret out of its own messages.
func redactSecret(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "xxxxx")
}

func inApplication[S store.Store](t *testing.T, c Case[S]) {
	params, check := c.Setup(t)
	reg := map[string]any{"type": strings.TrimPrefix(c.Type, "Webda/")} // the namespace is optional (A2)
	for k, v := range params {
		reg[k] = v
	}
	cfgJSON, err := json.Marshal(map[string]any{"services": map[string]any{"Registry": reg}})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := leasehold.ParseConfig(cfgJSON)
	if err != nil {
		t.Fatal(err)
	}
	app, err := leasehold.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := app.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			app.Stop(context.Background())
		}
	})
	svc, ok := app.Service("Registry")
	if !ok {
		t.Fatal("no Registry service")
	}
	ss, ok := svc.(*leasehold.URLStore)
	if !ok {
		t.Fatalf("Registry is a %T, not a service of type %s", svc, c.Type)
	}
	st := opened[S](t, ss)
	if app.Registry() != store.Store(ss) {
		t.Errorf("app.Registry() is %T, not the Registry service", app.Registry())
	}
	const key = "k"
	if err := app.Registry().Create(t.Context(), key, map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(t.Context(), key); err != nil {
		t.Errorf("the Registry's document is not in the service's store: %v", err)
	}
	check(t, st, key)
	if err := app.Registry().Delete(t.Context(), key, nil); err != nil {
		t.Error(err)
	}
	// Stopped here rather than in a cleanup, so that the cleanups check registered (dropping a
	// table, deleting a bucket) run after the application has stopped (A3).
	stopped = true
	if err := app.Stop(t.Context()); err != nil {
		t.Error(err)
	}
	if st := ss.Store(); st != nil {
		t.Errorf("Store() after the application stopped = %v, want nil", st)
	}
}
