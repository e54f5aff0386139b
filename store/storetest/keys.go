package storetest

import (
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

func (s *suite) keys(t *testing.T) {
	t.Run("Unusual", s.run(testUnusualKeys))
	t.Run("Distinct", s.run(testDistinctKeys))
}

// testUnusualKeys: a key is any non-empty string (lease names come from configuration), so a
// store that maps keys onto a restricted alphabet (NATS subjects, file names) must encode them.
func testUnusualKeys(t *testing.T, st store.Store, base string) {
	suffixes := []string{
		":colon:separated",
		"/slash/separated/",
		".dots..",
		" spaces  inside ",
		"-é✓日本😀",
		"%2F%25%",
		`\back"quote'`,
		"*?[glob]{x}",
		"#hash&amp=1",
		"\ttab",
		"+plus=equals",
		strings.Repeat("L", 120),
	}
	for i, suffix := range suffixes {
		key := base + suffix
		mustCreate(t, st, key, map[string]any{"i": i})
		wantDoc(t, st, key, map[string]any{"i": i})
		if err := st.Patch(t.Context(), key, map[string]any{"p": true}, &store.Condition{Field: "i", Value: i}); err != nil {
			t.Errorf("Patch(%q): %v", key, err)
		}
		wantDoc(t, st, key, map[string]any{"i": i, "p": true})
	}
	for i, suffix := range suffixes {
		key := base + suffix
		if err := st.Delete(t.Context(), key, &store.Condition{Field: "i", Value: i}); err != nil {
			t.Errorf("Delete(%q): %v", key, err)
		}
		wantMissing(t, st, key)
	}
}

// testDistinctKeys: keys are compared byte for byte; case- or accent-insensitive collations,
// trailing-space padding and prefix matching must not merge keys.
func testDistinctKeys(t *testing.T, st store.Store, base string) {
	keys := []string{
		base + ":key",
		base + ":KEY",
		base + ":Key",
		base + ":kéy",
		base + ":key ",
		base + ":key:child",
		base + ":ke",
		base + ":key*",
		base + ":key\u00a0",
	}
	for i, key := range keys {
		if err := st.Create(t.Context(), key, map[string]any{"i": i}); err != nil {
			t.Errorf("Create(%q) with %d similar keys already stored: %v", key, i, err)
		}
	}
	for i, key := range keys {
		wantDoc(t, st, key, map[string]any{"i": i})
	}
	if err := st.Delete(t.Context(), keys[0], nil); err != nil {
		t.Fatalf("Delete(%q): %v", keys[0], err)
	}
	wantMissing(t, st, keys[0])
	for i, key := range keys[1:] {
		wantDoc(t, st, key, map[string]any{"i": i + 1})
	}
}
