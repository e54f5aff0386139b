//go:build unix

package file

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

const supported = true

var errUnsupported error

// openLockFile opens the lock file, creating it if needed. A lock file that this process may
// read but not write is opened read-only: flock works on it, so the store can still be read.
func openLockFile(path string) (f *os.File, writable bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if errors.Is(err, fs.ErrPermission) {
		if ro, roErr := os.Open(path); roErr == nil {
			return ro, false, nil
		}
	}
	return f, err == nil, err
}

func how(exclusive bool) int {
	if exclusive {
		return syscall.LOCK_EX
	}
	return syscall.LOCK_SH
}

// tryLock takes the lock if no other process holds a conflicting one.
func tryLock(f *os.File, exclusive bool) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), how(exclusive)|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, &os.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
}

// blockLock waits in flock(2) for the lock.
func blockLock(f *os.File, exclusive bool) error {
	for {
		err := syscall.Flock(int(f.Fd()), how(exclusive))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "flock", Path: f.Name(), Err: err}
		}
		return nil
	}
}

func unlock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// versionOf identifies one version of the data file: writers bump gen, and replace the file
// (new inode). The inode alone is not enough, as a freed inode number can be reused at once.
func versionOf(gen uint64, fi os.FileInfo) version {
	v := version{gen: gen, exists: true, size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		v.dev, v.ino = uint64(st.Dev), uint64(st.Ino)
	}
	return v
}
