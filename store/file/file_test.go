package file

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

func TestOpenCreatesDataFileOnFirstWrite(t *testing.T) {
	path := newPath(t)
	s := mustOpen(t, path)
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("Open did not create the lock file: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("data file before the first write: %v, want it absent", err)
	}
	if _, err := s.Get(t.Context(), "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get on a new store: %v, want ErrNotFound", err)
	}
	if err := s.Create(t.Context(), "k", map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if got := fileDocs(t, path); !driver.JSONEqual(got, map[string]any{"k": map[string]any{"a": 1}}) {
		t.Fatalf("data file holds %v", got)
	}
}

// The format is part of the contract with people who read the file: one key per line, sorted.
func TestFileFormat(t *testing.T) {
	path := newPath(t)
	s := mustOpen(t, path)
	ctx := t.Context()
	for _, k := range []string{"b", "a", "c"} {
		if err := s.Create(ctx, k, map[string]any{"k": k, "n": 1}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "c", nil); err != nil {
		t.Fatal(err)
	}
	want := "{\n\"a\": {\"k\":\"a\",\"n\":1},\n\"b\": {\"k\":\"b\",\"n\":1}\n}\n"
	if got := string(readFile(t, path)); got != want {
		t.Fatalf("file content:\n%s\nwant:\n%s", got, want)
	}
	if err := s.Delete(ctx, "a", nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "b", nil); err != nil {
		t.Fatal(err)
	}
	if got := string(readFile(t, path)); got != "{\n}\n" {
		t.Fatalf("file content of an emptied store: %q", got)
	}
}

func TestReopenReadsBack(t *testing.T) {
	path := newPath(t)
	ctx := t.Context()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "k", map[string]any{"n": 1, "s": "x"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Patch(ctx, "k", map[string]any{"n": 2}, &store.Condition{Field: "n", Value: 1}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := mustOpen(t, path).Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if !driver.JSONEqual(got, map[string]any{"n": 2, "s": "x"}) {
		t.Fatalf("after reopening: %v", got)
	}
}

// T6: two stores on one file, as two processes would have, each see the other's writes at
// once, whatever copy of the file they keep.
func TestTwoStoresOneFile(t *testing.T) {
	path := newPath(t)
	a, b := mustOpen(t, path), mustOpen(t, path)
	ctx := t.Context()
	if err := a.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n < 5; n++ {
		// Same size each time: only the store's version check tells the files apart.
		got, err := b.Get(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if got["n"] != float64(n) {
			t.Fatalf("b read n=%v, want %d", got["n"], n)
		}
		if err := a.Patch(ctx, "k", map[string]any{"n": n + 1}, &store.Condition{Field: "n", Value: n}); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Create(ctx, "k", map[string]any{}); !errors.Is(err, store.ErrExists) {
		t.Fatalf("b.Create of a's key: %v, want ErrExists", err)
	}
	if err := b.Delete(ctx, "k", &store.Condition{Field: "n", Value: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Get(ctx, "k"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a.Get after b.Delete: %v, want ErrNotFound", err)
	}
}

// The parsed copy is reused only while the generation in the lock file is unchanged: a writer
// that bumps it invalidates every copy, even when the data file looks the same (same size,
// time and inode number, as when a freed inode number is reused at once).
func TestGenerationInvalidatesCopy(t *testing.T) {
	path := newPath(t)
	a, b := mustOpen(t, path), mustOpen(t, path)
	ctx := t.Context()
	if err := a.Create(ctx, "k", map[string]any{"v": "aaaa"}); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "k"); err != nil || got["v"] != "aaaa" {
		t.Fatalf("b.Get: %v, %v", got, err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite in place: same inode, same size, and the old modification time restored.
	rewrite := func(v string) {
		t.Helper()
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write([]byte("{\n\"k\": {\"v\":\"" + v + "\"}\n}\n")); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	rewrite("bbbb")
	// Without a generation bump the copy is trusted: this shows the copy is in use at all.
	if got, err := b.Get(ctx, "k"); err != nil || got["v"] != "aaaa" {
		t.Fatalf("b.Get after an unannounced rewrite: %v, %v; want the kept copy (aaaa)", got, err)
	}
	rewrite("cccc")
	gen, err := readGen(a.b.lock)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeGen(a.b.lock, gen+1); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "k"); err != nil || got["v"] != "cccc" {
		t.Fatalf("b.Get after a generation bump: %v, %v; want cccc", got, err)
	}
}

func TestClose(t *testing.T) {
	s, err := Open(newPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	ctx := t.Context()
	errs := map[string]error{
		"Create": s.Create(ctx, "k", map[string]any{}),
		"Patch":  s.Patch(ctx, "k", map[string]any{}, nil),
		"Delete": s.Delete(ctx, "k", nil),
	}
	_, errs["Get"] = s.Get(ctx, "k")
	for op, err := range errs {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", op, err)
		}
	}
}

// An operation waiting for another process's lock gives up when its context ends.
func TestLockWaitHonoursContext(t *testing.T) {
	path := newPath(t)
	s := mustOpen(t, path)
	holder := mustOpen(t, path)
	if err := holder.b.lockFile(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	err := s.Create(ctx, "k", map[string]any{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Create while another store holds the lock: %v, want DeadlineExceeded", err)
	}
	holder.b.unlockFile()
	if err := s.Create(t.Context(), "k", map[string]any{}); err != nil {
		t.Fatalf("Create once the lock is free: %v", err)
	}
}

// Rewrites keep the data file's permissions.
func TestPermissionsKept(t *testing.T) {
	path := newPath(t)
	s := mustOpen(t, path)
	ctx := t.Context()
	if err := s.Create(ctx, "a", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := s.Create(ctx, "b", map[string]any{}); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode after a rewrite: %v, want 0640", fi.Mode().Perm())
	}
}

// A lock file removed while stores are open is recreated, and the stores lock the new one.
func TestLockFileRemoved(t *testing.T) {
	path := newPath(t)
	a, b := mustOpen(t, path), mustOpen(t, path)
	ctx := t.Context()
	if err := a.Create(ctx, "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(path + ".lock"); err != nil {
		t.Fatal(err)
	}
	if err := a.Patch(ctx, "k", map[string]any{"n": 2}, &store.Condition{Field: "n", Value: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".lock"); err != nil {
		t.Fatalf("lock file not recreated: %v", err)
	}
	if got, err := b.Get(ctx, "k"); err != nil || got["n"] != 2.0 {
		t.Fatalf("b.Get: %v, %v", got, err)
	}
	// Both stores now hold the new lock file: one excludes the other.
	if err := a.b.lockFile(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	defer a.b.unlockFile()
	tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if err := b.Create(tctx, "x", map[string]any{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("b.Create while a holds the recreated lock: %v, want DeadlineExceeded", err)
	}
}

// T6: the temporary file of a crashed writer is never read, and Open removes it (but not the
// temporary files of other data files in the directory).
func TestOpenRemovesStaleTemporaryFiles(t *testing.T) {
	path := newPath(t)
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	stale := path + tempInfix + "99999-0123456789ab"
	other := path + "2" + tempInfix + "1-x"
	for _, p := range []string{stale, other} {
		if err := os.WriteFile(p, []byte(`{"k": {"n": 666}`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := mustOpen(t, path).Get(t.Context(), "k")
	if err != nil || got["n"] != 1.0 {
		t.Fatalf("Get: %v, %v", got, err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale temporary file still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Errorf("another store's temporary file was removed: %v", err)
	}
}

// A data file reached through a symbolic link stays a link: writes go to its target.
func TestSymlinkedDataFile(t *testing.T) {
	dir := t.TempDir()
	target, link := filepath.Join(dir, "target.json"), filepath.Join(dir, "link.json")
	if err := os.WriteFile(target, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, link)
	if err := s.Create(t.Context(), "k", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("link after a write: %v, %v", fi, err)
	}
	if got := fileDocs(t, target); got["k"]["n"] != 1.0 {
		t.Fatalf("target holds %v", got)
	}
	if s.Path() != target {
		t.Errorf("Path() = %q, want %q", s.Path(), target)
	}
}
