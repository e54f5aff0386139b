package nats

import (
	"regexp"
	"strings"
	"testing"
	"testing/quick"
)

// natsKey is what NATS accepts as a key: its characters, and no empty token.
var natsKey = regexp.MustCompile(`^[-/_=.a-zA-Z0-9]+$`)

func validNATSKey(k string) bool {
	return natsKey.MatchString(k) && !strings.HasPrefix(k, ".") && !strings.HasSuffix(k, ".") && !strings.Contains(k, "..")
}

func TestEncodeKey(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"cluster:leader": "cluster=3Aleader",
		"a/b-c":          "a/b-c",
		"a.b_c=d":        "a=2Eb=5Fc=3Dd",
		"é":              "=C3=A9",
		" ":              "=20",
		"..":             "=2E=2E",
	} {
		if got := EncodeKey(key); got != want {
			t.Errorf("EncodeKey(%q) = %q, want %q", key, got, want)
		}
	}
}

// TestEncodeKeyRoundTrip checks, on random keys, that encoded keys are valid NATS keys and
// decode back to the key, so two keys never share a NATS key.
func TestEncodeKeyRoundTrip(t *testing.T) {
	t.Parallel()
	f := func(key string) bool {
		if key == "" {
			return true
		}
		enc := EncodeKey(key)
		dec, err := DecodeKey(enc)
		return validNATSKey(enc) && err == nil && dec == key
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
	if err := quick.Check(func(b []byte) bool { return f(string(b)) }, &quick.Config{MaxCount: 5000}); err != nil {
		t.Error(err)
	}
}

func TestDecodeKeyErrors(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"a=", "a=4", "a=ZZ"} {
		if _, err := DecodeKey(k); err == nil {
			t.Errorf("DecodeKey(%q) succeeded", k)
		}
	}
}

// TestDecodeKeyLax: DecodeKey takes a byte EncodeKey never writes as itself, and hex digits in
// either case; its errors name the package and the key.
func TestDecodeKeyLax(t *testing.T) {
	t.Parallel()
	for k, want := range map[string]string{"a=3a": "a:", "a=3A": "a:", "a.b_c": "a.b_c", "%41": "%41"} {
		if got, err := DecodeKey(k); err != nil || got != want {
			t.Errorf("DecodeKey(%q) = %q, %v, want %q", k, got, err, want)
		}
	}
	if _, err := DecodeKey("a=Z"); err == nil || !strings.Contains(err.Error(), "store/nats") || !strings.Contains(err.Error(), `"a=Z"`) {
		t.Errorf("DecodeKey(%q): error %v", "a=Z", err)
	}
}
