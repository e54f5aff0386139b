package filewatch

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
)

// instance is one inotify instance and the goroutine reading it.
type instance struct {
	f      *os.File
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// start creates the inotify instance, watches the directory and starts the reader. The watch
// is in place when it returns. The caller holds h.mu.
func (h *Hub) start() (*instance, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("filewatch: inotify_init1: %w", err)
	}
	mask := uint32(syscall.IN_CREATE | syscall.IN_DELETE | syscall.IN_MOVED_TO | syscall.IN_MOVED_FROM |
		syscall.IN_CLOSE_WRITE | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF | syscall.IN_ONLYDIR)
	if h.opts.Modify {
		mask |= syscall.IN_MODIFY
	}
	if _, err := syscall.InotifyAddWatch(fd, h.dir, mask); err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("filewatch: watch %s: %w", h.dir, err)
	}
	// A non-blocking descriptor is served by the runtime's poller, so Close ends a read in
	// progress.
	f := os.NewFile(uintptr(fd), "inotify")
	ctx, cancel := context.WithCancel(context.Background())
	r := &instance{f: f, cancel: cancel, done: make(chan struct{})}
	go r.read(ctx, h)
	return r, nil
}

// stop ends the reader and waits for it.
func (r *instance) stop() {
	r.once.Do(func() {
		r.cancel()
		r.f.Close()
	})
	<-r.done
}

func (r *instance) read(ctx context.Context, h *Hub) {
	defer close(r.done)
	buf := make([]byte, 64*1024)
	for {
		n, err := r.f.Read(buf)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			r.f.Close()
			h.fail(r, fmt.Errorf("filewatch: read inotify events of %s: %w", h.dir, err))
			return
		}
		changed, err := h.parse(buf[:n])
		if err != nil {
			r.f.Close()
			h.fail(r, err)
			return
		}
		if changed {
			h.settle(ctx)
			h.wake(r)
		}
	}
}

// parse reads a batch of events: whether one is about a watched name, or an error when the
// directory itself went away.
func (h *Hub) parse(b []byte) (bool, error) {
	changed := false
	for len(b) >= syscall.SizeofInotifyEvent {
		mask := binary.NativeEndian.Uint32(b[4:8])
		size := int(binary.NativeEndian.Uint32(b[12:16]))
		if len(b) < syscall.SizeofInotifyEvent+size {
			break
		}
		name := b[syscall.SizeofInotifyEvent : syscall.SizeofInotifyEvent+size]
		for len(name) > 0 && name[len(name)-1] == 0 {
			name = name[:len(name)-1]
		}
		b = b[syscall.SizeofInotifyEvent+size:]
		switch {
		case mask&syscall.IN_Q_OVERFLOW != 0:
			changed = true // events were lost: any of them may have been ours
		case mask&(syscall.IN_DELETE_SELF|syscall.IN_MOVE_SELF|syscall.IN_IGNORED|syscall.IN_UNMOUNT) != 0:
			return false, fmt.Errorf("filewatch: %s: %w", h.dir, errGone)
		case h.names[string(name)]:
			changed = true
		}
	}
	return changed, nil
}

var errGone = errors.New("the directory was removed, moved or unmounted")
