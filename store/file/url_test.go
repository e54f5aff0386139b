package file

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// T4: file:///absolute/path opens a file store.
func TestOpenURL(t *testing.T) {
	dir := t.TempDir()
	for _, raw := range []string{
		"file://" + filepath.Join(dir, "a.json"),
		"file://localhost" + filepath.Join(dir, "b.json"),
		"FILE://" + filepath.Join(dir, "c.json"),
	} {
		s, err := store.Open(t.Context(), raw)
		if err != nil {
			t.Fatalf("store.Open(%q): %v", raw, err)
		}
		fs, ok := s.(*Store)
		if !ok {
			t.Fatalf("store.Open(%q) returned a %T", raw, s)
		}
		if err := fs.Create(t.Context(), "k", map[string]any{}); err != nil {
			t.Fatal(err)
		}
		if err := store.Close(s); err != nil {
			t.Fatal(err)
		}
	}
	if got := fileDocs(t, filepath.Join(dir, "b.json")); got["k"] == nil {
		t.Fatalf("file:// URL wrote elsewhere: %v", got)
	}
}

// T4: a URL that does not name an absolute file is an error naming the URL, with any password
// hidden.
func TestOpenURLErrors(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ url, names, says string }{
		{"file://", "file://", "no file path"},
		{"file:///", "file:///", "no file path"},
		{"file:relative.json", "file:relative.json", "relative path"},
		{"file://relative/store.json", "file://relative/store.json", `host "relative"`},
		{"file://" + dir + "/", "file://" + dir + "/", "names a directory"},
		{"file://" + dir + "/s.json?mode=fast", "file://" + dir + "/s.json?mode=fast", "query parameters"},
		{"file://" + dir + "/s.json#x", "file://" + dir + "/s.json#x", "fragment"},
		{"file://u:hunter2@" + dir + "/s.json", "file://u:xxxxx@" + dir + "/s.json", "user information"},
		{"file://" + dir + "/missing/s.json", "file://" + dir + "/missing/s.json", "no such file or directory"},
	}
	for _, tc := range cases {
		// Named by what they check: a URL in a test name would show the password.
		t.Run(tc.says, func(t *testing.T) {
			s, err := store.Open(t.Context(), tc.url)
			if err == nil {
				store.Close(s)
				t.Fatal("store.Open succeeded")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.names) || !strings.Contains(msg, tc.says) {
				t.Errorf("error %q does not name %q and say %q", msg, tc.names, tc.says)
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error %q shows the password", msg)
			}
		})
	}
}
