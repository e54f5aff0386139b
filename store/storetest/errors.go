package storetest

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

func (s *suite) notFound(t *testing.T) {
	t.Run("Get", s.run(func(t *testing.T, st store.Store, key string) {
		doc, err := st.Get(t.Context(), key)
		wantErr(t, err, store.ErrNotFound, "get", key)
		if doc != nil {
			t.Errorf("Get(%q) of a missing key returned a document %s", key, show(doc))
		}
	}))
	t.Run("Patch", s.run(func(t *testing.T, st store.Store, key string) {
		wantErr(t, st.Patch(t.Context(), key, map[string]any{"a": 1}, nil), store.ErrNotFound, "patch", key)
		wantMissing(t, st, key)
	}))
	// A missing document is not a failed condition: the caller must be able to tell "gone"
	// from "changed by someone else".
	t.Run("PatchConditional", s.run(func(t *testing.T, st store.Store, key string) {
		err := st.Patch(t.Context(), key, map[string]any{"a": 1}, &store.Condition{Field: "a", Value: nil})
		wantErr(t, err, store.ErrNotFound, "patch", key)
		wantMissing(t, st, key)
	}))
	t.Run("PatchEmptyFields", s.run(func(t *testing.T, st store.Store, key string) {
		wantErr(t, st.Patch(t.Context(), key, map[string]any{}, nil), store.ErrNotFound, "patch", key)
		wantMissing(t, st, key)
	}))
	t.Run("Delete", s.run(func(t *testing.T, st store.Store, key string) {
		wantErr(t, st.Delete(t.Context(), key, nil), store.ErrNotFound, "delete", key)
	}))
	t.Run("DeleteConditional", s.run(func(t *testing.T, st store.Store, key string) {
		wantErr(t, st.Delete(t.Context(), key, &store.Condition{Field: "a", Value: 1}), store.ErrNotFound, "delete", key)
	}))
}

// keyError checks that each operation's error is a *store.KeyError naming the operation and the
// key (wantErr does the checking), for each sentinel an operation can return.
func (s *suite) keyError(t *testing.T) {
	t.Run("EveryOperation", s.run(func(t *testing.T, st store.Store, key string) {
		ctx := t.Context()
		_, err := st.Get(ctx, key)
		wantErr(t, err, store.ErrNotFound, "get", key)
		wantErr(t, st.Patch(ctx, key, map[string]any{"a": 1}, nil), store.ErrNotFound, "patch", key)
		wantErr(t, st.Delete(ctx, key, nil), store.ErrNotFound, "delete", key)
		mustCreate(t, st, key, map[string]any{"a": 1})
		wantErr(t, st.Create(ctx, key, map[string]any{"a": 2}), store.ErrExists, "create", key)
		wantErr(t, st.Patch(ctx, key, map[string]any{"a": 3}, &store.Condition{Field: "a", Value: 2}), store.ErrConditionFailed, "patch", key)
		wantErr(t, st.Delete(ctx, key, &store.Condition{Field: "a", Value: 2}), store.ErrConditionFailed, "delete", key)
		wantErr(t, st.Patch(ctx, key, nil, nil), store.ErrInvalid, "patch", key)
	}))
}

func testCreateExisting(t *testing.T, st store.Store, key string) {
	mustCreate(t, st, key, map[string]any{"first": true, "n": 1})
	wantErr(t, st.Create(t.Context(), key, map[string]any{"second": true, "n": 2}), store.ErrExists, "create", key)
	wantErr(t, st.Create(t.Context(), key, map[string]any{}), store.ErrExists, "create", key)
	wantDoc(t, st, key, map[string]any{"first": true, "n": 1})
}

// unencodable are values encoding/json refuses; a store must refuse them too rather than store
// something else.
func unencodable() map[string]any {
	return map[string]any{
		"channel":     make(chan int),
		"func":        func() {},
		"NaN":         math.NaN(),
		"+Inf":        math.Inf(1),
		"-Inf":        math.Inf(-1),
		"nestedNaN":   map[string]any{"a": []any{1, math.NaN()}},
		"complex":     complex(1, 2),
		"float32Inf":  float32(math.Inf(1)),
		"mapIntToAny": map[any]int{1: 1},
	}
}

func (s *suite) invalid(t *testing.T) {
	original := map[string]any{"a": "original", "n": 1}
	t.Run("EmptyKey", s.run(func(t *testing.T, st store.Store, _ string) {
		ctx := t.Context()
		_, err := st.Get(ctx, "")
		wantErr(t, err, store.ErrInvalid, "get", "")
		wantErr(t, st.Create(ctx, "", map[string]any{"a": 1}), store.ErrInvalid, "create", "")
		wantErr(t, st.Patch(ctx, "", map[string]any{"a": 1}, nil), store.ErrInvalid, "patch", "")
		wantErr(t, st.Patch(ctx, "", map[string]any{"a": 1}, &store.Condition{Field: "a", Value: 1}), store.ErrInvalid, "patch", "")
		wantErr(t, st.Delete(ctx, "", nil), store.ErrInvalid, "delete", "")
		wantErr(t, st.Delete(ctx, "", &store.Condition{Field: "a", Value: 1}), store.ErrInvalid, "delete", "")
	}))
	t.Run("NilDocument", s.run(func(t *testing.T, st store.Store, key string) {
		wantErr(t, st.Create(t.Context(), key, nil), store.ErrInvalid, "create", key)
		wantMissing(t, st, key)
		mustCreate(t, st, key, original)
		wantErr(t, st.Patch(t.Context(), key, nil, nil), store.ErrInvalid, "patch", key)
		wantErr(t, st.Patch(t.Context(), key, nil, &store.Condition{Field: "a", Value: "original"}), store.ErrInvalid, "patch", key)
		wantDoc(t, st, key, original)
	}))
	t.Run("ConditionWithoutField", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, original)
		cond := &store.Condition{Field: "", Value: "original"}
		wantErr(t, st.Patch(t.Context(), key, map[string]any{"a": "changed"}, cond), store.ErrInvalid, "patch", key)
		wantErr(t, st.Delete(t.Context(), key, cond), store.ErrInvalid, "delete", key)
		wantDoc(t, st, key, original)
	}))
	for name, bad := range unencodable() {
		t.Run("Unencodable/"+name, s.run(func(t *testing.T, st store.Store, key string) {
			ctx := t.Context()
			wantErr(t, st.Create(ctx, key, map[string]any{"ok": 1, "bad": bad}), store.ErrInvalid, "create", key)
			wantMissing(t, st, key)
			mustCreate(t, st, key, original)
			wantErr(t, st.Patch(ctx, key, map[string]any{"a": "changed", "bad": bad}, nil), store.ErrInvalid, "patch", key)
			cond := &store.Condition{Field: "a", Value: bad}
			wantErr(t, st.Patch(ctx, key, map[string]any{"a": "changed"}, cond), store.ErrInvalid, "patch", key)
			wantErr(t, st.Delete(ctx, key, cond), store.ErrInvalid, "delete", key)
			wantDoc(t, st, key, original)
		}))
	}
}

// wantCtxErr checks that err carries target (context.Canceled or DeadlineExceeded) and the key.
func wantCtxErr(t *testing.T, err, target error, op, key string) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s %q with a done context: error %v, want errors.Is(err, %v)", op, key, err, target)
		return
	}
	checkKeyError(t, err, op, key)
}

func (s *suite) context(t *testing.T) {
	original := map[string]any{"a": "original"}
	for _, c := range []struct {
		name   string
		ctx    func(t *testing.T) context.Context
		target error
	}{
		{"Canceled", cancelled, context.Canceled},
		{"DeadlineExceeded", func(t *testing.T) context.Context {
			ctx, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
			t.Cleanup(cancel)
			return ctx
		}, context.DeadlineExceeded},
	} {
		t.Run(c.name, s.run(func(t *testing.T, st store.Store, key string) {
			mustCreate(t, st, key, original)
			fresh := key + ":fresh"
			ctx := c.ctx(t)
			_, err := st.Get(ctx, key)
			wantCtxErr(t, err, c.target, "get", key)
			wantCtxErr(t, st.Create(ctx, fresh, map[string]any{"a": 1}), c.target, "create", fresh)
			wantCtxErr(t, st.Patch(ctx, key, map[string]any{"a": "changed"}, nil), c.target, "patch", key)
			wantCtxErr(t, st.Patch(ctx, key, map[string]any{"a": "changed"}, &store.Condition{Field: "a", Value: "original"}), c.target, "patch", key)
			wantCtxErr(t, st.Delete(ctx, key, nil), c.target, "delete", key)
			wantCtxErr(t, st.Delete(ctx, key, &store.Condition{Field: "a", Value: "original"}), c.target, "delete", key)
			// An operation that failed because its context was done before it began must have
			// had no effect.
			wantMissing(t, st, fresh)
			wantDoc(t, st, key, original)
		}))
	}
}
