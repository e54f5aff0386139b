package zookeeper

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/leasehold/leasehold/store"
	"github.com/leasehold/leasehold/store/driver"
)

var _ driver.Watcher = (*backend)(nil)

// Watch implements driver.Watcher (T8 of docs/design.md). A ZooKeeper watch fires once, so
// Watch arms one, reads the record in the same request (GetW, or ExistsW while there is no
// znode), delivers what it read, and when the watch fires arms the next one the same way: a
// write between two watches is seen by the read that arms the second, so none is missed.
//
// The watches stand on a client of their own (watchClient), which is never connected again
// once it has had a session: the library would send its watches again on the new connection,
// racing with its own receiving goroutine (see client). When that client's connection ends,
// the store closes it, which fires its watches with EventNotWatching, and dials another, with
// a new session and no watch; every Watch then arms and reads again on the new client, as a
// watch whose session expired must. Meanwhile, and while no server gives the new client a
// session, the watch is silent and sends no heartbeat. Only the store's Close ends it with an
// error of its own.
//
// Heartbeats (store.WithHeartbeat): every interval, a sync of the record's path on the
// watch's client, whose one connection is the one the watch was armed on. The server answers
// it once it has applied every write the leader had committed when it got the sync, and has
// sent on the connection the notifications those writes fired, before the answer: a heartbeat
// delivered for it means every write made before the sync was sent has been delivered, unless
// a notification is waiting, which is delivered first. A sync not answered within the
// interval is no heartbeat.
func (b *backend) Watch(ctx context.Context, key string, fn func(driver.Notice) error) error {
	p := b.path(key)
	every := store.HeartbeatEvery(ctx)
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		w, err := b.watchClient(ctx)
		if err != nil {
			return fmt.Errorf("store/zookeeper: watch: %w", err)
		}
		n, ch, err := b.arm(ctx, w, p)
		if lostConnection(err) {
			// The connection ended before the answer: arm again on the next client.
			w.lose()
			continue
		}
		if err != nil {
			return err
		}
		if err := fn(n); err != nil {
			return err
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-b.done:
				return fmt.Errorf("store/zookeeper: watch: %w", ErrClosed)
			case <-w.lost:
				break wait
			case ev := <-ch:
				if ev.Type == zk.EventNotWatching {
					// The client was closed: replaced, or the store's Close.
					w.lose()
				}
				break wait
			case <-tick:
				if !b.heartbeat(ctx, w, p, every) {
					continue
				}
				select {
				case <-ch:
					break wait // the change comes first; the next arm delivers it
				case <-w.lost:
					break wait
				default:
				}
				if err := fn(driver.Notice{Heartbeat: true}); err != nil {
					return err
				}
			}
		}
	}
}

// watchClient returns the watches' client once it has a session and the store's credentials,
// dialling a new one when there is none or the last one was lost (and closing that one). It
// waits, however long no server gives the client a session, until ctx ends or Close.
func (b *backend) watchClient(ctx context.Context) (*client, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return nil, ErrClosed
		}
		w := b.watch
		if w == nil || w.isLost() {
			if w != nil {
				b.calls.Go(w.close)
			}
			var err error
			if w, err = b.connect(false); err != nil {
				b.watch = nil
				b.mu.Unlock()
				return nil, err
			}
			b.watch = w
			b.calls.Go(func() { b.ready(w) })
		}
		b.mu.Unlock()
		select {
		case <-w.ready:
			if w.err != nil {
				return nil, w.err
			}
			return w, nil
		case <-w.lost:
			select {
			case <-w.ready:
				if w.err != nil {
					return nil, w.err
				}
			default:
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-b.done:
			return nil, ErrClosed
		}
	}
}

// ready waits for w's session and adds the store's credentials to it: no request is sent on w
// before, so that none of the watches it sets can precede its session.
func (b *backend) ready(w *client) {
	select {
	case <-w.session:
	case <-w.lost:
		return
	case <-b.done:
		return
	}
	if b.user != "" {
		if err := b.auth(w); err != nil {
			if lostConnection(err) {
				w.lose()
			} else {
				w.fail(fmt.Errorf("digest authentication as %q: %w", b.user, err))
			}
			return
		}
	}
	close(w.ready)
}

// lostConnection reports whether err is the library's for a request that a lost connection or
// session, or the client's close, ended, which a new client may serve.
func lostConnection(err error) bool {
	return errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) || errors.Is(err, zk.ErrClosing)
}

// arm sets a watch on p through w and reads it in the same request, after a sync (see read).
func (b *backend) arm(ctx context.Context, w *client, p string) (driver.Notice, <-chan zk.Event, error) {
	var data []byte
	var found bool
	var ch <-chan zk.Event
	err := b.do(ctx, func() error {
		if _, err := w.conn.Sync(p); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		for {
			var err error
			data, _, ch, err = w.conn.GetW(p)
			if err == nil {
				found = true
				return nil
			}
			if !errors.Is(err, zk.ErrNoNode) {
				return err
			}
			// No znode: watch for its creation. Should it have been created since GetW,
			// ExistsW sets a watch on its data instead, and GetW reads it again.
			var exists bool
			exists, _, ch, err = w.conn.ExistsW(p)
			if err != nil || !exists {
				return err
			}
		}
	})
	if err != nil {
		return driver.Notice{}, nil, fmt.Errorf("store/zookeeper: watch: %w", err)
	}
	if !found || len(data) == 0 {
		return driver.Notice{}, ch, nil
	}
	doc, err := decode(data)
	if err != nil {
		return driver.Notice{}, nil, err
	}
	return driver.Notice{Found: true, Doc: doc}, ch, nil
}

// heartbeat syncs p through w within every and reports whether the server answered.
func (b *backend) heartbeat(ctx context.Context, w *client, p string, every time.Duration) bool {
	hctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	err := b.do(hctx, func() error {
		_, err := w.conn.Sync(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	return err == nil
}
