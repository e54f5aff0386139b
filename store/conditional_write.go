package store

import (
	"context"
	"encoding/json"
	"fmt"
)

// ConditionError returns nil when the normalized document doc meets cond (whose value want is
// already normalized, as CheckCondition returns it), and otherwise ErrConditionFailed saying
// whether the field is missing or holds another value.
func ConditionError(doc map[string]any, cond *Condition, want any) error {
	if Matches(doc, cond, want) {
		return nil
	}
	if _, ok := doc[cond.Field]; !ok {
		return fmt.Errorf("%w: the document has no field %q", ErrConditionFailed, cond.Field)
	}
	w, _ := json.Marshal(want)
	return fmt.Errorf("%w: field %q is not %s", ErrConditionFailed, cond.Field, w)
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
// times. The errors of write and get go through wrap (the backend adds the key, its table and
// the context's error); the condition's errors are wrapped with op and key.
func WriteOrExplain(op, key string, cond *Condition, want any, write func() (int64, error),
	get func() (map[string]any, error), wrap func(error) error) error {
	for range maxRowWrites {
		n, err := write()
		if err != nil {
			return wrap(err)
		}
		if n > 0 {
			return nil
		}
		doc, err := get()
		if err != nil {
			return wrap(err)
		}
		if !Matches(doc, cond, want) {
			return WrapKey(op, key, ErrConditionFailed)
		}
	}
	return WrapKey(op, key, fmt.Errorf("%w: the row kept changing between the write and the read that checks it", ErrConditionFailed))
}

// ReadCheckWrite makes a conditional Patch of fields, or a Delete when fields is nil, on a store
// that writes by compare-and-swap on a revision R, as the key-value backends do: read returns
// the document and its revision (ErrNotFound when there is none); ReadCheckWrite checks cond
// (see [ConditionError]) and has write put the patched document's JSON (nil to delete) on that
// revision. When the document changed in between, write reports a conflict and ReadCheckWrite
// starts over with a new read: the condition is checked again, so of several writers holding
// the same condition only the first wins. It stops when ctx ends. Errors are returned as they
// are, for the caller to wrap with the key.
func ReadCheckWrite[R any](ctx context.Context, cond *Condition, fields map[string]any,
	read func() (map[string]any, R, error), write func(rev R, doc []byte) (conflict bool, err error)) error {
	want, err := CheckCondition(cond)
	if err != nil {
		return err
	}
	for {
		doc, rev, err := read()
		if err != nil {
			return err
		}
		if err := ConditionError(doc, cond, want); err != nil {
			return err
		}
		var b []byte
		if fields != nil {
			for f, v := range fields {
				doc[f] = v
			}
			if b, err = json.Marshal(doc); err != nil {
				return fmt.Errorf("%w: %v", ErrInvalid, err)
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
