// Package storetest is the conformance suite every [store.Store] runs (rule T5 of docs/design.md).
//
// A store's own tests call [Run] with a function that returns a ready store:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := mystore.Open(...)
//			if err != nil {
//				t.Fatal(err)
//			}
//			t.Cleanup(func() { s.Close() })
//			return s
//		})
//	}
//
// open is called once per subtest, one subtest at a time. Every subtest uses keys of its own
// (built from its name and a random suffix), so open may return the same store, table, bucket or
// database every time, and the suite runs against a store that already holds other documents.
// The suite leaves its documents behind; nothing depends on removing them.
//
// What it checks, with the rule each subtest name cites:
//
//   - RoundTrip: strings (unicode, empty, control characters, NUL, invalid UTF-8), numbers
//     (integers, floats, negative, ±2^53, large exponents), booleans, null, nested objects and
//     arrays, empty objects and arrays, Go values (structs, typed slices and maps, time.Time)
//     all read back in the form encoding/json decodes them into, through Create and through
//     Patch; Get returns a copy, and Create and Patch copy their input.
//   - LeaseRecord: a lease record as the store Lock encodes it, every field of cluster.Record
//     set, reads back as itself through Create, and a release written over it by Patch reads
//     back with every field it leaves unset zero.
//   - Keys: keys with separators, spaces and non-ASCII characters work, and keys that differ
//     only by case, accent or trailing space are different keys.
//   - T3/NotFound: Get, Patch and Delete of a missing key return ErrNotFound.
//   - T3/KeyError: every error is a *store.KeyError naming the operation and the key, and its
//     text names the key.
//   - T1/CreateExisting: Create on an existing key returns ErrExists and changes nothing.
//   - Patch: sets the given top-level fields (replacing nested values whole), keeps the others;
//     null is a value, not a removal.
//   - T2/Condition: conditions on Patch and Delete compare JSON values (1 == 1.0, "1" != 1,
//     objects and arrays by value); a falsy value (false, 0, "", null) is still applied; a
//     condition on a missing field fails; a failed condition returns ErrConditionFailed and
//     changes nothing.
//   - Delete: with and without a condition; a deleted key reads as ErrNotFound and can be
//     created again.
//   - Invalid: an empty key, a nil document, a condition without a field and a value that does
//     not encode to JSON (a channel, NaN, ±Inf) return ErrInvalid and change nothing.
//   - Context: a cancelled or expired context makes every operation fail with an error that
//     errors.Is finds context.Canceled (or context.DeadlineExceeded) in, and changes nothing.
//   - T7/DefiniteOrUnknown: calls that can only fail, cut short by deadlines of 20µs to 3ms,
//     answer either a definite failure (the right sentinel) or an unknown outcome, never an
//     error holding both a sentinel and the context's error; they change nothing.
//   - T1/ConcurrentCreate, T2/ConcurrentPatch, T2/ConcurrentDelete: of 16 goroutines racing on
//     one key with the same precondition (creates; conditional patches; conditional deletes
//     mixed with conditional patches), exactly one wins and its write is the one stored.
//     T2/LostUpdate: rounds of 16 read-then-conditional-patch increments lose no update and
//     apply none twice; in every other round all racers read before any writes, so exactly one
//     may win.
//   - T8/Watch: a store that cannot watch answers ErrWatchUnsupported at once; one that can
//     first delivers the key's state (missing or its document), then the states written after
//     it, in order, ending with the last (states skipped or repeated allowed, never older after
//     newer); writes to other keys deliver nothing of theirs; two watches of one key both see
//     a write; a cancelled watch returns the context's error in a *store.KeyError and calls
//     nothing after; a watch asked for heartbeats (store.WithHeartbeat) first delivers the
//     key's state, then heartbeats without a write, the write's state among them, and
//     heartbeats after it; a watch not asked delivers none.
//
// The races catch a store that ignores conditions whatever the scheduling; a store that checks
// a condition apart from its write is caught only when the racers interleave, which a
// networked store makes likely and a fast in-process one does not.
//
// A failure message names the rule, the operation and the key.
//
// Linearizability under concurrent writers and calls cut short, which needs a checker from
// outside the standard library, is checked by the module store/storetest/linearize; every
// store runs both.
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// Run runs the conformance suite against the stores returned by open, as subtests of t.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	t.Helper()
	s := &suite{open: open}
	t.Run("RoundTrip", s.roundTrip)
	t.Run("LeaseRecord", s.leaseRecord)
	t.Run("Roster", s.roster)
	t.Run("Keys", s.keys)
	t.Run("T3/NotFound", s.notFound)
	t.Run("T3/KeyError", s.keyError)
	t.Run("T1/CreateExisting", s.run(testCreateExisting))
	t.Run("Patch", s.patch)
	t.Run("T2/Condition", s.conditions)
	t.Run("Delete", s.delete)
	t.Run("Invalid", s.invalid)
	t.Run("Context", s.context)
	t.Run("T7/DefiniteOrUnknown", s.run(definiteOrUnknown))
	t.Run("T1/ConcurrentCreate", s.run(testConcurrentCreate))
	t.Run("T2/ConcurrentPatch", s.run(testConcurrentPatch))
	t.Run("T2/ConcurrentDelete", s.run(testConcurrentDelete))
	t.Run("T2/LostUpdate", s.run(testLostUpdate))
	t.Run("T8/Watch", s.watch)
}

type suite struct {
	open func(t *testing.T) store.Store
}

// run adapts a test body that takes a fresh store and a key unique to its subtest.
func (s *suite) run(f func(t *testing.T, st store.Store, key string)) func(t *testing.T) {
	return func(t *testing.T) {
		t.Helper()
		st := s.open(t)
		if st == nil {
			t.Fatal("storetest: open returned a nil store")
		}
		f(t, st, newKey(t))
	}
}

// newKey returns a key no other subtest (or earlier run on a persistent store) uses. The colon
// mirrors the Registry's own keys ("cluster:leader").
func newKey(t *testing.T) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			return r
		}
		return '.'
	}, t.Name())
	return fmt.Sprintf("storetest:%s:%016x", name, rand.Uint64())
}

// decoded returns v as encoding/json decodes it, the form every store returns.
func decoded(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("storetest: test value does not encode: %v", err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("storetest: %v", err)
	}
	return out
}

func decodedDoc(t *testing.T, doc map[string]any) map[string]any {
	t.Helper()
	return decoded(t, doc).(map[string]any)
}

func mustCreate(t *testing.T, st store.Store, key string, doc map[string]any) {
	t.Helper()
	if err := st.Create(t.Context(), key, doc); err != nil {
		t.Fatalf("Create(%q): %v", key, err)
	}
}

func mustGet(t *testing.T, st store.Store, key string) map[string]any {
	t.Helper()
	doc, err := st.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if doc == nil {
		t.Fatalf("Get(%q) returned a nil document and no error", key)
	}
	return doc
}

// wantDoc checks that key holds want (given in any form; compared as decoded JSON).
func wantDoc(t *testing.T, st store.Store, key string, want map[string]any) {
	t.Helper()
	got := mustGet(t, st, key)
	w := decodedDoc(t, want)
	if !reflect.DeepEqual(got, w) {
		t.Errorf("Get(%q) =\n\t%s\nwant\n\t%s", key, show(got), show(w))
	}
}

// wantMissing checks that key holds no document.
func wantMissing(t *testing.T, st store.Store, key string) {
	t.Helper()
	doc, err := st.Get(t.Context(), key)
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Get(%q) = %s, %v; want ErrNotFound", key, show(doc), err)
	}
}

// wantErr checks that err is target wrapped in a *store.KeyError for op and key (T3).
func wantErr(t *testing.T, err, target error, op, key string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s %q: no error, want %v", op, key, target)
		return
	}
	if !errors.Is(err, target) {
		t.Errorf("%s %q: error %q, want errors.Is(err, %v)", op, key, err, target)
	}
	checkKeyError(t, err, op, key)
}

// checkKeyError checks T3: the error carries the operation and the key, and its text names the key.
func checkKeyError(t *testing.T, err error, op, key string) {
	t.Helper()
	var ke *store.KeyError
	if !errors.As(err, &ke) {
		t.Errorf("%s %q: error %q is not wrapped in a *store.KeyError (T3)", op, key, err)
		return
	}
	if ke.Key != key || ke.Op != op {
		t.Errorf("%s %q: KeyError{Op: %q, Key: %q}, want Op %q, Key %q (T3)", op, key, ke.Op, ke.Key, op, key)
	}
	if msg := err.Error(); key != "" && !strings.Contains(msg, key) && !strings.Contains(msg, strconv.Quote(key)) {
		t.Errorf("%s %q: error text %q does not name the key (T3)", op, key, msg)
	}
}

func show(v any) string {
	if v == nil {
		return "<nil>"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v", v)
	}
	return fmt.Sprintf("%s (%#v)", b, v)
}

// cancelled returns a context that is already cancelled.
func cancelled(t *testing.T) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	return ctx
}
