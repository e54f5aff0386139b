package locker

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/leasehold/leasehold/cluster"
	"github.com/leasehold/leasehold/internal/pace"
)

// keyWatch watches the record of a key an Acquire waits for, when the Lock is a
// cluster.Watcher: a release is then taken at once rather than at the next read, R later
// (P8). It only wakes the attempt, which reads the record: the key's record changes only when
// it is taken or released. A watch that fails is opened again R later; one the Lock does not
// support is not, and the attempt reads every R.
type keyWatch struct {
	ch      chan struct{} // receives when a call came
	cancel  context.CancelFunc
	done    chan struct{}
	up      atomic.Bool // established, and not failed since
	stopped sync.Once
}

func startKeyWatch(l *Locker, key string) *keyWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &keyWatch{ch: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			err := l.watcher.Watch(ctx, key, func(_ cluster.Record, err error) {
				if errors.Is(err, cluster.ErrHeartbeat) {
					return
				}
				w.up.Store(true)
				select {
				case w.ch <- struct{}{}:
				default:
				}
			})
			w.up.Store(false)
			if errors.Is(err, cluster.ErrWatchUnsupported) || !pace.Sleep(ctx, l.r) {
				return
			}
		}
	}()
	return w
}

// healthy reports whether the watch is established and has not failed since.
func (w *keyWatch) healthy() bool { return w.up.Load() }

// stop ends the watch and waits for its goroutine.
func (w *keyWatch) stop() {
	w.stopped.Do(func() {
		w.cancel()
		<-w.done
	})
}
