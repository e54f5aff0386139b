// Package sqltest holds the tests the SQL backends (MySQL, PostgreSQL, SQLite) share beyond the
// conformance suite: what their SQL must get right that a key-value store has no part in, and
// how their Open fails on a server that does not listen.
package sqltest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// ConcurrentOpen opens n stores with open at once, as n processes starting together on a new
// table (or file) would, and checks that each opens and creates "k" (ErrExists counting as a
// success: one of them wins); each store is closed.
func ConcurrentOpen(t *testing.T, n int, open func() (store.Store, error)) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := open()
			if err == nil {
				err = s.Create(t.Context(), "k", map[string]any{"i": i})
				if errors.Is(err, store.ErrExists) {
					err = nil
				}
				store.Close(s)
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("store #%d: %v", i, err)
		}
	}
}

// FieldNames checks conditions and patches on each of fields, which are not identifiers (the
// SQL quotes or escapes them in a JSON path): a document {field: value, "other": 1} patched
// to "w" on the condition field == value, then refused the same condition, reads back with
// field "w" and "other" untouched.
func FieldNames(t *testing.T, s store.Store, value any, fields ...string) {
	t.Helper()
	ctx := t.Context()
	for i, field := range fields {
		key := "k" + string(rune('0'+i))
		if err := s.Create(ctx, key, map[string]any{field: value, "other": 1}); err != nil {
			t.Fatalf("field %q: Create: %v", field, err)
		}
		cond := &store.Condition{Field: field, Value: value}
		if err := s.Patch(ctx, key, map[string]any{field: "w"}, cond); err != nil {
			t.Fatalf("field %q: Patch: %v", field, err)
		}
		if err := s.Patch(ctx, key, map[string]any{field: "x"}, cond); !errors.Is(err, store.ErrConditionFailed) {
			t.Fatalf("field %q: second Patch: %v, want ErrConditionFailed", field, err)
		}
		doc, err := s.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if len(doc) != 2 || doc[field] != "w" || doc["other"] != 1.0 {
			t.Errorf("field %q: got %#v", field, doc)
		}
	}
}

// Unreachable opens url, whose server at addr does not listen, with the backend's Open and
// with store.Open, and checks that both fail with an error naming addr and not secret, the
// URL's password (T4).
func Unreachable(t *testing.T, url, addr, secret string, open func(ctx context.Context, url string) (store.Store, error)) {
	t.Helper()
	for _, o := range []struct {
		name string
		open func(ctx context.Context, url string) (store.Store, error)
	}{{"Open", open}, {"store.Open", store.Open}} {
		_, err := o.open(t.Context(), url)
		if err == nil {
			t.Fatalf("%s with nothing listening at %s succeeded", o.name, addr)
		}
		msg := err.Error()
		t.Logf("%s: %v", o.name, err)
		if strings.Contains(msg, secret) {
			t.Errorf("%s: error reveals the password: %s", o.name, msg)
		}
		if !strings.Contains(msg, addr) {
			t.Errorf("%s: error does not name the address %s: %s", o.name, addr, msg)
		}
		if !store.NotReady(err) {
			t.Errorf("%s: C7: a server that cannot be reached is a configuration error: %s", o.name, msg)
		}
	}
}
