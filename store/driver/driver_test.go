package driver_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// recorder is a Driver that records what it is given and answers with err.
type recorder struct {
	calls  int
	key    string
	doc    map[string]any
	cond   *driver.Condition
	err    error
	closed int
}

func (r *recorder) Get(_ context.Context, key string) (map[string]any, error) {
	r.calls, r.key = r.calls+1, key
	return map[string]any{"a": 1.0}, r.err
}

func (r *recorder) Create(_ context.Context, key string, doc map[string]any) error {
	r.calls, r.key, r.doc = r.calls+1, key, doc
	return r.err
}

func (r *recorder) Patch(_ context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	r.calls, r.key, r.doc, r.cond = r.calls+1, key, fields, cond
	return r.err
}

func (r *recorder) Delete(_ context.Context, key string, cond *driver.Condition) error {
	r.calls, r.key, r.cond = r.calls+1, key, cond
	return r.err
}

// ops are the four operations on key, with a document and a condition to give those that
// take them.
func ops(s store.Store, ctx context.Context, key string, doc map[string]any, cond *store.Condition) map[string]func() error {
	return map[string]func() error{
		"get":    func() error { _, err := s.Get(ctx, key); return err },
		"create": func() error { return s.Create(ctx, key, doc) },
		"patch":  func() error { return s.Patch(ctx, key, doc, cond) },
		"delete": func() error { return s.Delete(ctx, key, cond) },
	}
}

// TestPortableChecksFirst: an ended context, an empty key, a nil or unencodable document and a
// condition without a field or with an unencodable value fail the operation before the driver
// sees it, wrapped with the operation and the key (T3).
func TestPortableChecksFirst(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	doc := map[string]any{"a": 1}
	cond := &store.Condition{Field: "a", Value: 1}
	for _, c := range []struct {
		name   string
		ctx    context.Context
		key    string
		doc    map[string]any
		cond   *store.Condition
		target error
		want   string   // in the message
		only   []string // the operations concerned; all when nil
	}{
		{"ended context", ctx, "k", doc, cond, context.Canceled, "canceled", nil},
		{"empty key", t.Context(), "", doc, cond, store.ErrInvalid, "empty key", nil},
		{"nil document", t.Context(), "k", nil, cond, store.ErrInvalid, "nil document", []string{"create", "patch"}},
		{"NaN names the field", t.Context(), "k", map[string]any{"bad": math.NaN()}, cond, store.ErrInvalid, `"bad"`, []string{"create", "patch"}},
		{"condition without a field", t.Context(), "k", doc, &store.Condition{Value: 1}, store.ErrInvalid, "without a field", []string{"patch", "delete"}},
		{"NaN condition names the field", t.Context(), "k", doc, &store.Condition{Field: "rev", Value: math.NaN()}, store.ErrInvalid, `"rev"`, []string{"patch", "delete"}},
		{"channel condition names the field", t.Context(), "k", doc, &store.Condition{Field: "rev", Value: make(chan int)}, store.ErrInvalid, `"rev"`, []string{"patch", "delete"}},
	} {
		r := &recorder{}
		for op, do := range ops(driver.New(r), c.ctx, c.key, c.doc, c.cond) {
			if c.only != nil && !slices.Contains(c.only, op) {
				continue
			}
			err := do()
			var ke *store.KeyError
			if !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.want) || !errors.As(err, &ke) || ke.Op != op || ke.Key != c.key {
				t.Errorf("%s, %s: %v, want %v in a KeyError for %s %q, saying %s", c.name, op, err, c.target, op, c.key, c.want)
			}
			if r.calls != 0 {
				t.Errorf("%s, %s: the driver was called", c.name, op)
			}
		}
	}
}

// TestPortableNormalizes: the driver gets the document and the condition's value in the form
// encoding/json decodes into, as copies the caller's later changes do not reach.
func TestPortableNormalizes(t *testing.T) {
	r := &recorder{}
	s := driver.New(r)
	in := map[string]any{"n": int32(3), "m": map[string]any{"b": []int{1}}}
	if err := s.Patch(t.Context(), "k", in, &store.Condition{Field: "rev", Value: int64(7)}); err != nil {
		t.Fatal(err)
	}
	in["m"].(map[string]any)["b"] = "changed"
	want := map[string]any{"n": 3.0, "m": map[string]any{"b": []any{1.0}}}
	if !reflect.DeepEqual(r.doc, want) {
		t.Errorf("the driver got %#v, want %#v", r.doc, want)
	}
	if r.cond == nil || r.cond.Field != "rev" || r.cond.Value != 7.0 {
		t.Errorf("the driver got the condition %#v, want rev == float64 7", r.cond)
	}
	if err := s.Delete(t.Context(), "k", nil); err != nil || r.cond != nil {
		t.Errorf("Delete without a condition: %v, the driver got %#v", err, r.cond)
	}
}

// TestPortableWrapsErrors: the driver's errors come back wrapped with the operation and the
// key, the sentinel and the native error reachable (T3); a success is no error.
func TestPortableWrapsErrors(t *testing.T) {
	native := &nativeError{Code: "57P01"}
	r := &recorder{err: driver.Wrap(store.ErrNotFound, native)}
	for op, do := range ops(driver.New(r), t.Context(), "cluster:leader", map[string]any{"a": 1}, nil) {
		err := do()
		var ke *store.KeyError
		var ne *nativeError
		if !errors.Is(err, store.ErrNotFound) || !errors.As(err, &ne) || !errors.As(err, &ke) || ke.Op != op || ke.Key != "cluster:leader" {
			t.Errorf("%s: %v, want ErrNotFound and the native error in a KeyError for %s", op, err, op)
		}
	}
	r.err = nil
	for op, do := range ops(driver.New(r), t.Context(), "k", map[string]any{"a": 1}, nil) {
		if err := do(); err != nil {
			t.Errorf("%s: %v", op, err)
		}
	}
}

type closingRecorder struct{ recorder }

func (c *closingRecorder) Close() error { c.closed++; return nil }

// TestPortableClose: Close closes a driver that holds resources, and is harmless on one that
// does not.
func TestPortableClose(t *testing.T) {
	if err := driver.New(&recorder{}).Close(); err != nil {
		t.Errorf("Close of a driver without Close: %v", err)
	}
	c := &closingRecorder{}
	if err := store.Close(driver.New(c)); err != nil || c.closed != 1 {
		t.Errorf("store.Close: %v after %d closes, want 1", err, c.closed)
	}
}

// TestContextError: an operation its context ended fails with the context's error reachable,
// once; other errors are kept as they are.
func TestContextError(t *testing.T) {
	boom := errors.New("connection reset")
	if err := driver.ContextError(t.Context(), boom); err != boom {
		t.Errorf("live context: %v, want the error itself", err)
	}
	if err := driver.ContextError(t.Context(), nil); err != nil {
		t.Errorf("no error: %v", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := driver.ContextError(ctx, boom)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, boom) {
		t.Errorf("ended context: %v, want context.Canceled and the error", err)
	}
	if again := driver.ContextError(ctx, err); strings.Count(again.Error(), "canceled") != 1 {
		t.Errorf("joined twice: %v", again)
	}
	if err := driver.ContextError(ctx, fmt.Errorf("x: %w", context.Canceled)); strings.Count(err.Error(), "canceled") != 1 {
		t.Errorf("an error holding the context's: %v", err)
	}
}

// TestContextErrorKeepsDefiniteAnswers: a sentinel is the server's answer, or no answer the
// driver could have had: joining the context's error to it would make it both definite and
// unknown (T7).
func TestContextErrorKeepsDefiniteAnswers(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), -time.Second)
	defer cancel()
	for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrConditionFailed, store.ErrInvalid} {
		answer := driver.Wrap(s, &nativeError{Code: "x"})
		if err := driver.ContextError(ctx, answer); err != answer {
			t.Errorf("ContextError(ended, %v) = %v, want the answer itself", answer, err)
		}
	}
}

// TestPortableDefiniteOrUnknown: a driver's answer holding a sentinel and the context's error
// is an unknown outcome (T7): the context's error, the driver's native error and the key are
// reachable, the sentinel is not. A sentinel alone, or the context's error alone, is kept.
func TestPortableDefiniteOrUnknown(t *testing.T) {
	native := &nativeError{Code: "40001"}
	for _, c := range []struct {
		name     string
		err      error
		sentinel error // still found, or nil
		ctx      error // found, or nil
	}{
		{"deadline joined", fmt.Errorf("%w: %w", context.DeadlineExceeded, driver.Wrap(store.ErrNotFound, native)), nil, context.DeadlineExceeded},
		{"cancel joined", errors.Join(driver.Wrap(store.ErrExists, native), context.Canceled), nil, context.Canceled},
		{"condition failed, wrapped deeper", fmt.Errorf("retry: %w", fmt.Errorf("%w: %w", store.ErrConditionFailed, fmt.Errorf("%w (native %w)", context.DeadlineExceeded, native))), nil, context.DeadlineExceeded},
		{"sentinel alone", driver.Wrap(store.ErrNotFound, native), store.ErrNotFound, nil},
		{"deadline alone", fmt.Errorf("%w: %w", context.DeadlineExceeded, native), nil, context.DeadlineExceeded},
	} {
		r := &recorder{err: c.err}
		for op, do := range ops(driver.New(r), t.Context(), "k", map[string]any{"a": 1}, &store.Condition{Field: "a", Value: 1}) {
			err := do()
			var ke *store.KeyError
			var ne *nativeError
			if !errors.As(err, &ke) || ke.Op != op || ke.Key != "k" || !errors.As(err, &ne) || ne != native {
				t.Errorf("%s, %s: %v: the key or the native error is lost", c.name, op, err)
			}
			for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrConditionFailed} {
				if got := errors.Is(err, s); got != (s == c.sentinel) {
					t.Errorf("%s, %s: %v: errors.Is(%v) = %v", c.name, op, err, s, got)
				}
			}
			if c.ctx != nil && !errors.Is(err, c.ctx) {
				t.Errorf("%s, %s: %v: errors.Is(%v) = false", c.name, op, err, c.ctx)
			}
			if c.sentinel == nil && c.ctx != nil && errors.Is(c.err, store.ErrNotFound) && !strings.Contains(err.Error(), "outcome unknown") {
				t.Errorf("%s, %s: %q does not say the outcome is unknown", c.name, op, err)
			}
		}
	}
}
