package gcs

import (
	"errors"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// TestWriteSentOnce: a write whose request reached the server and took effect, but whose
// answer was lost with the connection, is an unknown outcome (an error holding no sentinel),
// never sent again: a second attempt would find the generation moved by the first and answer
// 412, a false ErrExists, ErrConditionFailed or ErrNotFound (T7). The shim drops the answers
// and counts the writes that reach the emulator.
func TestWriteSentOnce(t *testing.T) {
	t.Parallel()
	e := emulator(t)
	bucket := newBucket(t, e.Endpoint)
	sh, endpoint := newShim(t, e.Endpoint)
	s := mustOpen(t, storeURL(endpoint, bucket, "p"))
	ctx := t.Context()
	for _, c := range []struct {
		op    string
		do    func() error
		false error // the answer a resent write would give
		after map[string]any
	}{
		{"create", func() error { return s.Create(ctx, "k", map[string]any{"rev": 1}) }, store.ErrExists, map[string]any{"rev": 1.0}},
		{"conditional patch", func() error {
			return s.Patch(ctx, "k", map[string]any{"rev": 2}, &store.Condition{Field: "rev", Value: 1})
		}, store.ErrConditionFailed, map[string]any{"rev": 2.0}},
		{"conditional delete", func() error { return s.Delete(ctx, "k", &store.Condition{Field: "rev", Value: 2}) }, store.ErrNotFound, nil},
	} {
		before := sh.setLoseAnswers(true)
		err := c.do()
		sent := sh.setLoseAnswers(false) - before
		t.Logf("%s whose answer was lost: %v", c.op, err)
		if err == nil || errors.Is(err, c.false) || errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("%s whose answer was lost: %v, want an unknown outcome", c.op, err)
		}
		if sent != 1 {
			t.Errorf("%s: the write was sent %d times, want once", c.op, sent)
		}
		doc, err := s.Get(ctx, "k")
		if c.after == nil {
			if !errors.Is(err, store.ErrNotFound) {
				t.Errorf("after the %s: %v, %v, want ErrNotFound (it took effect)", c.op, doc, err)
			}
		} else if err != nil || doc["rev"] != c.after["rev"] {
			t.Errorf("after the %s: %v, %v, want %v (it took effect)", c.op, doc, err, c.after)
		}
	}
}
