package storetest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
)

type point struct {
	X      int     `json:"x"`
	Y      float64 `json:"y,omitempty"`
	Hidden string  `json:"-"`
	Label  string
}

// roundTripCases are documents that must read back as encoding/json decodes them.
func roundTripCases() []struct {
	name string
	doc  map[string]any
} {
	return []struct {
		name string
		doc  map[string]any
	}{
		{"Strings", map[string]any{
			"empty":   "",
			"ascii":   "hello",
			"unicode": "héllo wörld ✓ 日本語 😀",
			"escapes": "quote \" backslash \\ slash / tab \t newline \n",
			"control": "bell \a escape \x1b delete \x7f",
			"html":    "<a href=\"x\">&amp;</a>",
			"spaces":  "  padded  ",
		}},
		{"Numbers", map[string]any{
			"zero":     0,
			"int":      42,
			"negative": -17,
			"float":    3.25,
			"negFloat": -0.5,
			"tenth":    0.1,
			"2^53":     int64(1) << 53,
			"-2^53":    -(int64(1) << 53),
			"huge":     1.5e300,
			"tiny":     5e-324,
			"max":      math.MaxFloat64,
			"int32":    int32(-7),
			"uint8":    uint8(200),
			"float32":  float32(0.5),
		}},
		// encoding/json writes NUL as \u0000, which some JSON column types (PostgreSQL's jsonb)
		// refuse: such a store must keep documents in another form.
		{"StringNUL", map[string]any{"nul": "a\x00b"}},
		// encoding/json replaces each invalid byte with U+FFFD.
		{"InvalidUTF8", map[string]any{"bad": "a\xffb\xc3", "key\xfe": "v"}},
		{"Booleans", map[string]any{"yes": true, "no": false}},
		{"Null", map[string]any{"nothing": nil, "other": "x"}},
		{"Nested", map[string]any{
			"object": map[string]any{
				"a": 1,
				"b": map[string]any{"c": []any{1, "two", map[string]any{"three": 3.0}}, "d": nil},
			},
			"emptyObject": map[string]any{},
		}},
		{"Arrays", map[string]any{
			"numbers":    []any{1, 2.5, -3},
			"mixed":      []any{"a", 1, true, nil, map[string]any{"k": "v"}, []any{}},
			"nested":     []any{[]any{1, 2}, []any{[]any{3}}},
			"empty":      []any{},
			"ordered":    []any{"z", "a", "m"},
			"typedSlice": []string{"x", "y"},
			"typedInts":  []int{3, 1, 2},
		}},
		{"EmptyDocument", map[string]any{}},
		{"GoTypes", map[string]any{
			"struct":    point{X: 1, Hidden: "not stored", Label: "p"},
			"pointer":   &point{X: 2, Y: 0.5},
			"nilPtr":    (*point)(nil),
			"typedMap":  map[string]int{"one": 1},
			"time":      time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC),
			"duration":  1500 * time.Millisecond,
			"bytes":     []byte("raw"),
			"nilSlice":  []any(nil),
			"nilMap":    map[string]any(nil),
			"nilString": []string(nil),
		}},
		{"LargeString", map[string]any{"large": strings.Repeat("0123456789abcdef", 1024)}},
		{"ManyFields", manyFields()},
	}
}

func manyFields() map[string]any {
	doc := map[string]any{}
	for i := range 100 {
		doc[strings.Repeat("f", i%7+1)+string(rune('a'+i%26))+string(rune('0'+i/26))] = i
	}
	return doc
}

func (s *suite) roundTrip(t *testing.T) {
	for _, c := range roundTripCases() {
		t.Run("Create/"+c.name, s.run(func(t *testing.T, st store.Store, key string) {
			mustCreate(t, st, key, c.doc)
			wantDoc(t, st, key, c.doc)
		}))
		// A patch writes values through another path in most stores (an UPDATE, a merge), so
		// the same values must survive it too.
		t.Run("Patch/"+c.name, s.run(func(t *testing.T, st store.Store, key string) {
			mustCreate(t, st, key, map[string]any{"before": "kept"})
			if err := st.Patch(t.Context(), key, c.doc, nil); err != nil {
				t.Fatalf("Patch(%q): %v", key, err)
			}
			want := map[string]any{"before": "kept"}
			for k, v := range c.doc {
				want[k] = v
			}
			wantDoc(t, st, key, want)
		}))
	}
	t.Run("GetReturnsCopy", s.run(testGetReturnsCopy))
	t.Run("CreateCopiesInput", s.run(testCreateCopiesInput))
	t.Run("PatchCopiesInput", s.run(testPatchCopiesInput))
}

func nestedDoc() map[string]any {
	return map[string]any{
		"name":   "n",
		"object": map[string]any{"a": "x", "inner": map[string]any{"b": 1.0}},
		"array":  []any{"first", map[string]any{"c": true}},
	}
}

// mutate changes every level of a document made by nestedDoc.
func mutate(doc map[string]any) {
	doc["name"] = "changed"
	doc["added"] = 1.0
	if o, ok := doc["object"].(map[string]any); ok {
		o["a"] = "changed"
		if in, ok := o["inner"].(map[string]any); ok {
			in["b"] = 2.0
		}
	}
	if a, ok := doc["array"].([]any); ok && len(a) == 2 {
		a[0] = "changed"
		if m, ok := a[1].(map[string]any); ok {
			m["c"] = false
		}
	}
}

func testGetReturnsCopy(t *testing.T, st store.Store, key string) {
	mustCreate(t, st, key, nestedDoc())
	mutate(mustGet(t, st, key))
	wantDoc(t, st, key, nestedDoc())
}

func testCreateCopiesInput(t *testing.T, st store.Store, key string) {
	doc := nestedDoc()
	mustCreate(t, st, key, doc)
	mutate(doc)
	wantDoc(t, st, key, nestedDoc())
}

func testPatchCopiesInput(t *testing.T, st store.Store, key string) {
	mustCreate(t, st, key, map[string]any{"k": "v"})
	fields := nestedDoc()
	if err := st.Patch(t.Context(), key, fields, nil); err != nil {
		t.Fatalf("Patch(%q): %v", key, err)
	}
	mutate(fields)
	want := nestedDoc()
	want["k"] = "v"
	wantDoc(t, st, key, want)
}
