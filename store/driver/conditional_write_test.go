package driver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// TestConditionError: no condition, or one met, is no error; a condition failed says whether the
// field is missing or holds another value (T2).
func TestConditionError(t *testing.T) {
	doc := map[string]any{"rev": 2.0, "holder": nil}
	if err := driver.ConditionError(doc, nil); err != nil {
		t.Errorf("no condition: %v", err)
	}
	if err := driver.ConditionError(doc, &driver.Condition{Field: "rev", Value: 2.0}); err != nil {
		t.Errorf("condition met: %v", err)
	}
	if err := driver.ConditionError(doc, &driver.Condition{Field: "holder", Value: nil}); err != nil {
		t.Errorf("null condition on a null field: %v", err)
	}
	for _, c := range []struct {
		cond *driver.Condition
		want string
	}{
		{&driver.Condition{Field: "term", Value: 1.0}, `no field "term"`},
		{&driver.Condition{Field: "rev", Value: 1.0}, `field "rev" is not 1`},
	} {
		err := driver.ConditionError(doc, c.cond)
		if !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want ErrConditionFailed saying %s", c.cond, err, c.want)
		}
	}
}

// rowStore plays an SQL table's row for WriteOrExplain: writes says how many rows each run of
// the statement changes, row is what the read that follows finds (nil: no row).
type rowStore struct {
	writes []int64
	row    map[string]any
	runs   int
}

func (r *rowStore) write() (int64, error) {
	n := r.writes[min(r.runs, len(r.writes)-1)]
	r.runs++
	return n, nil
}

func (r *rowStore) get() (map[string]any, error) {
	if r.row == nil {
		return nil, store.ErrNotFound
	}
	return r.row, nil
}

// TestWriteOrExplain: a statement that changes a row succeeds; one that changes none is
// explained by a read, as ErrNotFound or ErrConditionFailed, or run again when the row read
// meets the condition (a concurrent writer changed it in between), a bounded number of times
// (T2, T3).
func TestWriteOrExplain(t *testing.T) {
	cond := &driver.Condition{Field: "rev", Value: 1.0}
	explain := func(err error) error { return fmt.Errorf("table t: %w", err) }
	run := func(r *rowStore) error {
		return driver.WriteOrExplain(cond, r.write, r.get, explain)
	}
	r := &rowStore{writes: []int64{1}}
	if err := run(r); err != nil || r.runs != 1 {
		t.Errorf("a changed row: %v after %d runs, want success after 1", err, r.runs)
	}
	if err := run(&rowStore{writes: []int64{0}}); !errors.Is(err, store.ErrNotFound) || !strings.HasPrefix(err.Error(), "table t: ") {
		t.Errorf("no row: %v, want ErrNotFound through explain", err)
	}
	if err := run(&rowStore{writes: []int64{0}, row: map[string]any{"rev": 2.0}}); !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("a row failing the condition: %v, want ErrConditionFailed", err)
	}
	r = &rowStore{writes: []int64{0, 0, 1}, row: map[string]any{"rev": 1.0}}
	if err := run(r); err != nil || r.runs != 3 {
		t.Errorf("a row that changed twice under the statement: %v after %d runs, want success after 3", err, r.runs)
	}
	r = &rowStore{writes: []int64{0}, row: map[string]any{"rev": 1.0}}
	if err := run(r); !errors.Is(err, store.ErrConditionFailed) || r.runs != 8 {
		t.Errorf("a row that keeps changing: %v after %d runs, want ErrConditionFailed after 8", err, r.runs)
	}
	boom := errors.New("connection reset")
	err := driver.WriteOrExplain(nil, func() (int64, error) { return 0, boom },
		func() (map[string]any, error) { t.Error("read after a failed statement"); return nil, nil }, explain)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "table t: ") {
		t.Errorf("a failed statement: %v, want its error through explain", err)
	}
}

// kvStore plays a compare-and-swap key-value store for ReadCheckWrite: a document with a
// revision; before the write of round i, changes[i] (when set) is another writer's write.
type kvStore struct {
	doc     map[string]any // nil: absent
	rev     int
	changes []map[string]any
	reads   int
	written []byte
	deleted bool
}

func (s *kvStore) read() (map[string]any, int, error) {
	s.reads++
	if s.doc == nil {
		return nil, 0, store.ErrNotFound
	}
	return driver.CopyDoc(s.doc), s.rev, nil
}

func (s *kvStore) write(rev int, b []byte) (bool, error) {
	if i := s.reads - 1; i < len(s.changes) && s.changes[i] != nil {
		s.doc, s.rev = s.changes[i], s.rev+1
	}
	if rev != s.rev {
		return true, nil
	}
	s.rev++
	if b == nil {
		s.doc, s.deleted = nil, true
		return false, nil
	}
	s.written = b
	return false, json.Unmarshal(b, &s.doc)
}

// TestReadCheckWrite: a conditional Patch merges its fields into the document read and writes
// it on that revision; a Delete writes nil; when another writer got in between, the document is
// read again and the condition checked again, so of two writers holding the same condition
// only the first wins (T2); a missing document and an ended context stop it (T3).
func TestReadCheckWrite(t *testing.T) {
	cond := &driver.Condition{Field: "rev", Value: 1.0}
	patch := map[string]any{"rev": 2.0, "holder": "b"}

	s := &kvStore{doc: map[string]any{"rev": 1.0, "holder": "a", "term": 3.0}}
	if err := driver.ReadCheckWrite(t.Context(), cond, patch, s.read, s.write); err != nil {
		t.Fatal(err)
	}
	if s.doc["holder"] != "b" || s.doc["rev"] != 2.0 || s.doc["term"] != 3.0 {
		t.Errorf("patched document %s, want holder b, rev 2 and term kept", s.written)
	}

	// Another writer renews with the same condition first: the condition no longer holds.
	s = &kvStore{doc: map[string]any{"rev": 1.0}, changes: []map[string]any{{"rev": 2.0, "holder": "c"}}}
	err := driver.ReadCheckWrite(t.Context(), cond, patch, s.read, s.write)
	if !errors.Is(err, store.ErrConditionFailed) || s.reads != 2 || s.doc["holder"] != "c" {
		t.Errorf("lost race: %v after %d reads, document %v; want ErrConditionFailed after 2 reads, the other's write kept", err, s.reads, s.doc)
	}
	// Another writer changes a field the condition does not look at: the write goes through.
	s = &kvStore{doc: map[string]any{"rev": 1.0}, changes: []map[string]any{{"rev": 1.0, "note": "x"}}}
	if err := driver.ReadCheckWrite(t.Context(), cond, patch, s.read, s.write); err != nil || s.doc["note"] != "x" || s.doc["rev"] != 2.0 {
		t.Errorf("a change under the write: %v, document %v; want the patch on top of it", err, s.doc)
	}

	s = &kvStore{doc: map[string]any{"rev": 1.0}}
	if err := driver.ReadCheckWrite(t.Context(), cond, nil, s.read, s.write); err != nil || !s.deleted {
		t.Errorf("conditional delete: %v, deleted %v", err, s.deleted)
	}
	if err := driver.ReadCheckWrite(t.Context(), cond, nil, s.read, s.write); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete of a missing document: %v, want ErrNotFound", err)
	}

	// A write that always conflicts stops when the context ends.
	ctx, cancel := context.WithCancel(t.Context())
	conflicts := 0
	err = driver.ReadCheckWrite(ctx, nil, patch,
		func() (map[string]any, int, error) { return map[string]any{}, 0, nil },
		func(int, []byte) (bool, error) {
			if conflicts++; conflicts == 3 {
				cancel()
			}
			return true, nil
		})
	if !errors.Is(err, context.Canceled) || conflicts != 3 {
		t.Errorf("endless conflicts: %v after %d writes, want context.Canceled after 3", err, conflicts)
	}
}

// TestFind: the in-process backends' lookup tells a missing document from one failing the
// condition (T3).
func TestFind(t *testing.T) {
	docs := map[string]map[string]any{"k": {"rev": 1.0}}
	if doc, err := driver.Find(docs, "k", &driver.Condition{Field: "rev", Value: 1.0}); err != nil || doc["rev"] != 1.0 {
		t.Errorf("Find of a matching document = %v, %v", doc, err)
	}
	if _, err := driver.Find(docs, "k", nil); err != nil {
		t.Errorf("Find without a condition: %v", err)
	}
	if _, err := driver.Find(docs, "other", nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("Find of a missing key: %v, want ErrNotFound", err)
	}
	if _, err := driver.Find(docs, "k", &driver.Condition{Field: "rev", Value: 2.0}); !errors.Is(err, store.ErrConditionFailed) {
		t.Errorf("Find of a document failing the condition: %v, want ErrConditionFailed", err)
	}
}
