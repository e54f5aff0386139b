package redis

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// TestScriptCompare drives the Lua comparison against documents written as raw text, in forms
// encoding/json never produces (spacing, key order, 1.0), so that the script, not Go, has to
// see through them (T2).
func TestScriptCompare(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	const raw = `{ "n" : 1.0, "s":"1", "b":true, "f":false, "z":null, "e":"",
		"o": {"y": [1, {"k": "v"}], "x": 2e0}, "a": [ ], "eo": { }, "big": 9007199254740993,
		"esc": "\u00e9\n\"", "neg": -0.5e-3 }`
	cases := []struct {
		field string
		value any
		ok    bool
	}{
		{"n", 1, true},
		{"n", 1.0, true},
		{"n", "1", false},
		{"n", true, false},
		{"s", "1", true},
		{"s", 1, false},
		{"b", true, true},
		{"b", 1, false},
		{"b", "true", false},
		{"f", false, true},
		{"f", nil, false},
		{"z", nil, true},
		{"z", false, false},
		{"z", "", false},
		{"e", "", true},
		{"e", nil, false},
		{"missing", nil, false},
		{"o", map[string]any{"x": 2, "y": []any{1, map[string]any{"k": "v"}}}, true},
		{"o", map[string]any{"x": 2, "y": []any{map[string]any{"k": "v"}, 1}}, false},
		{"o", map[string]any{"x": 2}, false},
		{"o", map[string]any{"x": 2, "y": []any{1, map[string]any{"k": "v"}}, "w": nil}, false},
		{"a", []any{}, true},
		{"a", map[string]any{}, false},
		{"a", nil, false},
		{"eo", map[string]any{}, true},
		{"eo", []any{}, false},
		{"big", float64(1 << 53), true}, // 2^53+1 is not a float64: both sides round to 2^53
		{"esc", "é\n\"", true},
		{"neg", -0.0005, true},
	}
	for _, c := range cases {
		key := "cmp:" + c.field
		if err := s.Client().Set(t.Context(), s.Prefix()+key, raw, 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := s.Patch(t.Context(), key, map[string]any{"touched": true}, &store.Condition{Field: c.field, Value: c.value})
		if c.ok && err != nil {
			t.Errorf("T2: Patch with %s == %#v: %v", c.field, c.value, err)
		}
		if !c.ok {
			if !errors.Is(err, store.ErrConditionFailed) {
				t.Errorf("T2: Patch with %s == %#v: got %v, want ErrConditionFailed", c.field, c.value, err)
			}
			got, _ := s.Client().Get(t.Context(), s.Prefix()+key).Result()
			if got != raw {
				t.Errorf("T2: failed Patch with %s == %#v changed the document to %s", c.field, c.value, got)
			}
		}
		err = s.Delete(t.Context(), key, &store.Condition{Field: c.field, Value: c.value})
		if c.ok != (err == nil) {
			t.Errorf("T2: Delete with %s == %#v: %v (want success: %v)", c.field, c.value, err, c.ok)
		}
	}
}

// TestScriptMissingVsMismatch checks that the script tells an absent field from a different
// value, in the error's text.
func TestScriptMissingVsMismatch(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	if err := s.Create(t.Context(), "k", map[string]any{"rev": "a"}); err != nil {
		t.Fatal(err)
	}
	err := s.Patch(t.Context(), "k", map[string]any{"x": 1}, &store.Condition{Field: "other", Value: "a"})
	if !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), `no field "other"`) {
		t.Errorf("condition on a missing field: %v", err)
	}
	err = s.Delete(t.Context(), "k", &store.Condition{Field: "rev", Value: "b"})
	if !errors.Is(err, store.ErrConditionFailed) || !strings.Contains(err.Error(), `field "rev" is not "b"`) {
		t.Errorf("condition on a different value: %v", err)
	}
}

// TestScriptPatchKeepsText checks that a patch leaves the members it does not touch exactly as
// stored (cjson would shorten numbers to 14 digits and turn [] into {}), sets null as a value,
// and replaces a duplicated key once.
func TestScriptPatchKeepsText(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	const raw = `{"pi":3.141592653589793,"big":123456789012345678,"a":[],"o":{},"d":1,"d":2,"s":"x\/y"}`
	if err := s.Client().Set(t.Context(), s.Prefix()+"k", raw, 0).Err(); err != nil {
		t.Fatal(err)
	}
	err := s.Patch(t.Context(), "k", map[string]any{"d": 3, "new": nil, "tiny": math.SmallestNonzeroFloat64}, &store.Condition{Field: "d", Value: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Client().Get(t.Context(), s.Prefix()+"k").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range []string{`"pi":3.141592653589793`, `"big":123456789012345678`, `"a":[]`, `"o":{}`, `"s":"x\/y"`, `"new":null`, `"d":3`} {
		if !strings.Contains(got, part) {
			t.Errorf("patched document %s lacks %s", got, part)
		}
	}
	if strings.Count(got, `"d"`) != 1 {
		t.Errorf("patched document %s should hold d once", got)
	}
	doc, err := s.Get(t.Context(), "k")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"pi": math.Pi, "big": 123456789012345678.0, "a": []any{}, "o": map[string]any{},
		"d": 3.0, "s": "x/y", "new": nil, "tiny": math.SmallestNonzeroFloat64}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("Get after Patch = %v, want %v", doc, want)
	}
}

// TestScriptFastPath drives the script's fast path (a flat document, every member patched, a
// condition that is not an object or an array) and the documents it leaves to the scanner:
// both must answer as the scanner alone would.
func TestScriptFastPath(t *testing.T) {
	t.Parallel()
	s := openTest(t)
	const raw = `{ "rev" : "a", "n": 1.0, "b": true, "z": null, "e": "", "esc": "\u00e9" }`
	all := func(v any) map[string]any {
		return map[string]any{"rev": v, "n": 2, "b": false, "z": nil, "e": "x", "esc": "é"}
	}
	cases := []struct {
		field string
		value any
		ok    bool
	}{
		{"rev", "a", true},
		{"rev", "b", false},
		{"n", 1, true},
		{"n", "1", false},
		{"b", true, true},
		{"b", "true", false},
		{"z", nil, true},
		{"z", false, false},
		{"e", "", true},
		{"e", nil, false},
		{"esc", "é", true},
		{"missing", "a", false},
	}
	for _, c := range cases {
		key := "fast:" + c.field
		if err := s.Client().Set(t.Context(), s.Prefix()+key, raw, 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := s.Patch(t.Context(), key, all("c"), &store.Condition{Field: c.field, Value: c.value})
		got, _ := s.Client().Get(t.Context(), s.Prefix()+key).Result()
		if c.ok {
			if err != nil {
				t.Errorf("Patch of every member with %s == %#v: %v", c.field, c.value, err)
			}
			doc, err := s.Get(t.Context(), key)
			want := map[string]any{"rev": "c", "n": 2.0, "b": false, "z": nil, "e": "x", "esc": "é"}
			if err != nil || !reflect.DeepEqual(doc, want) {
				t.Errorf("after a Patch of every member: %v (%v), want %v", doc, err, want)
			}
			continue
		}
		if !errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("Patch of every member with %s == %#v: got %v, want ErrConditionFailed", c.field, c.value, err)
		}
		if c.field == "missing" && (err == nil || !strings.Contains(err.Error(), `no field "missing"`)) {
			t.Errorf("condition on a missing field: %v", err)
		}
		if got != raw {
			t.Errorf("failed Patch with %s == %#v changed the document to %s", c.field, c.value, got)
		}
		if err := s.Delete(t.Context(), key, &store.Condition{Field: c.field, Value: c.value}); !errors.Is(err, store.ErrConditionFailed) {
			t.Errorf("Delete with %s == %#v: got %v, want ErrConditionFailed", c.field, c.value, err)
		}
	}

	// Documents cjson reads and the scanner refuses are not JSON to the store, fast path or not.
	for i, bad := range []string{`{"rev":"a","n":0x10}`, `{"rev":"a","n":NaN}`, `{"rev":"a","n":Infinity}`, `{"rev":"a","n":-Infinity}`} {
		key := fmt.Sprintf("fastbad:%d", i)
		if err := s.Client().Set(t.Context(), s.Prefix()+key, bad, 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := s.Patch(t.Context(), key, map[string]any{"rev": "b", "n": 1}, &store.Condition{Field: "rev", Value: "a"})
		if !errors.Is(err, ErrNotJSON) {
			t.Errorf("Patch of %s: got %v, want ErrNotJSON", bad, err)
		}
		if err := s.Delete(t.Context(), key, &store.Condition{Field: "rev", Value: "a"}); !errors.Is(err, ErrNotJSON) {
			t.Errorf("Delete of %s: got %v, want ErrNotJSON", bad, err)
		}
		if got, _ := s.Client().Get(t.Context(), s.Prefix()+key).Result(); got != bad {
			t.Errorf("%s changed to %s", bad, got)
		}
	}
}
