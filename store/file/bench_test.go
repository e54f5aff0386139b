package file

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/store"
)

// benchStore returns a store holding a lease-like record under "counter" and 10 other
// documents. The file lives in TMPDIR: set it to measure another file system.
func benchStore(b *testing.B) *Store {
	s := mustOpen(b, newPath(b))
	ctx := b.Context()
	for i := range 10 {
		if err := s.Create(ctx, fmt.Sprintf("doc-%d", i), map[string]any{"holder": "host-1234-abcdef", "term": i, "revision": "r1"}); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Create(ctx, "counter", map[string]any{"n": 0, "holder": "host-1234-abcdef"}); err != nil {
		b.Fatal(err)
	}
	return s
}

// Get when no one wrote since the last read: the kept copy is used.
func BenchmarkGet(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, "counter"); err != nil {
			b.Fatal(err)
		}
	}
}

// Get when the file must be read and parsed again (as after another process's write).
func BenchmarkGetReparse(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	b.ReportAllocs()
	for b.Loop() {
		s.b.sem <- struct{}{}
		s.b.cache = snapshot{}
		<-s.b.sem
		if _, err := s.Get(ctx, "counter"); err != nil {
			b.Fatal(err)
		}
	}
}

// A conditional Patch: lock, check, write a temporary file, fsync, rename, fsync the directory.
func BenchmarkPatchConditional(b *testing.B) {
	s := benchStore(b)
	ctx := b.Context()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if err := s.Patch(ctx, "counter", map[string]any{"n": n + 1}, &store.Condition{Field: "n", Value: n}); err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// The floor for the Patch: rewrite a small file in place and fsync it.
func BenchmarkFsync(b *testing.B) {
	f, err := os.Create(newPath(b))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 1024)
	for b.Loop() {
		if _, err := f.WriteAt(data, 0); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
	}
}

// The commit protocol alone, without locking or JSON: new file, write, fsync, rename over the
// data file, fsync the directory.
func BenchmarkFsyncFileAndDir(b *testing.B) {
	path := newPath(b)
	data := make([]byte, 1024)
	for b.Loop() {
		tmp := path + ".tmp"
		f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.Rename(tmp, path); err != nil {
			b.Fatal(err)
		}
		if err := syncDir(filepath.Dir(path)); err != nil {
			b.Fatal(err)
		}
	}
}
