package file

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// newPath returns the path of a data file in a new empty directory.
func newPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "store.json")
}

// mustOpen opens the store at path and closes it when the test ends.
func mustOpen(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// readFile returns the data file's bytes.
func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fileDocs parses the data file independently of the store's code.
func fileDocs(t testing.TB, path string) map[string]map[string]any {
	t.Helper()
	var m map[string]map[string]any
	if err := json.Unmarshal(readFile(t, path), &m); err != nil {
		t.Fatalf("data file %s is not valid: %v\n%s", path, err, readFile(t, path))
	}
	return m
}

// temps lists the temporary files beside path.
func temps(t testing.TB, path string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), filepath.Base(path)+tempInfix) {
			out = append(out, e.Name())
		}
	}
	return out
}

// wantUnchanged fails when the file at path no longer holds want.
func wantUnchanged(t testing.TB, path string, want []byte) {
	t.Helper()
	if got := readFile(t, path); !bytes.Equal(got, want) {
		t.Errorf("T6: %s was modified:\nbefore: %q\nafter:  %q", path, want, got)
	}
}
