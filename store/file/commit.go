package file

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// testHook, when set (by tests only, before any operation), is called at each stage of a write:
// "temp-synced" (the temporary file is durable, not yet renamed) and "renamed".
var testHook func(stage string)

// load returns the documents of the data file, from the store's copy when the file has not
// changed since it was read. The caller holds the lock.
func (s *backend) load() (docs, error) {
	gen, err := readGen(s.lock)
	if err != nil {
		return nil, fmt.Errorf("file store %s: lock file: %w", s.path, err)
	}
	fi, err := os.Stat(s.path)
	s.mode = 0
	if errors.Is(err, fs.ErrNotExist) {
		if !s.cache.valid || s.cache.id != (version{gen: gen}) {
			s.cache = snapshot{valid: true, id: version{gen: gen}, docs: docs{}}
		}
		return s.cache.docs, nil
	}
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	// A chmod changes no field of the version: take the mode from this stat, not from the copy.
	s.mode = fi.Mode().Perm()
	if s.cache.valid && s.cache.id == versionOf(gen, fi) {
		return s.cache.docs, nil
	}
	s.cache = snapshot{}
	f, err := os.Open(s.path)
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	defer f.Close()
	// The version comes from the descriptor that is read, not from the path stat above.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("file store %s: not a regular file (%s)", s.path, fi.Mode().Type())
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("file store: %w", err)
	}
	d, err := decode(s.path, data)
	if err != nil {
		return nil, err
	}
	s.cache = snapshot{valid: true, id: versionOf(gen, fi), docs: d}
	return d, nil
}

// write replaces the data file with d: temporary file, fsync, rename, fsync of the directory.
// The caller holds the exclusive lock and has just called load.
func (s *backend) write(d docs) error {
	if !s.writable {
		return fmt.Errorf("file store %s: lock file %s is read-only for this process: %w", s.path, s.lockPath, fs.ErrPermission)
	}
	data, err := encode(d)
	if err != nil {
		return fmt.Errorf("file store %s: encode: %w", s.path, err)
	}
	f, err := createTemp(s.path)
	if err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	tmp := f.Name()
	renamed := false
	defer func() {
		f.Close()
		if !renamed {
			os.Remove(tmp)
		}
	}()
	if s.mode != 0 {
		if err := f.Chmod(s.mode); err != nil {
			return fmt.Errorf("file store: %w", err)
		}
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	if testHook != nil {
		testHook("temp-synced")
	}
	// Bump the generation before the rename: a crash between the two costs the other
	// processes one needless re-read, while the other order could leave them trusting a stale
	// copy of a file whose replacement has the same size, time and (reused) inode number.
	gen := s.cache.id.gen + 1
	if err := writeGen(s.lock, gen); err != nil {
		return fmt.Errorf("file store %s: lock file: %w", s.path, err)
	}
	s.cache = snapshot{}
	if err := os.Rename(tmp, s.path); err != nil {
		return fmt.Errorf("file store: %w", err)
	}
	renamed = true
	if testHook != nil {
		testHook("renamed")
	}
	s.cache = snapshot{valid: true, id: versionOf(gen, fi), docs: d}
	if err := syncDir(filepath.Dir(s.path)); err != nil {
		return fmt.Errorf("file store %s: written, but the directory sync failed, so the write may not survive a power loss: %w", s.path, err)
	}
	return nil
}

const tempInfix = ".tmp-"

// createTemp creates a new temporary file beside path. Unlike os.CreateTemp, it lets the umask
// decide the permissions of a new data file (0666 minus the umask), as for any other file.
func createTemp(path string) (*os.File, error) {
	prefix := path + tempInfix + strconv.Itoa(os.Getpid()) + "-"
	for range 10 {
		var b [6]byte
		rand.Read(b[:])
		f, err := os.OpenFile(prefix+hex.EncodeToString(b[:]), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("%s: cannot create a temporary file: too many collisions", path)
}

// removeStaleTemps removes the temporary files of writers that crashed. The caller holds the
// exclusive lock, so no live writer has one. Failures are ignored: a leftover temporary file is
// never read.
func removeStaleTemps(path string) {
	dir, base := filepath.Split(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), base+tempInfix) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		// EINVAL: the file system does not sync directories; there is nothing more to do.
		return err
	}
	return nil
}
