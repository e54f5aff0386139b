package storetest

import (
	"testing"

	"github.com/leasehold/leasehold/store"
)

type conditionCase struct {
	name  string
	doc   map[string]any
	cond  store.Condition
	holds bool
}

func conditionCases() []conditionCase {
	obj := map[string]any{"a": 1, "b": []any{1, "x"}}
	arr := []any{1, "two", true, nil}
	return []conditionCase{
		{"String/Holds", map[string]any{"rev": "r1"}, store.Condition{Field: "rev", Value: "r1"}, true},
		{"String/Fails", map[string]any{"rev": "r1"}, store.Condition{Field: "rev", Value: "r2"}, false},
		{"String/CaseSensitive", map[string]any{"s": "abc"}, store.Condition{Field: "s", Value: "ABC"}, false},
		{"String/TrailingSpace", map[string]any{"s": "abc"}, store.Condition{Field: "s", Value: "abc "}, false},
		{"String/Unicode", map[string]any{"s": "é😀"}, store.Condition{Field: "s", Value: "é😀"}, true},
		{"String/Decomposed", map[string]any{"s": "é"}, store.Condition{Field: "s", Value: "e\u0301"}, false},
		{"Number/IntEqualsFloat", map[string]any{"n": 1}, store.Condition{Field: "n", Value: 1.0}, true},
		{"Number/FloatEqualsInt", map[string]any{"n": 1.0}, store.Condition{Field: "n", Value: int64(1)}, true},
		{"Number/2^53", map[string]any{"n": int64(1) << 53}, store.Condition{Field: "n", Value: float64(1 << 53)}, true},
		{"Number/Fraction", map[string]any{"n": 0.1}, store.Condition{Field: "n", Value: 0.1}, true},
		{"Number/Differs", map[string]any{"n": 1}, store.Condition{Field: "n", Value: 1.5}, false},
		{"Number/Negative", map[string]any{"n": -3}, store.Condition{Field: "n", Value: int32(-3)}, true},
		{"Type/StringIsNotNumber", map[string]any{"n": 1}, store.Condition{Field: "n", Value: "1"}, false},
		{"Type/NumberIsNotString", map[string]any{"s": "1"}, store.Condition{Field: "s", Value: 1}, false},
		{"Type/StringIsNotBool", map[string]any{"b": true}, store.Condition{Field: "b", Value: "true"}, false},
		{"Type/NumberIsNotBool", map[string]any{"b": true}, store.Condition{Field: "b", Value: 1}, false},
		{"Type/ZeroIsNotFalse", map[string]any{"b": false}, store.Condition{Field: "b", Value: 0}, false},
		{"Type/NullIsNotEmptyString", map[string]any{"s": nil}, store.Condition{Field: "s", Value: ""}, false},
		// T2: Webda skips a condition whose value is falsy and writes anyway; we apply it.
		{"Falsy/FalseApplied", map[string]any{"flag": true}, store.Condition{Field: "flag", Value: false}, false},
		{"Falsy/FalseHolds", map[string]any{"flag": false}, store.Condition{Field: "flag", Value: false}, true},
		{"Falsy/ZeroApplied", map[string]any{"n": 5}, store.Condition{Field: "n", Value: 0}, false},
		{"Falsy/ZeroHolds", map[string]any{"n": 0}, store.Condition{Field: "n", Value: 0}, true},
		{"Falsy/EmptyStringApplied", map[string]any{"s": "x"}, store.Condition{Field: "s", Value: ""}, false},
		{"Falsy/EmptyStringHolds", map[string]any{"s": ""}, store.Condition{Field: "s", Value: ""}, true},
		{"Falsy/NullApplied", map[string]any{"a": "x"}, store.Condition{Field: "a", Value: nil}, false},
		{"Falsy/NullHolds", map[string]any{"a": nil}, store.Condition{Field: "a", Value: nil}, true},
		{"Missing/Null", map[string]any{"other": 1}, store.Condition{Field: "a", Value: nil}, false},
		{"Missing/False", map[string]any{"other": 1}, store.Condition{Field: "a", Value: false}, false},
		{"Missing/Zero", map[string]any{"other": 1}, store.Condition{Field: "a", Value: 0}, false},
		{"Missing/EmptyString", map[string]any{"other": 1}, store.Condition{Field: "a", Value: ""}, false},
		{"Missing/EmptyDocument", map[string]any{}, store.Condition{Field: "a", Value: nil}, false},
		{"Object/Holds", map[string]any{"obj": obj}, store.Condition{Field: "obj", Value: map[string]any{"b": []any{1.0, "x"}, "a": 1.0}}, true},
		{"Object/Typed", map[string]any{"obj": map[string]any{"x": 1}}, store.Condition{Field: "obj", Value: map[string]int{"x": 1}}, true},
		{"Object/Struct", map[string]any{"p": point{X: 1, Label: "l"}}, store.Condition{Field: "p", Value: map[string]any{"x": 1, "Label": "l"}}, true},
		{"Object/Subset", map[string]any{"obj": obj}, store.Condition{Field: "obj", Value: map[string]any{"a": 1}}, false},
		{"Object/Superset", map[string]any{"obj": obj}, store.Condition{Field: "obj", Value: map[string]any{"a": 1, "b": []any{1, "x"}, "c": nil}}, false},
		{"Object/NestedDiffers", map[string]any{"obj": obj}, store.Condition{Field: "obj", Value: map[string]any{"a": 1, "b": []any{1, "y"}}}, false},
		{"Object/EmptyIsNotNull", map[string]any{"obj": map[string]any{}}, store.Condition{Field: "obj", Value: nil}, false},
		{"Object/Empty", map[string]any{"obj": map[string]any{}}, store.Condition{Field: "obj", Value: map[string]any{}}, true},
		{"Array/Holds", map[string]any{"arr": arr}, store.Condition{Field: "arr", Value: []any{1.0, "two", true, nil}}, true},
		{"Array/Order", map[string]any{"arr": arr}, store.Condition{Field: "arr", Value: []any{true, "two", 1, nil}}, false},
		{"Array/Prefix", map[string]any{"arr": arr}, store.Condition{Field: "arr", Value: []any{1, "two"}}, false},
		{"Array/ElementIsNotArray", map[string]any{"arr": []any{1}}, store.Condition{Field: "arr", Value: 1}, false},
		{"Array/EmptyIsNotNull", map[string]any{"arr": []any{}}, store.Condition{Field: "arr", Value: nil}, false},
		{"Array/Typed", map[string]any{"arr": []any{"a", "b"}}, store.Condition{Field: "arr", Value: []string{"a", "b"}}, true},
		// Field names are data, not paths or query text.
		{"Field/Dotted", map[string]any{"a.b": 1, "a": map[string]any{"b": 2}}, store.Condition{Field: "a.b", Value: 1}, true},
		{"Field/NotAPath", map[string]any{"a": map[string]any{"b": 2}}, store.Condition{Field: "a.b", Value: 2}, false},
		{"Field/Quotes", map[string]any{`q"'$[0]`: "v"}, store.Condition{Field: `q"'$[0]`, Value: "v"}, true},
		{"Field/Unicode", map[string]any{"clé": "v"}, store.Condition{Field: "clé", Value: "v"}, true},
	}
}

// conditions runs every case on Patch and on Delete: a condition that holds lets the write
// happen; one that does not returns ErrConditionFailed and changes nothing.
func (s *suite) conditions(t *testing.T) {
	for _, c := range conditionCases() {
		t.Run(c.name, s.run(func(t *testing.T, st store.Store, key string) {
			ctx := t.Context()
			cond := c.cond
			patchKey, deleteKey := key+":patch", key+":delete"
			mustCreate(t, st, patchKey, c.doc)
			mustCreate(t, st, deleteKey, c.doc)

			err := st.Patch(ctx, patchKey, map[string]any{"patched": true}, &cond)
			if c.holds {
				if err != nil {
					t.Errorf("Patch(%q) with condition %v on %s: %v, want success", patchKey, &cond, show(c.doc), err)
				}
				want := map[string]any{"patched": true}
				for k, v := range c.doc {
					want[k] = v
				}
				wantDoc(t, st, patchKey, want)
			} else {
				wantErr(t, err, store.ErrConditionFailed, "patch", patchKey)
				wantDoc(t, st, patchKey, c.doc)
			}

			err = st.Delete(ctx, deleteKey, &cond)
			if c.holds {
				if err != nil {
					t.Errorf("Delete(%q) with condition %v on %s: %v, want success", deleteKey, &cond, show(c.doc), err)
				}
				wantMissing(t, st, deleteKey)
			} else {
				wantErr(t, err, store.ErrConditionFailed, "delete", deleteKey)
				wantDoc(t, st, deleteKey, c.doc)
			}
		}))
	}
}

func (s *suite) patch(t *testing.T) {
	t.Run("SetsFieldsKeepsOthers", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"a": 1, "b": "x", "c": true})
		if err := st.Patch(t.Context(), key, map[string]any{"b": "y", "d": []any{1}}, nil); err != nil {
			t.Fatalf("Patch(%q): %v", key, err)
		}
		wantDoc(t, st, key, map[string]any{"a": 1, "b": "y", "c": true, "d": []any{1}})
	}))
	// Patch sets top-level fields: a nested object is replaced whole, not merged.
	t.Run("ReplacesNestedValues", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"obj": map[string]any{"x": 1, "y": 2}, "arr": []any{1, 2, 3}, "keep": "k"})
		if err := st.Patch(t.Context(), key, map[string]any{"obj": map[string]any{"x": 3}, "arr": []any{4}}, nil); err != nil {
			t.Fatalf("Patch(%q): %v", key, err)
		}
		wantDoc(t, st, key, map[string]any{"obj": map[string]any{"x": 3}, "arr": []any{4}, "keep": "k"})
	}))
	// null is a value: patching a field to null keeps the field (JSON merge patch would drop it).
	t.Run("NullIsAValue", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"a": 1, "b": 2})
		if err := st.Patch(t.Context(), key, map[string]any{"a": nil}, nil); err != nil {
			t.Fatalf("Patch(%q): %v", key, err)
		}
		wantDoc(t, st, key, map[string]any{"a": nil, "b": 2})
		if err := st.Patch(t.Context(), key, map[string]any{"c": 3}, &store.Condition{Field: "a", Value: nil}); err != nil {
			t.Errorf("Patch(%q) conditioned on a field patched to null: %v", key, err)
		}
		wantDoc(t, st, key, map[string]any{"a": nil, "b": 2, "c": 3})
	}))
	t.Run("ChangesType", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"v": "1"})
		for _, v := range []any{1, true, map[string]any{"x": 1}, []any{"a"}, nil, "back"} {
			if err := st.Patch(t.Context(), key, map[string]any{"v": v}, nil); err != nil {
				t.Fatalf("Patch(%q) to %s: %v", key, show(v), err)
			}
			wantDoc(t, st, key, map[string]any{"v": v})
		}
	}))
	t.Run("EmptyFields", s.run(func(t *testing.T, st store.Store, key string) {
		doc := map[string]any{"a": 1}
		mustCreate(t, st, key, doc)
		if err := st.Patch(t.Context(), key, map[string]any{}, nil); err != nil {
			t.Errorf("Patch(%q) with no fields: %v", key, err)
		}
		if err := st.Patch(t.Context(), key, map[string]any{}, &store.Condition{Field: "a", Value: 1}); err != nil {
			t.Errorf("Patch(%q) with no fields and a condition that holds: %v", key, err)
		}
		wantErr(t, st.Patch(t.Context(), key, map[string]any{}, &store.Condition{Field: "a", Value: 2}), store.ErrConditionFailed, "patch", key)
		wantDoc(t, st, key, doc)
	}))
	// The compare-and-swap the Registry lock relies on (S1): a patch conditioned on the field it
	// changes succeeds once.
	t.Run("CompareAndSwap", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"rev": "1", "holder": "a"})
		cond := &store.Condition{Field: "rev", Value: "1"}
		if err := st.Patch(t.Context(), key, map[string]any{"rev": "2", "holder": "b"}, cond); err != nil {
			t.Fatalf("Patch(%q): %v", key, err)
		}
		wantErr(t, st.Patch(t.Context(), key, map[string]any{"rev": "2", "holder": "c"}, cond), store.ErrConditionFailed, "patch", key)
		wantDoc(t, st, key, map[string]any{"rev": "2", "holder": "b"})
	}))
}

func (s *suite) delete(t *testing.T) {
	t.Run("Unconditional", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"a": 1})
		if err := st.Delete(t.Context(), key, nil); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
		wantMissing(t, st, key)
		wantErr(t, st.Delete(t.Context(), key, nil), store.ErrNotFound, "delete", key)
		wantErr(t, st.Patch(t.Context(), key, map[string]any{"a": 2}, nil), store.ErrNotFound, "patch", key)
	}))
	t.Run("ConditionHolds", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"rev": "r1"})
		if err := st.Delete(t.Context(), key, &store.Condition{Field: "rev", Value: "r1"}); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
		wantMissing(t, st, key)
	}))
	t.Run("ConditionFails", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"rev": "r1"})
		wantErr(t, st.Delete(t.Context(), key, &store.Condition{Field: "rev", Value: "r0"}), store.ErrConditionFailed, "delete", key)
		wantDoc(t, st, key, map[string]any{"rev": "r1"})
	}))
	// A deleted key is free again, and the new document carries nothing of the old one.
	t.Run("ThenCreate", s.run(func(t *testing.T, st store.Store, key string) {
		mustCreate(t, st, key, map[string]any{"old": true, "rev": 1})
		if err := st.Delete(t.Context(), key, nil); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
		mustCreate(t, st, key, map[string]any{"rev": 1})
		wantDoc(t, st, key, map[string]any{"rev": 1})
		wantErr(t, st.Create(t.Context(), key, map[string]any{"rev": 2}), store.ErrExists, "create", key)
	}))
	t.Run("OthersUntouched", s.run(func(t *testing.T, st store.Store, key string) {
		other := key + ":other"
		mustCreate(t, st, key, map[string]any{"a": 1})
		mustCreate(t, st, other, map[string]any{"a": 2})
		if err := st.Delete(t.Context(), key, nil); err != nil {
			t.Fatalf("Delete(%q): %v", key, err)
		}
		wantDoc(t, st, other, map[string]any{"a": 2})
	}))
}
