package linearize

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/leasehold/leasehold/store"
)

// h builds a history from (client, call, return, input, output) rows; a return of -1 is an
// unknown outcome, at the end of the history.
func h(rows ...[5]any) []porcupine.Operation {
	var out []porcupine.Operation
	for _, r := range rows {
		ret := int64(r[2].(int))
		if ret < 0 {
			ret = 1000
		}
		out = append(out, porcupine.Operation{ClientId: r[0].(int), Call: int64(r[1].(int)), Return: ret,
			Input: r[3].(input), Output: r[4].(output), Metadata: info{}})
	}
	return out
}

var (
	get           = input{Kind: opGet}
	create        = func(v int64) input { return input{Kind: opCreate, Val: v} }
	patch         = func(cond, v int64) input { return input{Kind: opPatch, Cond: cond, Val: v} }
	del           = func(cond int64) input { return input{Kind: opDelete, Cond: cond} }
	ok            = output{Res: resOK}
	read          = func(v int64) output { return output{Res: resOK, Val: v} }
	notFound      = output{Res: resNotFound}
	exists        = output{Res: resExists}
	condFailed    = output{Res: resConditionFailed}
	unknown       = output{Res: resUnknown}
	illegal, good = false, true
)

// TestModel: the register's specification on small histories, unknown outcomes included.
func TestModel(t *testing.T) {
	for name, c := range map[string]struct {
		ops   []porcupine.Operation
		legal bool
	}{
		"create then get":               {h([5]any{0, 0, 1, create(1), ok}, [5]any{1, 2, 3, get, read(1)}), good},
		"get misses a create":           {h([5]any{0, 0, 1, create(1), ok}, [5]any{1, 2, 3, get, notFound}), illegal},
		"concurrent get may miss it":    {h([5]any{0, 0, 5, create(1), ok}, [5]any{1, 2, 3, get, notFound}), good},
		"exists on an absent key":       {h([5]any{0, 0, 1, create(1), ok}, [5]any{0, 2, 3, del(1), ok}, [5]any{1, 4, 5, create(2), exists}), illegal},
		"two swaps from one value":      {h([5]any{0, 0, 1, create(1), ok}, [5]any{1, 2, 5, patch(1, 2), ok}, [5]any{2, 2, 5, patch(1, 3), ok}), illegal},
		"not found is not a mismatch":   {h([5]any{0, 0, 1, patch(1, 2), condFailed}), illegal},
		"mismatch is not not found":     {h([5]any{0, 0, 1, create(1), ok}, [5]any{0, 2, 3, del(2), notFound}), illegal},
		"unknown create seen later":     {h([5]any{0, 0, -1, create(1), unknown}, [5]any{1, 2, 3, get, notFound}, [5]any{1, 4, 5, get, read(1)}), good},
		"unknown create never applied":  {h([5]any{0, 0, -1, create(1), unknown}, [5]any{1, 2, 3, get, notFound}, [5]any{1, 4, 5, create(2), ok}), good},
		"unknown write cannot undo":     {h([5]any{0, 0, -1, del(9), unknown}, [5]any{1, 1, 2, create(1), ok}, [5]any{1, 3, 4, get, notFound}), illegal},
		"unknown swap applied late":     {h([5]any{0, 0, 1, create(1), ok}, [5]any{0, 2, -1, patch(1, 2), unknown}, [5]any{1, 3, 4, get, read(1)}, [5]any{1, 5, 6, get, read(2)}), good},
		"unknown swaps both applied":    {h([5]any{0, 0, 1, create(1), ok}, [5]any{0, 2, -1, patch(1, 2), unknown}, [5]any{1, 2, -1, patch(1, 3), unknown}, [5]any{1, 5, 6, get, read(2)}, [5]any{1, 7, 8, get, read(3)}), illegal},
		"unknown after the last answer": {h([5]any{0, 0, 1, create(1), ok}, [5]any{1, 9, -1, del(1), unknown}), good},
	} {
		if got := porcupine.CheckOperations(model, closed(c.ops)); got != c.legal {
			t.Errorf("%s: linearizable = %v, want %v", name, got, c.legal)
		}
	}
}

// TestClassify: definite answers are nil and the sentinels an operation can give; other errors
// are unknown outcomes; a sentinel with the context's error is a violation (T7).
func TestClassify(t *testing.T) {
	deadline := fmt.Errorf("%w: %w", context.DeadlineExceeded, store.ErrNotFound)
	for _, c := range []struct {
		k         kind
		err       error
		want      result
		violation bool
	}{
		{opGet, nil, resOK, false},
		{opGet, store.ErrNotFound, resNotFound, false},
		{opGet, store.ErrExists, resUnknown, true},
		{opCreate, fmt.Errorf("wrapped: %w", store.ErrExists), resExists, false},
		{opCreate, store.ErrNotFound, resUnknown, true},
		{opPatch, store.ErrConditionFailed, resConditionFailed, false},
		{opDelete, store.ErrNotFound, resNotFound, false},
		{opDelete, store.ErrInvalid, resUnknown, true},
		{opPatch, context.DeadlineExceeded, resUnknown, false},
		{opPatch, errors.New("connection reset"), resUnknown, false},
		{opGet, deadline, resUnknown, true},
		{opPatch, errors.Join(store.ErrNotFound, store.ErrConditionFailed), resUnknown, true},
	} {
		got, v := classify(c.k, c.err)
		if got != c.want || (v != "") != c.violation {
			t.Errorf("classify(%s, %v) = %s, %q; want %s, violation %v", c.k, c.err, got, v, c.want, c.violation)
		}
	}
}

// TestCut: a history cut short keeps its first calls, and the calls in flight at the cut
// become unknown outcomes (a Get among them is left out).
func TestCut(t *testing.T) {
	ops := h([5]any{0, 0, 10, create(1), ok}, [5]any{1, 1, 2, get, notFound}, [5]any{2, 3, 20, get, read(1)}, [5]any{1, 4, 5, patch(1, 2), condFailed})
	got := cut(ops, 3)
	if len(got) != 2 || got[0].Output.(output).Res != resUnknown || got[0].Return != 4 || got[0].Metadata.(info).Cut != "ok" || got[1].Output != notFound {
		t.Errorf("cut = %+v", got)
	}
}
