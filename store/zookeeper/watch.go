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
// The client carries the watches of a session over to a new connection (it sends them again
// with the last transaction it saw, and the server fires those whose znode changed since), but
// gives up a session's watches when the session has expired: the watch's channel then gets
// EventNotWatching. Watch does not rely on the first: whenever the client has a session on a
// new connection, it arms and reads again, so that the watch stands on that connection whatever
// the client did; and on EventNotWatching of an expired session it arms again on the session
// the client opens next. Only the store's Close ends it with an error of its own.
//
// Heartbeats (store.WithHeartbeat): every interval, a sync of the record's path on the
// watch's connection. The server answers it once it has applied every write the leader had
// committed when it got the sync, and has sent on the connection the notifications those writes
// fired, before the answer: a heartbeat delivered for it means every write made before the sync
// was sent has been delivered, unless a notification is waiting, which is delivered first. A
// sync not answered within the interval is no heartbeat; one answered on another connection
// than the watch was armed on is none either (the watch arms again instead).
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
		newSession := b.sessionChanged()
		n, ch, err := b.arm(ctx, p)
		if lostConnection(err) {
			// The client drops the requests it could not send when it has tried every
			// server, and the ones in flight when a connection ends: arm again on its next
			// session. Meanwhile the watch is silent, and sends no heartbeat.
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-b.done:
				return fmt.Errorf("store/zookeeper: watch: %w", ErrClosed)
			case <-newSession:
				continue
			}
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
			case <-newSession:
				break wait
			case ev := <-ch:
				if ev.Type == zk.EventNotWatching && !errors.Is(ev.Err, zk.ErrSessionExpired) {
					return fmt.Errorf("store/zookeeper: watch ended: %w", ev.Err)
				}
				break wait
			case <-tick:
				if !b.heartbeat(ctx, p, every, newSession) {
					continue
				}
				select {
				case <-ch:
					break wait // the change comes first; the next arm delivers it
				case <-newSession:
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

// lostConnection reports whether err is the client's for a request that a lost connection or
// session ended, which a new session may serve.
func lostConnection(err error) bool {
	return errors.Is(err, zk.ErrNoServer) || errors.Is(err, zk.ErrConnectionClosed) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved)
}

// arm sets a watch on p and reads it in the same request, after a sync (see read).
func (b *backend) arm(ctx context.Context, p string) (driver.Notice, <-chan zk.Event, error) {
	var data []byte
	var found bool
	var ch <-chan zk.Event
	err := b.do(ctx, func() error {
		if _, err := b.conn.Sync(p); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		for {
			var err error
			data, _, ch, err = b.conn.GetW(p)
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
			exists, _, ch, err = b.conn.ExistsW(p)
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

// heartbeat syncs p within every and reports whether the server answered on the connection
// the watch was armed on (newSession not closed).
func (b *backend) heartbeat(ctx context.Context, p string, every time.Duration, newSession <-chan struct{}) bool {
	hctx, cancel := context.WithTimeout(ctx, every)
	defer cancel()
	err := b.do(hctx, func() error {
		_, err := b.conn.Sync(p)
		if errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	})
	if err != nil {
		return false
	}
	select {
	case <-newSession:
		return false
	default:
		return true
	}
}
