package driver_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// viaJSON is the reference Normalize must agree with: what encoding/json reads back.
func viaJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("json.Marshal(%#v): %v", v, err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

type tagged struct {
	A int    `json:"a"`
	B string `json:"b,omitempty"`
	C bool   `json:"-"`
}

func TestNormalizeMatchesEncodingJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
	}{
		{"nil", nil},
		{"string", "héllo ✓"},
		{"empty string", ""},
		{"bool", true},
		{"int", 42},
		{"negative int64", int64(-7)},
		{"2^53", int64(1) << 53},
		{"uint64", uint64(1) << 60},
		{"int32", int32(-3)},
		{"uint32", uint32(3)},
		{"int8", int8(-8)},
		{"uint16", uint16(16)},
		{"float32", float32(0.25)},
		{"float64", 0.1},
		{"json.Number", json.Number("12.5")},
		{"map", map[string]any{"a": 1, "b": []any{int8(2), "x"}}},
		{"empty map", map[string]any{}},
		{"empty slice", []any{}},
		{"typed map", map[string]int{"a": 1}},
		{"typed slice", []string{"a", "b"}},
		{"struct", tagged{A: 1, C: true}},
		{"pointer", &tagged{A: 2, B: "b"}},
		{"nil pointer", (*tagged)(nil)},
		{"time", time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"bytes", []byte{0, 1, 2}},
		// Regressions: Normalize kept these as they were, so the memory store returned what no
		// JSON-backed store can.
		{"nil map", map[string]any(nil)},
		{"nil slice", []any(nil)},
		{"nested nil map and slice", map[string]any{"m": map[string]any(nil), "s": []any(nil)}},
		{"invalid UTF-8", "a\xffb\xc3"},
		{"invalid UTF-8 in key", map[string]any{"k\xfe": "v"}},
		{"invalid UTF-8 in array", []any{"\xe2\x82"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := driver.Normalize(c.v)
			if err != nil {
				t.Fatalf("Normalize(%#v): %v", c.v, err)
			}
			if want := viaJSON(t, c.v); !reflect.DeepEqual(got, want) {
				t.Errorf("Normalize(%#v) = %#v, want %#v (as encoding/json decodes it)", c.v, got, want)
			}
		})
	}
}

func TestNormalizeInvalid(t *testing.T) {
	for _, c := range []struct {
		name string
		v    any
		want string // in the message
	}{
		{"NaN", math.NaN(), "NaN"},
		{"+Inf", math.Inf(1), "+Inf"},
		{"float32 -Inf", float32(math.Inf(-1)), "-Inf"},
		{"channel", make(chan int), "chan"},
		{"func", func() {}, "func"},
		{"complex", complex(1, 1), "complex"},
		{"bad json.Number", json.Number("x"), `"x"`},
		{"nested NaN names the field", map[string]any{"outer": map[string]any{"inner": math.NaN()}}, `"inner"`},
		{"NaN in array", []any{1, math.NaN()}, "NaN"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := driver.Normalize(c.v)
			if !errors.Is(err, store.ErrInvalid) {
				t.Fatalf("Normalize: %v, want ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("Normalize error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestNormalizeCopies(t *testing.T) {
	in := map[string]any{"m": map[string]any{"a": 1.0}, "s": []any{"x"}}
	out, err := driver.Normalize(in)
	if err != nil {
		t.Fatal(err)
	}
	in["m"].(map[string]any)["a"] = 2.0
	in["s"].([]any)[0] = "y"
	want := map[string]any{"m": map[string]any{"a": 1.0}, "s": []any{"x"}}
	if !reflect.DeepEqual(out, want) {
		t.Errorf("Normalize result changed with its input: %#v", out)
	}
}

func TestNormalizeDoc(t *testing.T) {
	if _, err := driver.NormalizeDoc(nil); !errors.Is(err, store.ErrInvalid) {
		t.Errorf("NormalizeDoc(nil) = %v, want ErrInvalid", err)
	}
	doc, err := driver.NormalizeDoc(map[string]any{"n": 1, "bad": math.NaN()})
	if !errors.Is(err, store.ErrInvalid) || !strings.Contains(err.Error(), `"bad"`) || doc != nil {
		t.Errorf("NormalizeDoc with NaN = %v, %v; want ErrInvalid naming the field", doc, err)
	}
	doc, err = driver.NormalizeDoc(map[string]any{})
	if err != nil || doc == nil || len(doc) != 0 {
		t.Errorf("NormalizeDoc(empty) = %#v, %v; want an empty non-nil document", doc, err)
	}
}

func TestCopyDoc(t *testing.T) {
	orig := map[string]any{"m": map[string]any{"a": 1.0}, "s": []any{map[string]any{"b": true}}, "n": nil}
	c := driver.CopyDoc(orig)
	if !reflect.DeepEqual(c, orig) {
		t.Fatalf("CopyDoc = %#v, want %#v", c, orig)
	}
	c["m"].(map[string]any)["a"] = 2.0
	c["s"].([]any)[0].(map[string]any)["b"] = false
	c["new"] = 1.0
	want := map[string]any{"m": map[string]any{"a": 1.0}, "s": []any{map[string]any{"b": true}}, "n": nil}
	if !reflect.DeepEqual(orig, want) {
		t.Errorf("changing the copy changed the original: %#v", orig)
	}
}

func TestJSONEqual(t *testing.T) {
	for _, c := range []struct {
		name string
		a, b any
		want bool
	}{
		{"1 == 1.0", 1, 1.0, true},
		{"int64 == float64", int64(1) << 53, float64(1 << 53), true},
		{"uint8 == int", uint8(7), 7, true},
		{"json.Number == float", json.Number("2.50"), 2.5, true},
		{`"1" != 1`, "1", 1, false},
		{`1 != "1"`, 1, "1", false},
		{"true != 1", true, 1, false},
		{"false != 0", false, 0, false},
		{`"" != nil`, "", nil, false},
		{"nil == nil", nil, nil, true},
		{"nil pointer == nil", (*int)(nil), nil, true},
		{"nested objects, key order", map[string]any{"a": 1, "b": map[string]any{"c": []any{1, 2}}}, map[string]any{"b": map[string]any{"c": []any{1.0, 2.0}}, "a": 1.0}, true},
		{"nested objects differ", map[string]any{"a": map[string]any{"c": 1}}, map[string]any{"a": map[string]any{"c": 2}}, false},
		{"subset object", map[string]any{"a": 1}, map[string]any{"a": 1, "b": 2}, false},
		{"null field vs missing field", map[string]any{"a": nil}, map[string]any{}, false},
		{"typed map == generic map", map[string]int{"a": 1}, map[string]any{"a": 1.0}, true},
		{"struct == map", tagged{A: 1}, map[string]any{"a": 1}, true},
		{"arrays equal", []any{1, "x", nil}, []any{1.0, "x", nil}, true},
		{"typed slice == []any", []int{1, 2}, []any{1.0, 2.0}, true},
		{"array order", []any{1, 2}, []any{2, 1}, false},
		{"array length", []any{1}, []any{1, 1}, false},
		{"empty array != null", []any{}, nil, false},
		{"empty object != null", map[string]any{}, nil, false},
		{"nil slice == null", []any(nil), nil, true},
		{"empty array != empty object", []any{}, map[string]any{}, false},
		{"NaN never equal", math.NaN(), math.NaN(), false},
		{"channel never equal", make(chan int), nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := driver.JSONEqual(c.a, c.b); got != c.want {
				t.Errorf("JSONEqual(%#v, %#v) = %v, want %v", c.a, c.b, got, c.want)
			}
			if got := driver.JSONEqual(c.b, c.a); got != c.want {
				t.Errorf("JSONEqual(%#v, %#v) = %v, want %v (not symmetric)", c.b, c.a, got, c.want)
			}
		})
	}
}

func TestMatches(t *testing.T) {
	doc, err := driver.NormalizeDoc(map[string]any{
		"n":     1,
		"s":     "1",
		"f":     false,
		"z":     0,
		"e":     "",
		"null":  nil,
		"obj":   map[string]any{"a": 1, "b": []any{"x"}},
		"arr":   []any{1, 2},
		"empty": map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		cond *store.Condition // as given to the Portable store, which normalizes its value
		want bool
	}{
		{"no condition", nil, true},
		{"1 == 1.0", &store.Condition{Field: "n", Value: 1.0}, true},
		{"int condition", &store.Condition{Field: "n", Value: 1}, true},
		{`"1" != 1`, &store.Condition{Field: "n", Value: "1"}, false},
		{`1 != "1"`, &store.Condition{Field: "s", Value: 1}, false},
		{"false applied and holds", &store.Condition{Field: "f", Value: false}, true},
		{"false applied and fails", &store.Condition{Field: "n", Value: false}, false},
		{"0 holds", &store.Condition{Field: "z", Value: 0}, true},
		{"0 is not false", &store.Condition{Field: "f", Value: 0}, false},
		{`"" holds`, &store.Condition{Field: "e", Value: ""}, true},
		{"null holds on null", &store.Condition{Field: "null", Value: nil}, true},
		{"null fails on missing", &store.Condition{Field: "missing", Value: nil}, false},
		{"false fails on missing", &store.Condition{Field: "missing", Value: false}, false},
		{`"" fails on missing`, &store.Condition{Field: "missing", Value: ""}, false},
		{"nested object", &store.Condition{Field: "obj", Value: map[string]any{"b": []string{"x"}, "a": 1}}, true},
		{"nested object differs", &store.Condition{Field: "obj", Value: map[string]any{"a": 1}}, false},
		{"array", &store.Condition{Field: "arr", Value: []int{1, 2}}, true},
		{"array order", &store.Condition{Field: "arr", Value: []int{2, 1}}, false},
		{"empty object is not null", &store.Condition{Field: "empty", Value: nil}, false},
		{"dotted field is not a path", &store.Condition{Field: "obj.a", Value: 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var cond *driver.Condition
			if c.cond != nil {
				v, err := driver.Normalize(c.cond.Value)
				if err != nil {
					t.Fatal(err)
				}
				cond = &driver.Condition{Field: c.cond.Field, Value: v}
			}
			if got := driver.Matches(doc, cond); got != c.want {
				t.Errorf("Matches(%v) = %v, want %v", c.cond, got, c.want)
			}
		})
	}
}
