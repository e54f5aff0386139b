package sqlite

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/leasehold/leasehold/store"
)

func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// mode=ro creates nothing: a missing file is an error and stays missing; a missing table reads
// as no documents and is not created; writes fail; documents written by a read-write store,
// open at the same time, are read.
func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "registry.db")
	if s, err := Open(t.Context(), "sqlite://"+path+"?mode=ro"); err == nil {
		s.Close()
		t.Fatal("Open with mode=ro of a missing file succeeded")
	}
	if names := dirEntries(t, dir); len(names) != 0 {
		t.Fatalf("Open with mode=ro of a missing file created %v", names)
	}

	rw, err := Open(t.Context(), "sqlite://"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if err := rw.Create(t.Context(), "k", map[string]any{"a": 1.0}); err != nil {
		t.Fatal(err)
	}
	ro, err := Open(t.Context(), "sqlite://"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if doc, err := ro.Get(t.Context(), "k"); err != nil || doc["a"] != 1.0 {
		t.Errorf("read-only Get of a document written by a read-write store: %v, %v", doc, err)
	}
	if err := ro.Create(t.Context(), "k2", map[string]any{"a": 2.0}); err == nil {
		t.Error("read-only Create succeeded")
	}
	if err := ro.Patch(t.Context(), "k", map[string]any{"a": 3.0}, nil); err == nil {
		t.Error("read-only Patch succeeded")
	}
	if err := ro.Delete(t.Context(), "k", nil); err == nil {
		t.Error("read-only Delete succeeded")
	}

	other, err := Open(t.Context(), "sqlite://"+path+"?mode=ro&table=other")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Get(t.Context(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("read-only Get in a table nobody created: %v, want ErrNotFound", err)
	}
	var n int
	if err := rawDB(t, path).QueryRow(`SELECT count(*) FROM sqlite_master WHERE name = 'other'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the table of a read-only store: count %d, %v; want it not created", n, err)
	}

	// Over a file nobody has open, a read-only store changes nothing in it. Beside it, SQLite
	// creates the WAL's two files, as it does for any reader of a WAL database, and a reader
	// cannot remove them: that is all it leaves.
	ro.Close()
	other.Close()
	rw.Close()
	before, _ := os.ReadFile(path)
	ro2, err := Open(t.Context(), "sqlite://"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ro2.Get(t.Context(), "k"); err != nil {
		t.Error(err)
	}
	ro2.Close()
	if after, _ := os.ReadFile(path); string(after) != string(before) {
		t.Error("a read-only store changed the file")
	}
	if names := dirEntries(t, dir); !slices.Equal(names, []string{"registry.db", "registry.db-shm", "registry.db-wal"}) {
		t.Errorf("a read-only store left %v in the directory", names)
	}
}
