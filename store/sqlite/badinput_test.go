package sqlite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/foreigndoc"
	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/storetest"
)

// TestBadURL: parameters are checked, and errors name them.
func TestBadURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	storetest.BadURLs(t, "", map[string]string{
		"sqlite://relative/file.db":                   "absolute",
		"sqlite:relative.db":                          "absolute",
		"sqlite://" + dir + "/x.db?table=bad-name":    "table",
		"sqlite://" + dir + "/x.db?busy_timeout=soon": "busy_timeout",
		"sqlite://" + dir + "/x.db?synchronous=OFF":   "synchronous",
		"sqlite://" + dir + "/x.db?max_open_conns=0":  "max_open_conns",
		"sqlite://" + dir + "/x.db?tabel=t":           "tabel",
		"sqlite://" + dir + "/missing/dir/x.db":       "missing/dir/x.db",
		"postgres://" + dir + "/x.db":                 "scheme",
	}, func(ctx context.Context, raw string) (store.Store, error) { return Open(ctx, raw) })
}

// TestNotADatabase: a file that is not an SQLite database is an error naming it, and is left
// as it is.
func TestNotADatabase(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "text.db")
	writeFile(t, path, strings.Repeat("not a database\n", 100))
	if s, err := Open(t.Context(), "sqlite://"+path); err == nil {
		s.Close()
		t.Fatal("Open of a text file succeeded")
	} else {
		t.Log(err)
		if !strings.Contains(err.Error(), path) {
			t.Errorf("error does not name the file: %v", err)
		}
	}
	if got := readFile(t, path); got != strings.Repeat("not a database\n", 100) {
		t.Error("the file was changed")
	}
}

// TestRowNotAnObject: rows written by another program that are not JSON objects, or not JSON at
// all, give errors naming the key, and no operation but an unconditional Delete changes them.
func TestRowNotAnObject(t *testing.T) {
	t.Parallel()
	s := openTest(t, "")
	ctx := t.Context()
	db := rawDB(t, s.Path())
	rows := map[string]string{"array": `[1, 2]`, "string": `"text"`, "number": `7`, "null": `null`, "garbage": `{"a": 1`, "empty": ``}
	for key, raw := range rows {
		if _, err := db.ExecContext(ctx, `INSERT INTO "`+s.Table()+`" (id, doc) VALUES (?, ?)`, key, raw); err != nil {
			t.Fatal(err)
		}
	}
	for key, raw := range rows {
		foreigndoc.Row(t, s, key, 1)
		var got string
		if err := db.QueryRowContext(ctx, `SELECT doc FROM "`+s.Table()+`" WHERE id = ?`, key).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != raw {
			t.Errorf("the %s row was changed to %s", key, got)
		}
		if err := s.Delete(ctx, key, nil); err != nil {
			t.Errorf("unconditional Delete of the %s row: %v", key, err)
		}
	}
}
