package driver

import (
	"context"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold/store"
)

// Watcher is the optional seam of a driver whose backend can notify changes to a key. The
// Portable store over a driver that does not implement it answers Watch with
// store.ErrWatchUnsupported.
//
// Watch follows store.Watcher's rules (T8), with two differences the Portable store makes up
// for: a driver may deliver a Notice that only says the key changed (Signal), and the Portable
// store then reads the key and delivers what it read; and fn returns an error (that read's),
// which the driver returns from Watch at once, as its own failure.
//
// A driver delivers its first Notice once it will see every later write: subscribe, then read
// (or a Signal, for the Portable store to read).
type Watcher interface {
	Watch(ctx context.Context, key string, fn func(Notice) error) error
}

// Notice is what a driver's watch delivers: the state of the key (Found, Doc, in normalized
// form: decoded JSON), or with Signal set, only that it changed, or with Heartbeat set, only
// that the watch's connection is alive (store.Change.Heartbeat; store.HeartbeatEvery(ctx) is
// the interval asked, 0 for none).
type Notice struct {
	Signal    bool
	Heartbeat bool
	Found     bool
	Doc       map[string]any
}

// Watch implements store.Watcher.
func (p *Portable) Watch(ctx context.Context, key string, fn func(store.Change)) error {
	if err := checkCall(ctx, key); err != nil {
		return WrapKey("watch", key, err)
	}
	if fn == nil {
		return WrapKey("watch", key, fmt.Errorf("%w: nil callback", store.ErrInvalid))
	}
	w, ok := p.d.(Watcher)
	if !ok {
		return WrapKey("watch", key, store.ErrWatchUnsupported)
	}
	err := w.Watch(ctx, key, func(n Notice) error {
		if n.Heartbeat {
			fn(store.Change{Heartbeat: true})
			return nil
		}
		if n.Signal {
			doc, err := p.d.Get(ctx, key)
			switch {
			case err == nil:
				n = Notice{Found: true, Doc: doc}
			case errors.Is(err, store.ErrNotFound):
				n = Notice{}
			default:
				return fmt.Errorf("read after a change notice: %w", err)
			}
		}
		if !n.Found {
			n.Doc = nil
		}
		fn(store.Change{Found: n.Found, Doc: n.Doc})
		return nil
	})
	if err == nil {
		// A driver that returns nil broke the seam's rule; the caller still learns the watch
		// ended.
		err = errors.New("watch ended without an error")
	}
	return WrapKey("watch", key, ContextError(ctx, err))
}
