package sqlite

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
)

// fileURL returns the URL of a database file in the test's temporary directory.
func fileURL(t testing.TB, params string) string {
	t.Helper()
	u := "sqlite://" + filepath.ToSlash(filepath.Join(t.TempDir(), "registry.db"))
	if params != "" {
		u += "?" + params
	}
	return u
}

// openTest opens a store on a new file, closed when the test ends.
func openTest(t testing.TB, params string) *Store {
	t.Helper()
	s, err := Open(t.Context(), fileURL(t, params))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawDB opens the store's file directly, for statements the store would not run.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
