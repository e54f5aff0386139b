package driver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/leasehold/leasehold/store"
)

// Matches reports whether the normalized document doc meets cond (nil: no condition). A
// missing field matches no value, not even nil: JSON's null is a value, and absence is not.
func Matches(doc map[string]any, cond *Condition) bool {
	if cond == nil {
		return true
	}
	got, ok := doc[cond.Field]
	return ok && reflect.DeepEqual(got, cond.Value)
}

// Find returns the document under key in docs, the in-process backends' map, when it meets
// cond: ErrNotFound when there is none, ErrConditionFailed when it does not meet cond.
func Find[M ~map[string]map[string]any](docs M, key string, cond *Condition) (map[string]any, error) {
	doc, ok := docs[key]
	if !ok {
		return nil, store.ErrNotFound
	}
	if !Matches(doc, cond) {
		return nil, store.ErrConditionFailed
	}
	return doc, nil
}

// ConditionError returns nil when the normalized document doc meets cond, and otherwise
// ErrConditionFailed saying whether the field is missing or holds another value.
func ConditionError(doc map[string]any, cond *Condition) error {
	if Matches(doc, cond) {
		return nil
	}
	if _, ok := doc[cond.Field]; !ok {
		return fmt.Errorf("%w: the document has no field %q", store.ErrConditionFailed, cond.Field)
	}
	w, _ := json.Marshal(cond.Value)
	return fmt.Errorf("%w: field %q is not %s", store.ErrConditionFailed, cond.Field, w)
}

// maxRowWrites bounds the reruns of a write whose row changed between the statement and the
// read that follows it; each rerun needs another writer to have succeeded meanwhile.
const maxRowWrites = 8

// WriteOrExplain runs a conditional Patch or Delete made as one statement whose WHERE clause
// carries the condition (so the check and the write are one atomic step), as the SQL backends
// do: write runs it and returns the number of rows it changed.
//
// When it changes no row, get reads the row to tell why: no row is ErrNotFound (get returns
// it), a row that does not meet cond is ErrConditionFailed. Both answers are true at the
// instant of that read, which lies within the call, and the call had no effect: this is where
// it takes effect. If the row read does meet cond (a concurrent writer changed it between the
// two statements), the statement is run again, as the call has not taken effect yet, up to 8
// times. The errors of write and get go through explain (the backend adds its table and the
// context's error, see TableError).
func WriteOrExplain(cond *Condition, write func() (int64, error), get func() (map[string]any, error), explain func(error) error) error {
	for range maxRowWrites {
		n, err := write()
		if err != nil {
			return explain(err)
		}
		if n > 0 {
			return nil
		}
		doc, err := get()
		if err != nil {
			return explain(err)
		}
		if !Matches(doc, cond) {
			return store.ErrConditionFailed
		}
	}
	return fmt.Errorf("%w: the row kept changing between the write and the read that checks it", store.ErrConditionFailed)
}

// ReadCheckWrite makes a conditional Patch of fields, or a Delete when fields is nil, on a store
// that writes by compare-and-swap on a revision R, as the key-value backends do: read returns
// the document and its revision (ErrNotFound when there is none); ReadCheckWrite checks cond
// (see [ConditionError]) and has write put the patched document's JSON (nil to delete) on that
// revision. When the document changed in between, write reports a conflict and ReadCheckWrite
// starts over with a new read: the condition is checked again, so of several writers holding
// the same condition only the first wins. It stops when ctx ends. Errors are returned as they
// are.
func ReadCheckWrite[R any](ctx context.Context, cond *Condition, fields map[string]any,
	read func() (map[string]any, R, error), write func(rev R, doc []byte) (conflict bool, err error)) error {
	for {
		doc, rev, err := read()
		if err != nil {
			return err
		}
		if err := ConditionError(doc, cond); err != nil {
			return err
		}
		var b []byte
		if fields != nil {
			for f, v := range fields {
				doc[f] = v
			}
			if b, err = json.Marshal(doc); err != nil {
				return fmt.Errorf("%w: %v", store.ErrInvalid, err)
			}
		}
		conflict, err := write(rev, b)
		if !conflict {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
