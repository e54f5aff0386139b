package s3

import (
	"strings"
	"testing"
)

// TestEncodeKey: keys map reversibly onto names of letters, digits, '-' and '_' escapes, and
// distinct keys onto distinct names.
func TestEncodeKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"cluster:leader": "cluster_3Aleader",
		"a/b.c_d":        "a_2Fb_2Ec_5Fd",
		"..":             "_2E_2E",
		"é":              "_C3_A9",
		"Plain-Key09":    "Plain-Key09",
	} {
		if got := EncodeKey(key); got != want {
			t.Errorf("EncodeKey(%q) = %q, want %q", key, got, want)
		}
	}
	seen := map[string]string{}
	for _, key := range []string{"a", "A", "_", "_5F", "a b", "a_20b", "\x00", "😀", strings.Repeat("/", 3), "x.", "x_2E"} {
		name := EncodeKey(key)
		if other, ok := seen[name]; ok {
			t.Errorf("%q and %q both encode to %q", key, other, name)
		}
		seen[name] = key
		back, err := DecodeKey(name)
		if err != nil || back != key {
			t.Errorf("DecodeKey(EncodeKey(%q)) = %q, %v", key, back, err)
		}
	}
	for _, bad := range []string{"_", "_4", "_zz", "_4a", "a.b", "a/b"} {
		if _, err := DecodeKey(bad); err == nil {
			t.Errorf("DecodeKey(%q) succeeded", bad)
		}
	}
}
