// Package foreigndoc checks what a store does with a document it did not write: a value that
// is not JSON, or a row that is not a JSON object, which another program put under one of its
// keys. Every operation must refuse it with an error naming the key; the backend's test writes
// the value beforehand and checks afterwards, by its own client, that it is left as it is.
package foreigndoc

import (
	"errors"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// Value checks a key-value store's key holding raw, which is not a JSON object: every
// operation fails with notJSON naming the key, Create with store.ErrExists naming it.
func Value(t *testing.T, s store.Store, key, raw string, notJSON error) {
	t.Helper()
	ctx := t.Context()
	cond := &store.Condition{Field: "a", Value: 1}
	for op, err := range map[string]error{
		"get":                func() error { _, err := s.Get(ctx, key); return err }(),
		"patch":              s.Patch(ctx, key, map[string]any{"a": 2}, nil),
		"conditional patch":  s.Patch(ctx, key, map[string]any{"a": 2}, cond),
		"delete":             s.Delete(ctx, key, nil),
		"conditional delete": s.Delete(ctx, key, cond),
		"create":             s.Create(ctx, key, map[string]any{"a": 2}),
	} {
		want := notJSON
		if op == "create" {
			want = store.ErrExists
		}
		if !errors.Is(err, want) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s of %q holding %q: %v, want %v naming the key", op, key, raw, err, want)
		}
	}
}

// Row checks an SQL store's row key, which is not a JSON object: every operation but an
// unconditional Delete fails with an error naming the key in quotes, and but for Create
// none says the row is missing or the condition failed (it is neither). condValue is the
// conditions' value (a store whose column holds JSON compares it otherwise).
func Row(t *testing.T, s store.Store, key string, condValue any) {
	t.Helper()
	ctx := t.Context()
	cond := &store.Condition{Field: "a", Value: condValue}
	errs := map[string]error{}
	_, errs["get"] = s.Get(ctx, key)
	errs["patch"] = s.Patch(ctx, key, map[string]any{"a": 1}, nil)
	errs["conditional patch"] = s.Patch(ctx, key, map[string]any{"a": 1}, cond)
	errs["conditional delete"] = s.Delete(ctx, key, cond)
	errs["create"] = s.Create(ctx, key, map[string]any{"a": 1})
	for op, err := range errs {
		if err == nil {
			t.Errorf("%s of the %s row succeeded", op, key)
			continue
		}
		t.Logf("%s of the %s row: %v", op, key, err)
		if !strings.Contains(err.Error(), `"`+key+`"`) {
			t.Errorf("%s of the %s row: error does not name the key: %v", op, key, err)
		}
		if op != "create" && (errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrConditionFailed)) {
			t.Errorf("%s of the %s row: %v, want an error saying the row is not a JSON object", op, key, err)
		}
	}
}
