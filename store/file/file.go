// Package file is a [store.Store] kept in one JSON file, shared safely by the processes of one
// host (rule T6 of docs/design.md).
//
// # Format
//
// The file holds one JSON object mapping each key to its document, one key per line, keys
// sorted:
//
//	{
//	"cluster:leader": {"holder":"web-1","revision":"42"},
//	"other": {"n":1}
//	}
//
// # Safety
//
// Every operation runs under an advisory lock (flock) on the sidecar file "<path>.lock": a
// shared lock for Get, an exclusive one around each read-check-write, so Create and conditional
// Patch and Delete are atomic across processes and goroutines. The lock lives on the sidecar,
// not on the data file, because writes replace the data file: each write goes to a temporary
// file "<path>.tmp-*" in the same directory, which is fsynced, renamed over the data file, and
// the directory is fsynced. A crash at any moment leaves either the old or the new file, never a
// mix; the temporary file of a crashed writer is ignored, and removed by the next Open.
//
// A data file that is not valid JSON (corrupt or truncated, or empty), or not an object of
// objects, is an error wrapping [ErrCorrupt] that names the file (and for syntax errors the byte
// offset); the store never writes over it. Repair or remove the file by hand. Removing it
// removes the lease records in it too, and their terms would restart at 1: once the file is
// moved aside, `leasehold repair --min-term N` recreates a lease's record at the last term N.
// A lease record that is corrupt in a valid file needs `leasehold repair` only.
//
// The operations of one Store run one at a time; those of different processes (or of different
// Stores on one file) take turns through the lock, readers together. An operation waiting for
// another process's lock ends when its context does: with a context that can be cancelled, the
// wait polls the lock at growing intervals of at most 2 ms (flock(2) cannot be interrupted);
// with one that cannot (context.Background), it blocks in flock(2).
//
// The data file is created by the first write, with mode 0666 less the umask; rewrites keep
// the mode it has.
//
// The lock file is created by Open and never removed: do not delete it while stores are open
// (a store that finds its lock file replaced moves to the new one, but a lock held on the old
// one at that moment excludes nobody). Locks are advisory: programs that write the data file
// without taking the lock are not excluded.
//
// Get does not re-read the file when no writer has changed it since this store last read it:
// writers bump a generation counter kept in the lock file, and the store compares it, with the
// data file's identity, size and modification time, to those of the copy it holds.
//
// # URL
//
// Importing the package registers the scheme "file" with [store.Open]:
// "file:///absolute/path/to/file.json" (or "file://localhost/absolute/path..."). A relative
// path, another host, user information, query parameters or a fragment are errors.
//
// # Platforms
//
// The store needs flock(2): it works on Unix systems (Linux is the target). Elsewhere Open
// returns an error.
package file

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

// ErrClosed is returned by operations on a closed store.
var ErrClosed = errors.New("file store: closed")

// Store is a store.Store kept in one JSON file. It is safe for concurrent use by goroutines and
// by processes on the same host.
type Store struct {
	*driver.Portable
	b *backend
}

// backend is the driver.Driver behind Store.
type backend struct {
	path     string // absolute path of the data file
	lockPath string

	// sem is a one-slot semaphore that serializes the store's operations within the process:
	// flock locks belong to the open file, so goroutines sharing it are not excluded by flock.
	// Unlike a sync.Mutex, waiting on it honours the operation's context.
	sem chan struct{}

	// Guarded by sem.
	lock     *os.File // the open lock file
	writable bool     // whether lock was opened for writing (writes need it)
	closed   bool
	cache    snapshot
	mode     os.FileMode // the data file's permissions at the last load (0: no file), kept by rewrites

	watch watchState // the watches' inotify hub (watch_linux.go)
}

// docs maps keys to documents. Documents in a snapshot are never modified in place: writes
// build new maps, so a snapshot can be kept while the next write is prepared.
type docs map[string]map[string]any

// snapshot is the parsed content of the data file, with the identity of the version it was
// read from.
type snapshot struct {
	valid bool
	id    version
	docs  docs
}

// Open opens the store kept in the file at path, creating the lock file "<path>.lock" beside
// it. The directory must exist. The data file is created by the first write; until then the
// store is empty. A relative path is made absolute at Open. Open fails when the data file
// exists and is not valid (see [ErrCorrupt]), and removes the temporary files left by writers
// that crashed. When path is a symbolic link, the store is the file it points to (and the lock
// file sits beside that file).
//
// A process that may read the lock file but not write it gets a store that can be read: its
// writes fail with an error wrapping fs.ErrPermission.
//
// Close the store to release the lock file's descriptor.
func Open(path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("file store: empty path")
	}
	if !supported {
		return nil, errUnsupported
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("file store %s: %w", path, err)
	}
	// Writes replace the data file: through a symbolic link, they would replace the link
	// with a file. Resolve it, so that the link's target is the store's file.
	if fi, err := os.Lstat(abs); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if abs, err = filepath.EvalSymlinks(abs); err != nil {
			return nil, fmt.Errorf("file store %s: %w", path, err)
		}
	}
	dir := filepath.Dir(abs)
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("file store %s: directory: %w", abs, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("file store %s: %s is not a directory", abs, dir)
	}
	if fi, err := os.Stat(abs); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("file store %s: not a regular file (%s)", abs, fi.Mode().Type())
	}
	s := &backend{path: abs, lockPath: abs + ".lock", sem: make(chan struct{}, 1)}
	if s.lock, s.writable, err = openLockFile(s.lockPath); err != nil {
		return nil, fmt.Errorf("file store %s: lock file: %w", abs, err)
	}
	// Validate the file and remove crashed writers' temporary files under the exclusive lock:
	// no live writer has a temporary file then.
	err = s.exclusive(context.Background(), func(d docs) (docs, error) {
		removeStaleTemps(s.path)
		return nil, nil
	})
	if err != nil {
		s.lock.Close()
		return nil, err
	}
	return &Store{Portable: driver.New(s), b: s}, nil
}

// Path returns the absolute path of the data file.
func (s *Store) Path() string { return s.b.path }

// Close releases the store's lock file descriptor, after any operation in progress. Operations
// on a closed store return ErrClosed; closing again does nothing.
func (s *backend) Close() error {
	s.watch.close()
	s.sem <- struct{}{}
	defer func() { <-s.sem }()
	if s.closed {
		return nil
	}
	s.closed = true
	s.cache = snapshot{}
	if err := s.lock.Close(); err != nil {
		return fmt.Errorf("file store %s: close lock file: %w", s.path, err)
	}
	return nil
}

func (s *backend) Get(ctx context.Context, key string) (map[string]any, error) {
	var out map[string]any
	err := s.shared(ctx, func(d docs) error {
		doc, ok := d[key]
		if !ok {
			return store.ErrNotFound
		}
		out = driver.CopyDoc(doc)
		return nil
	})
	return out, err
}

func (s *backend) Create(ctx context.Context, key string, doc map[string]any) error {
	return s.exclusive(ctx, func(d docs) (docs, error) {
		if _, ok := d[key]; ok {
			return nil, store.ErrExists
		}
		return d.with(key, doc), nil
	})
}

func (s *backend) Patch(ctx context.Context, key string, fields map[string]any, cond *driver.Condition) error {
	return s.exclusive(ctx, func(d docs) (docs, error) {
		doc, err := driver.Find(d, key, cond)
		if err != nil {
			return nil, err
		}
		// A shallow copy is enough: stored values are never modified in place.
		patched := make(map[string]any, len(doc)+len(fields))
		for k, v := range doc {
			patched[k] = v
		}
		for k, v := range fields {
			patched[k] = v
		}
		return d.with(key, patched), nil
	})
}

func (s *backend) Delete(ctx context.Context, key string, cond *driver.Condition) error {
	return s.exclusive(ctx, func(d docs) (docs, error) {
		if _, err := driver.Find(d, key, cond); err != nil {
			return nil, err
		}
		out := make(docs, len(d))
		for k, v := range d {
			if k != key {
				out[k] = v
			}
		}
		return out, nil
	})
}

// with returns a copy of d (sharing its documents) with doc stored under key.
func (d docs) with(key string, doc map[string]any) docs {
	out := make(docs, len(d)+1)
	for k, v := range d {
		out[k] = v
	}
	out[key] = doc
	return out
}
