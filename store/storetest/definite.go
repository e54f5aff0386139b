package storetest

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

// definiteOrUnknown checks T7 on calls cut short by their deadlines, 20µs to 3ms (spread evenly
// on a logarithmic scale, so that some end before the call reaches the server, some while the
// server works, some as the answer comes back): each answer is either definite (a sentinel) or
// unknown (the context's error, or another error without a sentinel), never both, and names
// the key. None of the calls can succeed, and a definite answer must be the one the store
// holds: package store/storetest/linearize checks the rest, with concurrent writers.
func definiteOrUnknown(t *testing.T, st store.Store, key string) {
	mustCreate(t, st, key, map[string]any{"a": 1})
	missing := key + ":missing"
	wrong := &store.Condition{Field: "a", Value: 2}
	calls := []struct {
		op   string
		key  string
		want error
		do   func(ctx context.Context) error
	}{
		{"get", missing, store.ErrNotFound, func(ctx context.Context) error { _, err := st.Get(ctx, missing); return err }},
		{"create", key, store.ErrExists, func(ctx context.Context) error { return st.Create(ctx, key, map[string]any{"a": 2}) }},
		{"patch", key, store.ErrConditionFailed, func(ctx context.Context) error { return st.Patch(ctx, key, map[string]any{"a": 3}, wrong) }},
		{"patch", missing, store.ErrNotFound, func(ctx context.Context) error { return st.Patch(ctx, missing, map[string]any{"a": 3}, wrong) }},
		{"delete", key, store.ErrConditionFailed, func(ctx context.Context) error { return st.Delete(ctx, key, wrong) }},
		{"delete", missing, store.ErrNotFound, func(ctx context.Context) error { return st.Delete(ctx, missing, nil) }},
	}
	lo, hi := math.Log(float64(20*time.Microsecond)), math.Log(float64(3*time.Millisecond))
	var definite, unknown int
	for i := range 50 * len(calls) {
		c := calls[i%len(calls)]
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(math.Exp(lo+rand.Float64()*(hi-lo))))
		err := c.do(ctx)
		cancel()
		if err == nil {
			t.Fatalf("%s %q succeeded; it can only fail", c.op, c.key)
		}
		checkKeyError(t, err, c.op, c.key)
		sentinel := errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrExists) ||
			errors.Is(err, store.ErrConditionFailed) || errors.Is(err, store.ErrInvalid)
		ctxErr := errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
		switch {
		case sentinel && ctxErr:
			t.Errorf("T7: %s %q: the answer is both definite and unknown (a sentinel and the context's error): %v", c.op, c.key, err)
		case sentinel && !errors.Is(err, c.want):
			t.Errorf("%s %q: %v, want %v or an unknown outcome", c.op, c.key, err, c.want)
		case sentinel:
			definite++
		default:
			unknown++
		}
	}
	t.Logf("%d definite answers, %d unknown outcomes", definite, unknown)
	wantDoc(t, st, key, map[string]any{"a": 1})
	wantMissing(t, st, missing)
}
