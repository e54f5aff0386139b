package postgres

import (
	"reflect"
	"testing"
)

// TestEscapeString: the jsonb escape is one-to-one, leaves other strings alone, and is undone.
func TestEscapeString(t *testing.T) {
	cases := []string{"", "plain", "a\x00b", "\x00", "\uE000", "\uE0000", "\uE000\uE000", "\x00\uE000\x000", "é✓\x00"}
	seen := map[string]string{}
	for _, s := range cases {
		e := escapeString(s)
		if prev, dup := seen[e]; dup {
			t.Errorf("%q and %q escape to the same %q", prev, s, e)
		}
		seen[e] = s
		for _, r := range e {
			if r == 0 {
				t.Errorf("escapeString(%q) = %q still holds NUL", s, e)
			}
		}
		if got := unescapeString(e); got != s {
			t.Errorf("unescapeString(escapeString(%q)) = %q", s, got)
		}
	}
	if escapeString("plain") != "plain" {
		t.Error("a string without NUL or U+E000 changed")
	}
}

// TestEscapeValue: keys and nested strings are escaped, and unescaping restores the value.
func TestEscapeValue(t *testing.T) {
	orig := func() map[string]any {
		return map[string]any{"k\x00": []any{"v\x00", map[string]any{"\uE000": "x"}}, "n": 1.0}
	}
	e := escapeValue(orig()).(map[string]any)
	if _, ok := e["k\uE0000"]; !ok {
		t.Fatalf("key not escaped: %#v", e)
	}
	if got := unescapeValue(e); !reflect.DeepEqual(got, orig()) {
		t.Errorf("round trip: %#v, want %#v", got, orig())
	}
}
