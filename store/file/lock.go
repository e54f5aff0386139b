package file

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"
)

// maxPoll bounds the wait between two attempts to take a lock held by another process, when
// the operation's context can be cancelled (flock(2) itself cannot be).
const maxPoll = 2 * time.Millisecond

// shared runs fn on the current documents, holding a shared lock on the file.
func (s *backend) shared(ctx context.Context, fn func(docs) error) error {
	return s.locked(ctx, false, func(d docs) (docs, error) { return nil, fn(d) })
}

// exclusive runs fn on the current documents, holding an exclusive lock on the file, and
// writes the documents fn returns, unless it returns nil or an error.
func (s *backend) exclusive(ctx context.Context, fn func(docs) (docs, error)) error {
	return s.locked(ctx, true, fn)
}

// locked runs fn under the in-process semaphore and the file's lock, shared or exclusive, and
// writes the documents fn returns, unless it returns nil or an error.
func (s *backend) locked(ctx context.Context, exclusive bool, fn func(docs) (docs, error)) error {
	if err := s.enter(ctx); err != nil {
		return err
	}
	defer s.leave()
	if err := s.lockFile(ctx, exclusive); err != nil {
		return err
	}
	defer s.unlockFile()
	d, err := s.load()
	if err != nil {
		return err
	}
	next, err := fn(d)
	if err != nil || next == nil {
		return err
	}
	return s.write(next)
}

// enter takes the in-process semaphore.
func (s *backend) enter(ctx context.Context) error {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.closed {
		<-s.sem
		return ErrClosed
	}
	return nil
}

func (s *backend) leave() { <-s.sem }

// lockFile takes the flock on the lock file, reopening the lock file first if it was removed
// or replaced since the store opened it: a lock on a file no longer at the path excludes
// nobody.
func (s *backend) lockFile(ctx context.Context, exclusive bool) error {
	for {
		if s.lock == nil {
			f, writable, err := openLockFile(s.lockPath)
			if err != nil {
				return fmt.Errorf("file store %s: lock file: %w", s.path, err)
			}
			s.lock, s.writable = f, writable
		}
		if err := lockWait(ctx, s.lock, exclusive); err != nil {
			return fmt.Errorf("file store %s: lock %s: %w", s.path, s.lockPath, err)
		}
		held, err := s.lock.Stat()
		if err != nil {
			s.unlockFile()
			return fmt.Errorf("file store %s: lock file: %w", s.path, err)
		}
		cur, err := os.Stat(s.lockPath)
		if err == nil && os.SameFile(held, cur) {
			return nil
		}
		s.lock.Close()
		s.lock = nil
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("file store %s: lock file: %w", s.path, err)
		}
	}
}

// unlockFile releases the flock. Should that fail, closing the descriptor releases it.
func (s *backend) unlockFile() {
	if s.lock == nil {
		return
	}
	if err := unlock(s.lock); err != nil {
		s.lock.Close()
		s.lock = nil
	}
}

// lockWait takes the lock, waiting for other processes to release it. With a context that
// cannot be cancelled it blocks in flock(2); otherwise it polls, with a growing interval, so
// that the wait ends when ctx does.
func lockWait(ctx context.Context, f *os.File, exclusive bool) error {
	ok, err := tryLock(f, exclusive)
	if ok || err != nil {
		return err
	}
	if ctx.Done() == nil {
		return blockLock(f, exclusive)
	}
	wait := 20 * time.Microsecond
	t := time.NewTimer(wait)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		if ok, err := tryLock(f, exclusive); ok || err != nil {
			return err
		}
		wait = min(2*wait, maxPoll)
		t.Reset(wait)
	}
}

// readGen returns the write generation kept in the first 8 bytes of the lock file (0 for a
// new lock file).
func readGen(f *os.File) (uint64, error) {
	var b [8]byte
	n, err := f.ReadAt(b[:], 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, err
	}
	if n < len(b) {
		return 0, nil
	}
	var g uint64
	for i := range b {
		g |= uint64(b[i]) << (8 * i)
	}
	return g, nil
}

func writeGen(f *os.File, g uint64) error {
	var b [8]byte
	for i := range b {
		b[i] = byte(g >> (8 * i))
	}
	_, err := f.WriteAt(b[:], 0)
	return err
}
