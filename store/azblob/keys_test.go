package azblob

import (
	"strings"
	"testing"
)

// TestDecodeKeyLax: DecodeKey takes a byte EncodeKey never writes as itself, and hex digits in
// either case; it leaves blobSuffix in place, as no part of an escaped key; its errors name the
// package and the key.
func TestDecodeKeyLax(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]string{
		"a=3a":           "a:",
		"a=3A":           "a:",
		"a.b/c":          "a.b/c",
		"k" + blobSuffix: "k" + blobSuffix,
		"k=2Ejson":       "k.json",
	} {
		if got, err := DecodeKey(k); err != nil || got != want {
			t.Errorf("DecodeKey(%q) = %q, %v, want %q", k, got, err, want)
		}
	}
	if EncodeKey("k.json") == "k"+blobSuffix || strings.Contains(EncodeKey("k.json"), ".") {
		t.Errorf("EncodeKey(%q) = %q", "k.json", EncodeKey("k.json"))
	}
	if _, err := DecodeKey("a=Z"); err == nil || !strings.Contains(err.Error(), "store/azblob") || !strings.Contains(err.Error(), `"a=Z"`) {
		t.Errorf("DecodeKey(%q): error %v", "a=Z", err)
	}
}
