package sqlite

import (
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// fileURL returns the URL of a database file in a new temporary directory of the test.
func fileURL(t testing.TB, params string) string {
	t.Helper()
	u := "sqlite://" + filepath.ToSlash(filepath.Join(tempDir(t), "registry.db"))
	if params != "" {
		u += "?" + params
	}
	return u
}

// tempDir is t.TempDir for a database's directory, removed once the test's cleanups have run.
// database/sql's Close does not wait for a connection its opener goroutine is still making:
// that connection, closed at once, creates and removes the -wal and -shm files after Close has
// returned, and t.TempDir's single RemoveAll can then fail with "directory not empty". The
// removal is tried again while files appear, for at most 5s.
func tempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "leasehold-sqlite-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			err := os.RemoveAll(dir)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("removing %s: %v", dir, err)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	return dir
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
