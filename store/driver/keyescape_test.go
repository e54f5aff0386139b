package driver

import (
	"strings"
	"testing"
	"testing/quick"
)

func alnumDash(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

var (
	laxEscaper    = KeyEscaper{Mark: '=', Keep: alnumDash, Prefix: "store/x: key"}
	strictEscaper = KeyEscaper{Mark: '_', Keep: alnumDash, Strict: true, Prefix: "store/y: object name"}
)

func TestKeyEscaperEscape(t *testing.T) {
	t.Parallel()
	for key, want := range map[string]string{
		"":          "",
		"Plain-09":  "Plain-09",
		"a:b":       "a=3Ab",
		"=":         "=3D",
		"_":         "=5F",
		"é":         "=C3=A9",
		"\x00\xff ": "=00=FF=20",
	} {
		if got := laxEscaper.Escape(key); got != want {
			t.Errorf("Escape(%q) = %q, want %q", key, got, want)
		}
	}
	if got := strictEscaper.Escape("a_b.c"); got != "a_5Fb_2Ec" {
		t.Errorf("Escape(%q) = %q with mark '_'", "a_b.c", got)
	}
}

// TestKeyEscaperRoundTrip: on random keys, a name holds only kept bytes and marks, and
// unescapes to its key, strict or not.
func TestKeyEscaperRoundTrip(t *testing.T) {
	t.Parallel()
	for _, e := range []KeyEscaper{laxEscaper, strictEscaper} {
		f := func(b []byte) bool {
			key := string(b)
			name := e.Escape(key)
			for i := 0; i < len(name); i++ {
				if name[i] != e.Mark && !e.Keep(name[i]) {
					return false
				}
			}
			back, err := e.Unescape(name)
			return err == nil && back == key
		}
		if err := quick.Check(f, &quick.Config{MaxCount: 3000}); err != nil {
			t.Errorf("mark %q: %v", e.Mark, err)
		}
	}
}

func TestKeyEscaperUnescape(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string // with the mark '=', which the strict escaper reads as '_'
		lax, strict string // the key; "!" for an error
	}{
		{name: "", lax: "", strict: ""},
		{name: "ab-9", lax: "ab-9", strict: "ab-9"},
		{name: "a=3Ab", lax: "a:b", strict: "a:b"},
		{name: "a=3ab", lax: "a:b", strict: "!"},     // lower-case digits
		{name: "a.b/c", lax: "a.b/c", strict: "!"},   // bytes neither kept nor a mark
		{name: "k.json", lax: "k.json", strict: "!"}, // no suffix is dropped
		{name: "=", lax: "!", strict: "!"},           // truncated
		{name: "a=4", lax: "!", strict: "!"},         // truncated
		{name: "=ZZ", lax: "!", strict: "!"},         // not hex
		{name: "=+1", lax: "!", strict: "!"},         // a sign is no digit
		{name: "=-1", lax: "!", strict: "!"},         // nor a dash
		{name: "=3A=C3=A9", lax: ":é", strict: ":é"},
	} {
		for _, run := range []struct {
			e    KeyEscaper
			name string
			want string
		}{
			{laxEscaper, c.name, c.lax},
			{strictEscaper, strings.ReplaceAll(c.name, "=", "_"), c.strict},
		} {
			got, err := run.e.Unescape(run.name)
			switch {
			case run.want == "!" && err == nil:
				t.Errorf("Strict %v: Unescape(%q) = %q, want an error", run.e.Strict, run.name, got)
			case run.want == "!":
				if !strings.HasPrefix(err.Error(), run.e.Prefix+" ") || !strings.Contains(err.Error(), `"`+run.name+`"`) {
					t.Errorf("Strict %v: Unescape(%q): error %q names neither the package nor the name", run.e.Strict, run.name, err)
				}
			case err != nil || got != run.want:
				t.Errorf("Strict %v: Unescape(%q) = %q, %v, want %q", run.e.Strict, run.name, got, err, run.want)
			}
		}
	}
}
